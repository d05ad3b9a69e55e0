"""The ``rerun`` flow: plan the rerun of a past run (pinned data, identical signature), recompute it
with the past run's own flow (``score`` or ``evaluate``) as a subflow, record it. Logic in
:mod:`assay.jobs.reruns`."""

from __future__ import annotations

from typing import Any

from prefect import flow, task

from assay.flows.evaluate import evaluate_flow
from assay.flows.score import score_flow
from assay.jobs import reruns


@task(name="plan-rerun", task_run_name="plan rerun of {run_id}")
def plan_task(run_id: str) -> dict[str, Any]:
    return reruns.plan_rerun(run_id).as_dict()


@task(name="record-rerun")
def record_task(plan: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    return reruns.record_rerun(reruns.RerunPlan.from_dict(plan), result)


@flow(name="rerun")
def rerun_flow(run_id: str) -> dict[str, Any]:
    plan = plan_task(run_id)
    p = plan["parameters"]
    if plan["kind"] == "score":
        result = score_flow(plan["dataset"], p["metric"], scope=p["scope"], shard_size=p["shard_size"],
                            progress=False, allow_languages=bool(p.get("allow_languages", False)),
                            plan=plan["score_plan"])
    else:
        result = evaluate_flow(plan["dataset"], level=p["level"], metrics=p["metrics"], statistics=p["statistics"],
                               seed=p["seed"], n_resamples=p["n_resamples"], protocol=p["protocol"])
    return record_task(plan, result)
