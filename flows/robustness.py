"""The ``robustness-drift`` and ``robustness-webnlg`` flows: BLEURT's robustness experiments with
training (Sellam et al., 2020, §5.2 "Robustness to Quality Drift", §5.3 "WebNLG Experiments").

prepare (checks, inits resolved to digests) -> draw the data -> one ``train`` task per (point,
aspect, variant), each a recorded ``finetune`` run whose checkpoint is registered (or found again
when an identical request made it) -> one ``evaluate`` task per test version (scores are cached by
content) -> store the rows and complete the ``robustness`` run. The steps and their one order are
:mod:`assay.workers.training.robustness_runs`'s (:func:`~assay.workers.training.robustness_runs.run_experiment`),
which these flows hand the steps as tasks (:data:`ROBUSTNESS_TASKS`); tasks pass experiments,
labels, digests and paths, never tables or models. A rerun of a finished experiment answers its
stored rows.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED, load_settings
from assay.flows.hooks import install_flow_hooks
from assay.flows.step_tasks import as_tasks
from assay.metrics.registry import MetricSpec
from assay.training import robustness as rb
from assay.workers.training import robustness_runs as jobs

#: each step of :class:`assay.workers.training.robustness_runs.RobustnessSteps` as a task
ROBUSTNESS_TASKS: dict[str, dict[str, Any]] = {
    "draw": {"name": "robustness-draw", "task_run_name": "draw the data of {experiment.version.label}"},
    "train": {"name": "robustness-train",
              "task_run_name": "train {job[variant][name]} on {job[train][label]} ({job[aspect]})"},
    "evaluate": {"name": "robustness-evaluate", "task_run_name": "evaluate on {point[point][test_dataset]}"},
}


def _variants(variants: list[dict[str, Any]] | None) -> list[rb.Variant] | None:
    return [rb.Variant.from_dict(v) for v in variants] if variants is not None else None


def _baselines(baselines: list[dict[str, Any]] | None) -> list[MetricSpec] | None:
    return [MetricSpec.from_dict(b) for b in baselines] if baselines is not None else None


def _run(experiment: rb.Experiment) -> dict[str, Any]:
    """The experiment's one runner, its steps as this flow's tasks."""
    settings = load_settings()
    return jobs.run_experiment(experiment, settings, steps=as_tasks(jobs.RobustnessSteps(settings), ROBUSTNESS_TASKS))


@flow(name="robustness-drift", on_running=[install_flow_hooks])
def robustness_drift_flow(dataset: str, alphas: list[float] | None = None, variants: list[dict[str, Any]] | None = None,
                          baselines: list[dict[str, Any]] | None = None, config: dict[str, Any] | None = None,
                          aspect: str | None = None, seed: int = DEFAULT_SEED, n_resamples: int = DEFAULT_RESAMPLES,
                          test_fraction: float = 0.5, binning: str = "quantile") -> dict[str, Any]:
    """Quality drift with training (§5.2): the run's summary with one row per (variant, α, statistic)."""
    experiment = jobs.prepare_drift(dataset, alphas=alphas, variants=_variants(variants),
                                    baselines=_baselines(baselines), config=config, aspect=aspect, seed=seed,
                                    n_resamples=n_resamples, test_fraction=test_fraction, binning=binning)
    return _run(experiment)


@flow(name="robustness-webnlg", on_running=[install_flow_hooks])
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
