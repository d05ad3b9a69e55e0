"""transformers' own tqdm bars ("Loading weights" on every ``from_pretrained``, "Writing model
shards" on every save) switched off for the process: they leaked into ``assay run``'s tables and
into flow-run logs. Assay shows its own progress (:mod:`assay.progress`)."""

from __future__ import annotations

from transformers.utils import logging as transformers_logging


def silence() -> None:
    transformers_logging.disable_progress_bar()
