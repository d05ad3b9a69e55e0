"""transformers' own tqdm bars ("Loading weights" on every ``from_pretrained``, "Writing model
shards" on every save) switched off for the process: they leaked into ``assay run``'s tables and
into flow-run logs. Assay shows its own progress (:mod:`assay.progress`).

Also dropped: EarlyStoppingCallback's warning that ``load_best_model_at_end`` is off, printed at the
start of every stage with a patience. It is off on purpose (the trainer's recorder keeps the best
validation step's weights itself, :mod:`assay.workers.training.engine`), so the line only misleads.
"""

from __future__ import annotations

import logging

from transformers.utils import logging as transformers_logging

_EARLY_STOPPING_NOTICE = "Using EarlyStoppingCallback without load_best_model_at_end"


class _DropEarlyStoppingNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_EARLY_STOPPING_NOTICE)


def silence() -> None:
    transformers_logging.disable_progress_bar()
    callback_logger = logging.getLogger("transformers.trainer_callback")
    if not any(isinstance(f, _DropEarlyStoppingNotice) for f in callback_logger.filters):
        callback_logger.addFilter(_DropEarlyStoppingNotice())
