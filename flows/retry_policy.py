"""When a task is retried: transient infrastructure errors only (a dropped catalog connection, a
network hiccup), never bad input, which fails the same way every time.

Prefect 3 tasks take ``retries`` and a ``retry_condition_fn(task, task_run, state) -> bool``; the
classification itself is the platform's (:func:`assay.transient.is_transient`).
"""

from __future__ import annotations

from typing import Any

from assay.transient import is_transient

#: retries of a task whose failure is transient; the delays grow (seconds)
TRANSIENT_RETRIES = 2
TRANSIENT_RETRY_DELAYS = [2, 10]


def retry_transient(_task: Any, _task_run: Any, state: Any) -> bool:
    """Prefect's retry condition: retry when the task's exception is transient."""
    try:
        state.result()
    except Exception as exc:
        return is_transient(exc)
    return False


#: Prefect task options of every task that talks to the catalog or the server: ``@task(**RETRY_TRANSIENT)``
RETRY_TRANSIENT: dict[str, Any] = {"retries": TRANSIENT_RETRIES, "retry_delay_seconds": TRANSIENT_RETRY_DELAYS,
                                   "retry_condition_fn": retry_transient}
