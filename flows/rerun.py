"""The ``rerun`` flow: plan the rerun of a past run (pinned data, identical signature), recompute it
with the past run's own flow (``score`` or ``evaluate``) as a subflow, record it. The order of the
steps is :func:`assay.jobs.reruns.run_rerun`'s; this flow hands it its tasks and subflows."""

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


class FlowSteps:
    """The rerun's steps as Prefect tasks, the recompute as the past run's own flow."""

    def plan(self, run_id: str) -> reruns.RerunPlan:
        return reruns.RerunPlan.from_dict(plan_task(run_id))

    def score(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return score_flow(**arguments, progress=False)

    def evaluate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return evaluate_flow(**arguments)

    def record(self, plan: reruns.RerunPlan, result: dict[str, Any]) -> dict[str, Any]:
        return record_task(plan.as_dict(), result)


@flow(name="rerun")
def rerun_flow(run_id: str) -> dict[str, Any]:
    return reruns.run_rerun(run_id, FlowSteps())
