"""Prefect flows: orchestration only. Tasks pass paths, ids and digests, never DataFrames.

Importing the flow layer does nothing else: what a flow needs in its process (the flow-run id on
every run row, the announcement of checkpoints it registers) each flow installs when it starts
running (:mod:`.hooks`). A job's steps become tasks through one adapter (:mod:`.step_tasks`).

``__all__`` names its public modules; the package itself imports none of them.
"""

__all__ = [
    "baseline", "checkpoint_eval", "drift", "engine", "evaluate", "events", "hooks", "ingest", "main_job", "nightly",
    "report", "rerun", "retry_policy", "robustness", "score", "select", "step_tasks", "sweep", "synthesize", "train",
]
