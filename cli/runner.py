"""The one place the CLI starts flows.

Each function chooses the Prefect API first (:func:`assay.flows.engine.configure_prefect_defaults`:
a configured ``PREFECT_API_URL``, else the background local server, started on first use) and only
then imports the flow, because Prefect reads its settings once, at import. Commands that find
nothing to do answer from their plan and never come here, so they never pay for Prefect.
"""

from __future__ import annotations

import importlib
from typing import Any

#: flow name -> (module under assay.flows, function)
FLOWS = {
    "ingest": ("ingest", "ingest_flow"),
    "score": ("score", "score_flow"),
    "evaluate": ("evaluate", "evaluate_flow"),
    "select": ("select", "select_flow"),
    "rerun": ("rerun", "rerun_flow"),
    "bertscore-baseline": ("baseline", "baseline_flow"),
    "quality-drift": ("drift", "quality_drift_flow"),
    "report": ("report", "report_flow"),
    "assay-run": ("main_job", "main_job_flow"),
    "finetune": ("train", "finetune_flow"),
    "pretrain": ("train", "pretrain_flow"),
    "robustness-drift": ("robustness", "robustness_drift_flow"),
    "robustness-webnlg": ("robustness", "robustness_webnlg_flow"),
    "train": ("train", "train_flow"),
    "synthesize": ("synthesize", "synthesize_flow"),
    "nightly": ("nightly", "nightly_flow"),
    "evaluate-checkpoint": ("checkpoint_eval", "evaluate_checkpoint_flow"),
}


def run_flow(flow_name: str, /, *args: Any, **kwargs: Any) -> Any:
    """Run the flow ``flow_name`` (a key of :data:`FLOWS`) with the real Prefect engine; returns its result."""
    from assay.flows.engine import configure_prefect_defaults

    configure_prefect_defaults()
    module, function = FLOWS[flow_name]
    return getattr(importlib.import_module(f"assay.flows.{module}"), function)(*args, **kwargs)


def run_ingest_flow(paths: list[str], **kwargs: Any) -> list[dict[str, Any]]:
    return run_flow("ingest", paths, **kwargs)


def run_score_flow(dataset: str, metric: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return run_flow("score", dataset, metric, **kwargs)


def run_evaluate_flow(dataset: str, **kwargs: Any) -> dict[str, Any]:
    return run_flow("evaluate", dataset, **kwargs)


def run_drift_flow(dataset: str, metrics: list[dict[str, Any]], **kwargs: Any) -> list[dict[str, Any]]:
    return run_flow("quality-drift", dataset, metrics, **kwargs)


def run_report_flow(out_dir: str, **kwargs: Any) -> str:
    return str(run_flow("report", out_dir, **kwargs))


def run_main_job(data_dir: str, report_dir: str | None = None, **kwargs: Any) -> dict[str, Any]:
    return run_flow("assay-run", data_dir, report_dir, **kwargs)
