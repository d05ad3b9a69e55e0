"""Data-versioned reruns: recompute a past run against exactly what it used.

A score run is recomputed against its pinned dataset version (by digest) with the metric spec it
recorded; the signature must come out identical (same model digest, same library versions), else
the rerun stops and says what changed. Cached segment scores are reused, so a rerun computes
only what is missing. An evaluate run is recomputed with its recorded level, statistics, seed and
resamples against the same dataset version. Every rerun writes a new run whose parent is the old
one; the old run and its results stay as they were.
"""

from __future__ import annotations

from typing import Any

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import Run
from assay.config import Settings, load_settings
from assay.errors import NotFoundError, UsageError
from assay.evaluation import evaluate
from assay.metrics.registry import MetricSpec, create_metric
from assay.scoring import finish_scoring, plan_scoring, scope_rows, scoped_signature, score_shard


def rerun(run_id: str, settings: Settings | None = None) -> dict[str, Any]:
    settings = settings or load_settings()
    with session_scope(settings) as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"no run {run_id!r} in the catalog")
        kind, inputs, parameters = run.kind, dict(run.inputs), dict(run.parameters)
    pinned = f"{inputs['dataset']}@{inputs['dataset_digest']}"
    if kind == "score":
        spec = MetricSpec.from_dict(parameters["metric"])
        with session_scope(settings) as session:
            store_path = resolve(session, pinned).store_path
        signature = scoped_signature(create_metric(spec), scope_rows(settings, store_path, parameters["scope"]))
        recorded = inputs["signature"]
        if signature != recorded:
            raise UsageError(f"cannot rerun {run_id} exactly: the metric's signature is now\n  {signature}\n"
                             f"but the run used\n  {recorded}\n(install the recorded versions or the checkpoint)")
        plan = plan_scoring(pinned, spec, scope=parameters["scope"], shard_size=parameters["shard_size"],
                            settings=settings)
        parts = [score_shard(plan, i, settings) for i in range(len(plan.shards))]
        result = finish_scoring(plan, parts, settings)
    elif kind == "evaluate":
        result = evaluate(pinned, level=parameters["level"], metrics=inputs.get("signatures"),
                          statistics=parameters["statistics"], seed=parameters["seed"],
                          n_resamples=parameters["n_resamples"], protocol=parameters["protocol"], settings=settings)
    else:
        raise UsageError(f"run {run_id} is a {kind} run; only score and evaluate runs can be rerun")
    with session_scope(settings) as session:
        new = session.get(Run, result["run_id"])
        if new is not None:
            new.parent_run_id = run_id
    return {"kind": kind, "parent_run_id": run_id, **result}
