"""The ``score`` flow: plan against the cache, record the run when there is something to compute,
score the missing segments shard by shard (each task writes its own immutable Parquet part), close
the run. Logic lives in :mod:`assay.scoring`; tasks pass plans (ids, digests and paths), never
tables. A plan with nothing to compute is the answer: no run, no further task."""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from tqdm.auto import tqdm

from assay import scoring
from assay.metrics.registry import MetricSpec


@task(name="plan-scoring")
def plan_task(dataset: str, metric: dict[str, Any], scope: str, shard_size: int,
              allow_languages: bool) -> dict[str, Any]:
    return scoring.plan_scoring(dataset, MetricSpec.from_dict(metric), scope=scope, shard_size=shard_size,
                                allow_languages=allow_languages).as_dict()


@task(name="start-scoring-run")
def start_task(plan: dict[str, Any]) -> dict[str, Any]:
    return scoring.start_scoring(scoring.ScorePlan.from_dict(plan)).as_dict()


@task(name="score-shard", task_run_name="score shard {shard}")
def score_shard_task(plan: dict[str, Any], shard: int) -> dict[str, Any]:
    return scoring.score_shard(scoring.ScorePlan.from_dict(plan), shard)


@task(name="record-scoring-run")
def finish_task(plan: dict[str, Any], parts: list[dict[str, Any]], error: str | None = None) -> dict[str, Any]:
    return scoring.finish_scoring(scoring.ScorePlan.from_dict(plan), parts, error=error)


@flow(name="score")
def score_flow(
    dataset: str, metric: dict[str, Any], scope: str = "judged", shard_size: int = 4000, progress: bool = True,
    allow_languages: bool = False,
) -> dict[str, Any]:
    """Score every not-yet-scored segment of a dataset version with one metric."""
    plan = plan_task(dataset, metric, scope, shard_size, allow_languages)
    shards = plan["shards"]
    if not shards:
        return scoring.finish_scoring(scoring.ScorePlan.from_dict(plan), [])
    plan = start_task(plan)
    parts: list[dict[str, Any]] = []
    try:
        # one bar in segments over the shards; a model-based metric shows its own bar within a shard
        with tqdm(total=sum(end - start for start, end in shards), desc=f"scoring {plan['metric_name']}",
                  unit="seg", disable=not progress) as bar:
            for shard in range(len(shards)):
                parts.append(score_shard_task(plan, shard))
                bar.update(parts[-1]["rows"])
    except BaseException as exc:
        finish_task(plan, parts, error=f"{type(exc).__name__}: {exc}")
        raise
    return finish_task(plan, parts)
