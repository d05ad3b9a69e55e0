"""The ``rerun`` flow: plan the rerun of a past run (pinned data, identical signature), recompute it
with the past run's own flow (``score`` or ``evaluate``) as a subflow, record it. The order of the
steps is :func:`assay.jobs.reruns.run_rerun`'s; this flow hands it the job's steps
(:class:`assay.jobs.reruns.RerunSteps`) with plan and record as tasks (:data:`RERUN_TASKS`) and the
recompute as subflows."""

from __future__ import annotations

from typing import Any

from prefect import flow

from assay.config import load_settings
from assay.flows.evaluate import evaluate_flow
from assay.flows.hooks import install_flow_hooks
from assay.flows.score import score_flow
from assay.flows.step_tasks import as_tasks
from assay.jobs import reruns

#: the steps of :class:`assay.jobs.reruns.RerunSteps` that run as tasks
RERUN_TASKS: dict[str, dict[str, Any]] = {
    "plan": {"name": "plan-rerun", "task_run_name": "plan rerun of {run_id}"},
    "record": {"name": "record-rerun"},
}


def _score(arguments: dict[str, Any]) -> dict[str, Any]:
    """The recompute of a score run: the ``score`` flow, computing the plan the rerun checked."""
    return score_flow(**arguments, progress=False)


def _evaluate(arguments: dict[str, Any]) -> dict[str, Any]:
    """The recompute of an evaluate run: the ``evaluate`` flow."""
    return evaluate_flow(**arguments)


@flow(name="rerun", on_running=[install_flow_hooks])
def rerun_flow(run_id: str) -> dict[str, Any]:
    steps = as_tasks(reruns.RerunSteps(load_settings()), RERUN_TASKS,
                     subflows={"score": _score, "evaluate": _evaluate})
    return reruns.run_rerun(run_id, steps)
