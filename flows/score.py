"""The ``score`` flow: plan against the cache, record the run when there is something to compute,
score the missing segments shard by shard (each task writes its own immutable Parquet part), close
the run. Logic lives in :mod:`assay.jobs.scoring`; tasks pass plans (ids, digests and paths), never
tables. The sequence, the lock, the progress bar and the error handling are the platform's runner
(:func:`assay.jobs.scoring.compute_plan`); this flow hands it its steps as tasks (:class:`TaskSteps`).
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

from prefect import flow, task

from assay.flows.retry_policy import RETRY_TRANSIENT
from assay.jobs import scoring
from assay.metrics.registry import MetricSpec


@task(name="plan-scoring", **RETRY_TRANSIENT)
def plan_task(dataset: str, metric: dict[str, Any], scope: str, shard_size: int,
              allow_languages: bool) -> dict[str, Any]:
    return scoring.plan_scoring(dataset, MetricSpec.from_dict(metric), scope=scope, shard_size=shard_size,
                                allow_languages=allow_languages).as_dict()


@task(name="resume-scoring-plan", **RETRY_TRANSIENT)
def resume_task(plan: dict[str, Any]) -> dict[str, Any]:
    """Under the signature lock: close crashed runs of the signature, drop keys stored meanwhile."""
    return scoring.resume_plan(scoring.ScorePlan.from_dict(plan)).as_dict()


@task(name="start-scoring-run", **RETRY_TRANSIENT)
def start_task(plan: dict[str, Any]) -> dict[str, Any]:
    return scoring.start_scoring(scoring.ScorePlan.from_dict(plan)).as_dict()


@task(name="score-shard", task_run_name="score shard {shard}")
def score_shard_task(plan: dict[str, Any], shard: int) -> dict[str, Any]:
    return scoring.score_shard(scoring.ScorePlan.from_dict(plan), shard)


@task(name="record-scoring-run", **RETRY_TRANSIENT)
def finish_task(plan: dict[str, Any], parts: list[dict[str, Any]], error: str | None = None) -> dict[str, Any]:
    return scoring.finish_scoring(scoring.ScorePlan.from_dict(plan), parts, error=error)


class TaskSteps:
    """The scoring steps as this module's tasks, for :func:`assay.jobs.scoring.compute_plan` (plans travel
    between tasks as JSON)."""

    def plan(self, dataset: str, spec: MetricSpec, scope: str, shard_size: int,
             allow_languages: bool) -> scoring.ScorePlan:
        return scoring.ScorePlan.from_dict(plan_task(dataset, spec.as_dict(), scope, shard_size, allow_languages))

    def resume(self, plan: scoring.ScorePlan) -> scoring.ScorePlan:
        return scoring.ScorePlan.from_dict(resume_task(plan.as_dict()))

    def start(self, plan: scoring.ScorePlan) -> scoring.ScorePlan:
        return scoring.ScorePlan.from_dict(start_task(plan.as_dict()))

    def score_shard(self, plan: scoring.ScorePlan, shard: int) -> dict[str, Any]:
        return score_shard_task(plan.as_dict(), shard)

    def finish(self, plan: scoring.ScorePlan, parts: list[dict[str, Any]], error: str | None = None) -> dict[str, Any]:
        return finish_task(plan.as_dict(), parts, error=error)


@flow(name="score")
def score_flow(
    dataset: str, metric: dict[str, Any], scope: str = "judged", shard_size: int = 4000, progress: bool = True,
    allow_languages: bool = False, plan: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score every not-yet-scored segment of a dataset version with one metric. ``plan``: the plan the
    caller already made for this request (``ScorePlan.as_dict``); it is not made again."""
    return scoring.score_dataset(dataset, MetricSpec.from_dict(metric), scope=scope, shard_size=shard_size,
                                 allow_languages=allow_languages, steps=TaskSteps(), progress=progress,
                                 plan=scoring.ScorePlan.from_dict(plan) if plan is not None else None)
