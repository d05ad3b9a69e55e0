"""The ``bertscore-baseline`` flow: a BERTScore rescaling baseline (Zhang et al. 2020, §3) for any
model and layers, from random sentence pairs of a stored dataset. It runs on a worker (it loads
the encoder); logic in :mod:`assay.workers.rescale_baselines`."""

from __future__ import annotations

from typing import Any

from prefect import flow, task

from assay.flows.hooks import install_flow_hooks
from assay.workers.rescale_baselines import compute_dataset_baseline


@task(name="compute-bertscore-baseline", task_run_name="baseline of {model} on {dataset}")
def baseline_task(dataset: str, model: str | None, layers: list[int], n_pairs: int, seed: int,
                  lang: str) -> dict[str, Any]:
    return compute_dataset_baseline(dataset, model=model, layers=layers, n_pairs=n_pairs, seed=seed, lang=lang)


@flow(name="bertscore-baseline", on_running=[install_flow_hooks])
def baseline_flow(dataset: str, model: str | None = None, layers: list[int] | None = None, n_pairs: int = 10_000,
                  seed: int = 0, lang: str = "en") -> dict[str, Any]:
    return baseline_task(dataset, model, list(layers or []), n_pairs, seed, lang)
