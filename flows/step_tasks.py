"""A job's steps as Prefect tasks: one adapter for every job.

A job declares its steps once, as a class whose methods run them in this process
(:class:`assay.jobs.scoring.ScoringSteps`, :class:`assay.jobs.quality_drift.DriftSteps`, ...), and orders
them in one runner (:func:`assay.jobs.scoring.compute_plan`, :func:`assay.jobs.quality_drift.run_quality_drift`,
...). A flow hands that runner the same object with some of its methods wrapped as Prefect tasks::

    steps = as_tasks(ScoringSteps(settings), {"plan": {"name": "plan-scoring", **RETRY_TRANSIENT}, ...})

Each named method becomes a :class:`prefect.Task` with the options given for it (``name``,
``task_run_name``, ``retries`` and ``retry_condition_fn``, e.g.
:data:`assay.flows.retry_policy.RETRY_TRANSIENT`; Prefect 3 docs, "Tasks"), so every call of that
step is one task run. ``subflows`` runs a step as another flow instead (a rerun's recompute, a
recipe's stages); a step named in neither runs as the plain method.

Tasks run in the flow's process (Prefect 3's default task runner; Assay sets no other, and
persists no task results), so arguments and results cross the task boundary as they are, plans as
dataclasses, with no JSON in between; a ``task_run_name`` template formats the call's arguments,
attributes included (``"{plan.stage} {plan.name}"``). Only a flow's own parameters travel as JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from prefect import Task

S = TypeVar("S")


class _StepTasks:
    """The steps object seen through its tasks and subflows: a step named there is called there,
    any other attribute is the steps object's own."""

    def __init__(self, steps: object, calls: dict[str, Callable[..., Any]]) -> None:
        self._steps = steps
        self._calls = calls

    def __getattr__(self, name: str) -> Any:
        call = self.__dict__["_calls"].get(name)
        return call if call is not None else getattr(self.__dict__["_steps"], name)

    def __repr__(self) -> str:
        return f"as_tasks({self._steps!r}, {sorted(self._calls)})"


def as_tasks(steps: S, tasks: Mapping[str, Mapping[str, Any]], *,
             subflows: Mapping[str, Callable[..., Any]] | None = None) -> S:
    """``steps`` with each method named in ``tasks`` called as a Prefect task made with those
    options (``{"plan": {"name": "plan-scoring", **RETRY_TRANSIENT}}``), and each named in
    ``subflows`` replaced by that flow (called with the step's arguments). Typed as ``steps``: the
    job's runner takes it where it takes the in-process steps.

    Raises ``TypeError`` for a name that is not a public method of ``steps``, or that is in both."""
    subflows = dict(subflows or {})
    for name in (*tasks, *subflows):
        if name.startswith("_") or not callable(getattr(steps, name, None)):
            raise TypeError(f"{type(steps).__name__} has no step {name!r}")
    if both := sorted(set(tasks) & set(subflows)):
        raise TypeError(f"{type(steps).__name__}: {', '.join(both)} cannot be both a task and a subflow")
    calls: dict[str, Callable[..., Any]] = {name: Task(getattr(steps, name), **options)
                                            for name, options in tasks.items()}
    return cast(S, _StepTasks(steps, {**calls, **subflows}))
