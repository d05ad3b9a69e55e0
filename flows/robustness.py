"""The ``robustness-drift`` and ``robustness-webnlg`` flows: BLEURT's robustness experiments with
training (Sellam et al., 2020, §5.2 "Robustness to Quality Drift", §5.3 "WebNLG Experiments").

prepare (checks, inits resolved to digests) -> draw the data -> one ``train`` task per (point,
aspect, variant), each a recorded ``finetune`` run whose checkpoint is registered (or found again
when an identical request made it) -> one ``evaluate`` task per test version (scores are cached by
content) -> store the rows and complete the ``robustness`` run. The steps are
:mod:`assay.workers.robustness_jobs`'s; tasks pass JSON (experiments, labels, digests, paths),
never tables or models. A rerun of a finished experiment answers its stored rows.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, task

from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED, load_settings
from assay.metrics.registry import MetricSpec
from assay.training import robustness as rb
from assay.workers import robustness_jobs as jobs


def _variants(variants: list[dict[str, Any]] | None) -> list[rb.Variant] | None:
    return [rb.Variant.from_dict(v) for v in variants] if variants is not None else None


def _baselines(baselines: list[dict[str, Any]] | None) -> list[MetricSpec] | None:
    return [MetricSpec.from_dict(b) for b in baselines] if baselines is not None else None


@task(name="robustness-draw", task_run_name="draw the data of {experiment[dataset]}")
def draw_task(experiment: dict[str, Any]) -> list[dict[str, Any]]:
    return jobs.draw(rb.Experiment.from_dict(experiment))


@task(name="robustness-train", task_run_name="train {job[variant][name]} on {job[train][label]} ({job[aspect]})")
def train_task(experiment: dict[str, Any], job: dict[str, Any], parent_run_id: str) -> dict[str, Any]:
    return jobs.train_variant(rb.Experiment.from_dict(experiment), job, parent_run_id)


@task(name="robustness-evaluate", task_run_name="evaluate on {point[point][test_dataset]}")
def evaluate_task(experiment: dict[str, Any], point: dict[str, Any]) -> list[dict[str, Any]]:
    return jobs.evaluate_point(rb.Experiment.from_dict(experiment), point)


def _run(experiment: rb.Experiment) -> dict[str, Any]:
    settings = load_settings()
    stored = rb.stored_rows(settings, experiment)
    if stored:
        return rb.record_reuse(settings, experiment, stored)
    recorder = rb.start_run(settings, experiment)
    data = experiment.as_dict()
    try:
        samples = draw_task(data)
        trained = [train_task(data, job, recorder.run_id) for job in jobs.training_jobs(experiment, samples)]
        points = jobs.evaluation_points(experiment, samples, trained, settings)
        rows = [row for point in points for row in evaluate_task(data, point)]
        return rb.finish_run(settings, recorder, experiment, rows, jobs.made_checkpoints(trained, points))
    except BaseException as exc:
        recorder.fail(f"{type(exc).__name__}: {exc}")
        raise


@flow(name="robustness-drift")
def robustness_drift_flow(dataset: str, alphas: list[float] | None = None, variants: list[dict[str, Any]] | None = None,
                          baselines: list[dict[str, Any]] | None = None, config: dict[str, Any] | None = None,
                          aspect: str | None = None, seed: int = DEFAULT_SEED, n_resamples: int = DEFAULT_RESAMPLES,
                          test_fraction: float = 0.5, binning: str = "quantile") -> dict[str, Any]:
    """Quality drift with training (§5.2): the run's summary with one row per (variant, α, statistic)."""
    experiment = jobs.prepare_drift(dataset, alphas=alphas, variants=_variants(variants),
                                    baselines=_baselines(baselines), config=config, aspect=aspect, seed=seed,
                                    n_resamples=n_resamples, test_fraction=test_fraction, binning=binning)
    return _run(experiment)


@flow(name="robustness-webnlg")
def robustness_webnlg_flow(dataset: str, shares: list[float] | None = None, by: list[str] | None = None,
                           aspects: list[str] | None = None, variants: list[dict[str, Any]] | None = None,
                           baselines: list[dict[str, Any]] | None = None, config: dict[str, Any] | None = None,
                           include_human: bool = False, seed: int = DEFAULT_SEED,
                           n_resamples: int = DEFAULT_RESAMPLES) -> dict[str, Any]:
    """WebNLG with little training data (§5.3): one row per (variant, split kind, share, aspect, statistic)."""
    experiment = jobs.prepare_webnlg(dataset, shares=shares, by=by or list(rb.SPLIT_BY), aspects=aspects,
                                     variants=_variants(variants), baselines=_baselines(baselines), config=config,
                                     include_human=include_human, seed=seed, n_resamples=n_resamples)
    return _run(experiment)
