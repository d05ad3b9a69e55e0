"""The ``quality-drift`` flow: BLEURT's robustness-to-quality-drift benchmark (Sellam et al., 2020,
§5.2, appendix B.3). Draw and store the skewed train/test samples of every α, score each test
sample with each metric (cached segment scores are reused), evaluate each test sample at segment
level, record the run. Logic lives in :mod:`assay.jobs.quality_drift`, whose runner this flow hands
the job's steps (:class:`assay.jobs.quality_drift.DriftSteps`) as tasks (:data:`DRIFT_TASKS`); tasks
pass samples, specs and rows, never tables."""

from __future__ import annotations

from typing import Any

from prefect import flow

from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED, load_settings
from assay.flows.hooks import install_flow_hooks
from assay.flows.step_tasks import as_tasks
from assay.jobs import quality_drift as qd
from assay.metrics.registry import MetricSpec

#: each step of :class:`assay.jobs.quality_drift.DriftSteps` as a task
DRIFT_TASKS: dict[str, dict[str, Any]] = {
    "draw": {"name": "draw-drift-samples", "task_run_name": "draw drift samples of {dataset}"},
    "score": {"name": "score-drift-sample", "task_run_name": "score {label}"},
    "evaluate": {"name": "evaluate-drift-sample", "task_run_name": "evaluate {test.label}"},
    "record": {"name": "record-drift-run"},
}


@flow(name="quality-drift", on_running=[install_flow_hooks])
def quality_drift_flow(
    dataset: str,
    metrics: list[dict[str, Any]],
    alphas: list[float] | None = None,
    seed: int = DEFAULT_SEED,
    statistic: str = "kendall",
    n_resamples: int = DEFAULT_RESAMPLES,
    test_fraction: float = 0.5,
    binning: str = "quantile",
) -> list[dict[str, Any]]:
    """Rows as :func:`assay.jobs.quality_drift.run_quality_drift` returns them (one per α, metric, group):
    the same runner, with this flow's tasks as its steps."""
    settings = load_settings()
    return qd.run_quality_drift(dataset, [MetricSpec.from_dict(m) for m in metrics],
                                alphas=alphas if alphas is not None else qd.ALPHAS, seed=seed, statistic=statistic,
                                n_resamples=n_resamples, test_fraction=test_fraction, binning=binning,
                                settings=settings, steps=as_tasks(qd.DriftSteps(settings), DRIFT_TASKS))
