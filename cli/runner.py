"""The one place the CLI starts flows.

Each function chooses the Prefect API first (:func:`assay.flows.engine.configure_prefect_defaults`:
a configured ``PREFECT_API_URL``, else the background local server, started on first use) and only
then imports the flow, because Prefect reads its settings once, at import. Commands that find
nothing to do answer from their plan and never come here, so they never pay for Prefect.
"""

from __future__ import annotations

from typing import Any


def _prepare() -> None:
    from assay.flows.engine import configure_prefect_defaults

    configure_prefect_defaults()


def run_ingest_flow(paths: list[str], **kwargs: Any) -> list[dict[str, Any]]:
    _prepare()
    from assay.flows.ingest import ingest_flow

    return ingest_flow(paths, **kwargs)


def run_score_flow(dataset: str, metric: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    _prepare()
    from assay.flows.score import score_flow

    return score_flow(dataset, metric, **kwargs)


def run_evaluate_flow(dataset: str, **kwargs: Any) -> dict[str, Any]:
    _prepare()
    from assay.flows.evaluate import evaluate_flow

    return evaluate_flow(dataset, **kwargs)


def run_drift_flow(dataset: str, metrics: list[dict[str, Any]], **kwargs: Any) -> list[dict[str, Any]]:
    _prepare()
    from assay.flows.drift import quality_drift_flow

    return quality_drift_flow(dataset, metrics, **kwargs)


def run_report_flow(out_dir: str, **kwargs: Any) -> str:
    _prepare()
    from assay.flows.report import report_flow

    return report_flow(out_dir, **kwargs)


def run_main_job(data_dir: str, report_dir: str | None = None, **kwargs: Any) -> dict[str, Any]:
    _prepare()
    from assay.flows.main_job import main_job_flow

    return main_job_flow(data_dir, report_dir, **kwargs)
