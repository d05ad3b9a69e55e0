"""Calling flows from the CLI (imports Prefect lazily, after setting its defaults)."""

from __future__ import annotations

from typing import Any


def run_ingest_flow(paths: list[str], **kwargs: Any) -> list[dict[str, Any]]:
    from assay.flows.engine import configure_prefect_defaults

    configure_prefect_defaults()
    from assay.flows.ingest import ingest_flow

    return ingest_flow(paths, **kwargs)


def run_score_flow(dataset: str, metric: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    from assay.flows.engine import configure_prefect_defaults

    configure_prefect_defaults()
    from assay.flows.score import score_flow

    return score_flow(dataset, metric, **kwargs)


def run_evaluate_flow(dataset: str, **kwargs: Any) -> dict[str, Any]:
    from assay.flows.engine import configure_prefect_defaults

    configure_prefect_defaults()
    from assay.flows.evaluate import evaluate_flow

    return evaluate_flow(dataset, **kwargs)
