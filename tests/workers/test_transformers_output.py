"""transformers' own output that misleads a user of Assay is silenced (issue 18: nothing but Assay's
progress in a terminal or a flow-run log)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from transformers import EarlyStoppingCallback
from transformers.trainer_callback import logger as callback_logger

from assay.workers.transformers_bars import silence


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_the_early_stopping_notice_is_dropped_and_other_warnings_are_kept() -> None:
    collect = _Collect()
    root = logging.getLogger("transformers")
    root.addHandler(collect)
    try:
        silence()
        silence()  # idempotent: one filter, however many modules call it
        args = SimpleNamespace(load_best_model_at_end=False, metric_for_best_model="eval_kendall_tau",
                               eval_strategy="steps")
        # the engine keeps the best validation step itself, so this notice only misleads
        EarlyStoppingCallback(early_stopping_patience=2).on_train_begin(args, None, None)
        callback_logger.warning("another warning from the callbacks")
    finally:
        root.removeHandler(collect)
    assert collect.messages == ["another warning from the callbacks"]
    assert sum(type(f).__name__ == "_DropEarlyStoppingNotice" for f in callback_logger.filters) == 1
