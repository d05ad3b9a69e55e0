"""The ``select`` flow: model selection with hybrid systems (BERTScore, Zhang et al. 2020, §4 and
appendix F.2). Logic in :mod:`assay.jobs.model_selection`; the task returns the run id and its rows."""

from __future__ import annotations

from typing import Any

from prefect import flow, task

from assay.config import DEFAULT_SEED
from assay.flows.hooks import install_flow_hooks
from assay.jobs.model_selection import select_models


@task(name="select-models", task_run_name="model selection on {dataset}")
def select_task(dataset: str, metrics: list[str] | None, n_hybrid: int, n_candidates: int, n_trials: int,
                seed: int) -> dict[str, Any]:
    return select_models(dataset, metrics=metrics, n_hybrid=n_hybrid, n_candidates=n_candidates,
                         n_trials=n_trials, seed=seed)


@flow(name="select", on_running=[install_flow_hooks])
def select_flow(dataset: str, metrics: list[str] | None = None, n_hybrid: int = 10_000, n_candidates: int = 100,
                n_trials: int = 100_000, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    return select_task(dataset, metrics, n_hybrid, n_candidates, n_trials, seed)
