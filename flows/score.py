"""The ``score`` flow: plan against the cache, record the run when there is something to compute,
score the missing segments shard by shard (each task writes its own immutable Parquet part), close
the run. Logic lives in :mod:`assay.jobs.scoring`; tasks pass plans (ids, digests and paths), never
tables. The sequence, the lock, the progress bar and the error handling are the platform's runner
(:func:`assay.jobs.scoring.compute_plan`); this flow hands it the job's steps
(:class:`assay.jobs.scoring.ScoringSteps`) as tasks (:data:`SCORING_TASKS`).
A plan with nothing to compute is the answer: no run, no lock, no further task. A caller that has
planned already (``assay score``, a rerun) hands its plan on and the flow does not plan again.

Exactly once: the runner holds the signature lock (:func:`assay.jobs.scoring.signature_lock_for`) from
the re-plan to the recorded run. Tasks run in the flow's process, so the lock taken in the flow
body covers them all; a killed flow's lock is released by the OS or the catalog server, and the
next request for the signature marks its run crashed and resumes from its parts
(:func:`assay.jobs.scoring.resume_plan`).

Retries: the tasks that read or write the catalog retry a transient failure (a dropped catalog
connection: :func:`assay.transient.is_transient`) through Prefect's ``retries`` and
``retry_condition_fn`` (Prefect 3 docs, "Tasks: retries"); bad input fails at once. They are
safe to repeat: planning writes only fresh work files, a re-plan is idempotent and starting or
closing a run finds its own row. Scoring a shard touches no catalog and is not retried: a retry
after its part was written would store its rows twice.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from assay.config import load_settings
from assay.flows.hooks import install_flow_hooks
from assay.flows.retry_policy import RETRY_TRANSIENT
from assay.flows.step_tasks import as_tasks
from assay.jobs import scoring
from assay.metrics.registry import MetricSpec

#: each step of :class:`assay.jobs.scoring.ScoringSteps` as a task: resume runs under the signature
#: lock (closes crashed runs of the signature, drops keys stored meanwhile)
SCORING_TASKS: dict[str, dict[str, Any]] = {
    "plan": {"name": "plan-scoring", **RETRY_TRANSIENT},
    "resume": {"name": "resume-scoring-plan", **RETRY_TRANSIENT},
    "start": {"name": "start-scoring-run", **RETRY_TRANSIENT},
    "score_shard": {"name": "score-shard", "task_run_name": "score shard {shard}"},
    "finish": {"name": "record-scoring-run", **RETRY_TRANSIENT},
}


@flow(name="score", on_running=[install_flow_hooks])
def score_flow(
    dataset: str, metric: dict[str, Any], scope: str = "judged", shard_size: int = 4000, progress: bool = True,
    allow_languages: bool = False, plan: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score every not-yet-scored segment of a dataset version with one metric. ``plan``: the plan the
    caller already made for this request (``ScorePlan.as_dict``); it is not made again."""
    settings = load_settings()
    return scoring.score_dataset(dataset, MetricSpec.from_dict(metric), scope=scope, shard_size=shard_size,
                                 allow_languages=allow_languages, settings=settings,
                                 steps=as_tasks(scoring.ScoringSteps(settings), SCORING_TASKS), progress=progress,
                                 plan=scoring.ScorePlan.from_dict(plan) if plan is not None else None)
