"""The ``report`` flow: build the static HTML report from the catalog and the results stores
(logic in :mod:`assay.report`; the task returns the path of ``index.html``)."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, task

from assay.flows.hooks import install_flow_hooks
from assay.report import build_report


@task(name="build-report", task_run_name="report {out_dir}")
def build_report_task(out_dir: str, main_dataset: str | None, sample_limit: int, seed: int) -> str:
    return str(build_report(Path(out_dir), main_dataset=main_dataset, sample_limit=sample_limit, seed=seed))


@flow(name="report", on_running=[install_flow_hooks])
def report_flow(out_dir: str, main_dataset: str | None = None, sample_limit: int = 2000, seed: int = 0) -> str:
    """Write ``out_dir/index.html``; returns its path."""
    return build_report_task(out_dir, main_dataset, sample_limit, seed)
