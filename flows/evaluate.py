"""The ``evaluate`` flow: meta-evaluate the metrics scored on a pinned dataset version (logic in
:mod:`assay.jobs.evaluation`; the task returns the run id and the rows it wrote)."""

from __future__ import annotations

from typing import Any

from prefect import flow, task

from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED
from assay.flows.hooks import install_flow_hooks
from assay.jobs.evaluation import evaluate
from assay.jobs.protocol_wmt24 import DEFAULT_PERMUTATIONS


@task(name="evaluate-level", task_run_name="evaluate {dataset} {level}")
def evaluate_task(dataset: str, level: str, metrics: list[str] | None, statistics: list[str] | None,
                  seed: int, n_resamples: int, protocol: str | None, exclude_groups: list[str],
                  include_human: bool | None = None, rater: str | None = None,
                  n_permutations: int = DEFAULT_PERMUTATIONS, permutation_seed: int | None = None,
                  all_submissions: bool = False) -> dict[str, Any]:
    return evaluate(dataset, level=level, metrics=metrics, statistics=statistics, seed=seed,
                    n_resamples=n_resamples, protocol=protocol, exclude_groups=exclude_groups,
                    include_human=include_human, rater=rater, n_permutations=n_permutations,
                    permutation_seed=permutation_seed, all_submissions=all_submissions)


@flow(name="evaluate", on_running=[install_flow_hooks])
def evaluate_flow(dataset: str, level: str = "seg", metrics: list[str] | None = None,
                  statistics: list[str] | None = None, seed: int = DEFAULT_SEED, n_resamples: int = DEFAULT_RESAMPLES,
                  protocol: str | None = None, exclude_groups: list[str] | None = None,
                  include_human: bool | None = None, rater: str | None = None,
                  n_permutations: int = DEFAULT_PERMUTATIONS, permutation_seed: int | None = None,
                  all_submissions: bool = False) -> dict[str, Any]:
    return evaluate_task(dataset, level, metrics, statistics, seed, n_resamples, protocol, list(exclude_groups or []),
                         include_human, rater, n_permutations, permutation_seed, all_submissions)
