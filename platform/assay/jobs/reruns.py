"""Data-versioned reruns: recompute a past run against exactly what it used.

A rerun is a job like any other, *plan -> compute -> record*:

- **plan** (:func:`plan_rerun`) reads the past run and pins its dataset version by digest. For a
  score run it plans the same request and checks that the metric's signature comes out identical
  (same model digest, same library versions, same scored set); if not, it stops and says what
  changed, so a corrected dataset or a new model never silently stands in for the old one. That
  scoring plan travels with the rerun plan and is computed as it is, never planned again.
- **compute** is the past run's own job with its recorded parameters: scoring (which reuses
  cached segment scores, so it computes only what is missing) or evaluation (same level,
  statistics, seed and resamples). The flow layer runs it as the ``score`` or ``evaluate`` flow.
- **record** (:func:`record_rerun`) writes a ``rerun`` run whose parent is the past run, links the
  recomputing run (when one was needed) to the same parent, and leaves the old run and its
  results as they were.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from assay.catalog.engine import session_scope
from assay.catalog.models import Run
from assay.config import Settings, load_settings
from assay.datasets.names import VersionRef
from assay.errors import NotFoundError, UsageError
from assay.jobs.evaluation import evaluate
from assay.jobs.runs import RunRecorder, inputs_version, version_inputs
from assay.jobs.scoring import ScorePlan, discard, plan_scoring, score_dataset
from assay.metrics.registry import MetricSpec

RERUNNABLE = ("score", "evaluate")


@dataclass(frozen=True)
class RerunPlan:
    parent_run_id: str
    kind: str
    version: VersionRef
    """The past run's dataset version."""
    parameters: dict[str, Any]
    """The past run's recorded parameters (for evaluate, ``metrics`` are its exact signatures)."""
    score_plan: dict[str, Any] | None = field(default=None)
    """For a score run: the scoring plan (``ScorePlan.as_dict``) whose signature was checked; the
    recompute computes it (the ``score`` flow's ``plan``)."""

    @property
    def dataset(self) -> str:
        """The past run's dataset version pinned by digest (``name@digest``, :attr:`VersionRef.pinned`),
        as the recomputing job resolves it."""
        return self.version.pinned

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON: the fields, ``version`` as :meth:`VersionRef.as_dict`."""
        return {**asdict(self), "version": self.version.as_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RerunPlan:
        return cls(**{**data, "version": VersionRef.from_dict(data["version"])})


def plan_rerun(run_id: str, settings: Settings | None = None) -> RerunPlan:
    settings = settings or load_settings()
    with session_scope(settings) as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"no run {run_id!r} in the catalog (see `assay runs` or the report's run list)")
        kind, inputs, parameters = run.kind, dict(run.inputs), dict(run.parameters)
    if kind not in RERUNNABLE:
        raise UsageError(f"run {run_id} is a {kind} run; only {' and '.join(RERUNNABLE)} runs can be rerun")
    version = inputs_version(inputs)
    if kind == "score":
        plan = plan_scoring(version.pinned, MetricSpec.from_dict(parameters["metric"]), scope=parameters["scope"],
                            shard_size=parameters["shard_size"],
                            allow_languages=bool(parameters.get("allow_languages", False)), settings=settings)
        if plan.signature != inputs["signature"]:
            discard(plan)
            raise UsageError(f"cannot rerun {run_id} exactly: the metric's signature is now\n  {plan.signature}\n"
                             f"but the run used\n  {inputs['signature']}\n"
                             "(install the recorded versions, or restore the checkpoint it used)")
        return RerunPlan(run_id, kind, version, parameters, plan.as_dict())
    parameters = {**parameters, "metrics": list(inputs.get("signatures") or [])}
    return RerunPlan(run_id, kind, version, parameters)


def record_rerun(plan: RerunPlan, result: dict[str, Any], settings: Settings | None = None) -> dict[str, Any]:
    """Record the rerun (parent: the past run) and link the recomputing run, if any, to the same parent."""
    settings = settings or load_settings()
    child = result.get("run_id")
    if child:
        with session_scope(settings) as session:
            run = session.get(Run, child)
            if run is not None:
                run.parent_run_id = plan.parent_run_id
    recorder = RunRecorder(settings, "rerun", version_inputs(plan.version, run=plan.parent_run_id),
                           {"kind": plan.kind, **plan.parameters}, parent_run_id=plan.parent_run_id)
    summary = {"recomputed_by": child, "computed": result.get("computed"), "cached": result.get("cached"),
               "signature": result.get("signature")}
    recorder.record({k: v for k, v in summary.items() if v is not None})
    return {"kind": plan.kind, "parent_run_id": plan.parent_run_id, "rerun_id": recorder.run_id, **result}


def score_arguments(plan: RerunPlan) -> dict[str, Any]:
    """The past score run's request, as :func:`assay.jobs.scoring.score_dataset` (and the ``score``
    flow) take it: the pinned version, the metric, its recorded parameters and the checked plan."""
    p = plan.parameters
    return {"dataset": plan.dataset, "metric": p["metric"], "scope": p["scope"], "shard_size": p["shard_size"],
            "allow_languages": bool(p.get("allow_languages", False)), "plan": plan.score_plan}


def evaluate_arguments(plan: RerunPlan) -> dict[str, Any]:
    """The past evaluate run's request, as :func:`assay.jobs.evaluation.evaluate` (and the
    ``evaluate`` flow) take it: the pinned version and its recorded level, signatures, statistics,
    seed, resamples and protocol."""
    p = plan.parameters
    protocol_settings: dict[str, Any] = {k: p[k] for k in ("n_permutations", "permutation_seed", "all_submissions")
                                         if k in p}
    if "n_permutations" in p and "permutation_seed" not in p:  # WMT24 runs recorded before the seeds were apart
        protocol_settings["permutation_seed"] = p["seed"]
    return {"dataset": plan.dataset, "level": p["level"], "metrics": p["metrics"], "statistics": p["statistics"],
            "seed": p["seed"], "n_resamples": p["n_resamples"], "protocol": p["protocol"], **protocol_settings}


@dataclass(frozen=True)
class RerunSteps:
    """The steps of a rerun, declared once: each runs in this process, against ``settings``; the
    ``rerun`` flow hands :func:`run_rerun` the same object with ``plan`` and ``record`` as Prefect
    tasks and the recompute as the past run's own flow (:func:`assay.flows.step_tasks.as_tasks`)."""

    settings: Settings

    def plan(self, run_id: str) -> RerunPlan:
        return plan_rerun(run_id, self.settings)

    def score(self, arguments: dict[str, Any]) -> dict[str, Any]:
        a = arguments
        return score_dataset(a["dataset"], MetricSpec.from_dict(a["metric"]), scope=a["scope"],
                             shard_size=a["shard_size"], allow_languages=a["allow_languages"], settings=self.settings,
                             plan=ScorePlan.from_dict(a["plan"]) if a["plan"] else None)

    def evaluate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return evaluate(**arguments, settings=self.settings)

    def record(self, plan: RerunPlan, result: dict[str, Any]) -> dict[str, Any]:
        return record_rerun(plan, result, self.settings)


def run_rerun(run_id: str, steps: RerunSteps) -> dict[str, Any]:
    """The one orchestration of a rerun: plan, recompute with the past run's own job, record."""
    plan = steps.plan(run_id)
    result = steps.score(score_arguments(plan)) if plan.kind == "score" else steps.evaluate(evaluate_arguments(plan))
    return steps.record(plan, result)


def rerun(run_id: str, settings: Settings | None = None) -> dict[str, Any]:
    """Plan, recompute and record a rerun in this process (the ``rerun`` flow runs the same steps)."""
    return run_rerun(run_id, RerunSteps(settings or load_settings()))
