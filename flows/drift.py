"""The ``quality-drift`` flow: BLEURT's robustness-to-quality-drift benchmark (Sellam et al., 2020,
§5.2, appendix B.3). Draw and store the skewed train/test samples of every α, score each test
sample with each metric (cached segment scores are reused), evaluate each test sample at segment
level, record the run. Logic lives in :mod:`assay.jobs.quality_drift`; tasks pass labels, specs and
rows, never tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prefect import flow, task

from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED
from assay.jobs import quality_drift as qd
from assay.metrics.registry import MetricSpec


@task(name="draw-drift-samples", task_run_name="draw drift samples of {dataset}")
def draw_task(dataset: str, alphas: list[float], seed: int, test_fraction: float, binning: str) -> list[dict[str, Any]]:
    samples = qd.draw_samples(dataset, alphas=alphas, seed=seed, test_fraction=test_fraction, binning=binning)
    return [s.as_dict() for s in samples]


@task(name="score-drift-sample", task_run_name="score {label}")
def score_task(label: str, metric: dict[str, Any]) -> dict[str, Any]:
    return qd.score_sample(label, MetricSpec.from_dict(metric))


@task(name="evaluate-drift-sample", task_run_name="evaluate {label}")
def evaluate_task(label: str, test: dict[str, Any], train: dict[str, Any] | None, signatures: dict[str, str],
                  statistic: str, seed: int, n_resamples: int) -> list[dict[str, Any]]:
    return qd.evaluate_sample(qd.DriftSample.from_dict(test), qd.DriftSample.from_dict(train) if train else None,
                              signatures, statistic=statistic, seed=seed, n_resamples=n_resamples)


@task(name="record-drift-run")
def record_task(dataset: str, samples: list[dict[str, Any]], metrics: list[dict[str, Any]],
                parameters: dict[str, Any], rows: list[dict[str, Any]], started: float) -> str:
    return qd.record_drift_run(dataset, [qd.DriftSample.from_dict(s) for s in samples],
                               [MetricSpec.from_dict(m) for m in metrics], parameters, rows, started)


class TaskSteps:
    """The benchmark's steps as Prefect tasks (:class:`assay.jobs.quality_drift.DriftSteps`)."""

    def draw(self, dataset: str, alphas: Sequence[float], seed: int, test_fraction: float,
             binning: str) -> list[qd.DriftSample]:
        return [qd.DriftSample.from_dict(s) for s in draw_task(dataset, list(alphas), seed, test_fraction, binning)]

    def score(self, label: str, spec: MetricSpec) -> dict[str, Any]:
        return score_task(label, spec.as_dict())

    def evaluate(self, test: qd.DriftSample, train: qd.DriftSample | None, signatures: dict[str, str],
                 statistic: str, seed: int, n_resamples: int) -> list[dict[str, Any]]:
        return evaluate_task(test.label, test.as_dict(), train.as_dict() if train else None, signatures, statistic,
                             seed, n_resamples)

    def record(self, dataset: str, samples: Sequence[qd.DriftSample], metrics: Sequence[MetricSpec],
               parameters: dict[str, Any], rows: Sequence[dict[str, Any]], started: float) -> str:
        return record_task(dataset, [s.as_dict() for s in samples], [m.as_dict() for m in metrics], parameters,
                           list(rows), started)


@flow(name="quality-drift")
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
    return qd.run_quality_drift(dataset, [MetricSpec.from_dict(m) for m in metrics],
                                alphas=alphas if alphas is not None else qd.ALPHAS, seed=seed, statistic=statistic,
                                n_resamples=n_resamples, test_fraction=test_fraction, binning=binning,
                                steps=TaskSteps())
