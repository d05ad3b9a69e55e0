"""The ``ingest`` flow: one task per dataset; each task parses, stores and records its version.

Tasks pass paths and digests only. Parsing and storage live in :mod:`assay.jobs.ingest`, so this
module is orchestration alone. An unchanged source is a no-op inside the task too (it is not parsed
again); the CLI asks :func:`assay.jobs.ingest.find_unchanged` first and starts this flow only for paths
that need work.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, task

from assay.flows.hooks import install_flow_hooks
from assay.jobs.ingest import ingest_versions


@task(name="ingest-dataset", task_run_name="ingest {path}")
def ingest_dataset(
    path: str,
    format_name: str | None = None,
    name: str | None = None,
    options: dict[str, str] | None = None,
    reparse: bool = False,
) -> list[dict[str, Any]]:
    """The versions one source holds (one for most formats; one per language pair of an MTME test set)."""
    return [result.as_dict() for result in
            ingest_versions(path, format_name=format_name, name=name, options=options, reparse=reparse)]


@flow(name="ingest", on_running=[install_flow_hooks], log_prints=False)
def ingest_flow(
    paths: list[str],
    format_name: str | None = None,
    name: str | None = None,
    options: dict[str, str] | None = None,
    reparse: bool = False,
) -> list[dict[str, Any]]:
    """Ingest each path in turn; the first defective input stops the flow with its error.

    Datasets are ingested one after another: each is small, and SQLite allows one writer.
    ``reparse``: parse even unchanged sources (after an upgrade of Assay's parsers).
    """
    return [result for path in paths for result in ingest_dataset(path, format_name, name, options, reparse)]


@task(name="discover-datasets")
def discover_datasets(data_dir: str) -> list[str]:
    from pathlib import Path

    from assay.jobs.ingest import discover

    return [str(p) for p in discover(Path(data_dir))]


@flow(name="ingest-directory", on_running=[install_flow_hooks])
def ingest_directory_flow(data_dir: str) -> list[dict[str, Any]]:
    """Ingest every dataset a format recognises in ``data_dir`` (the nightly ingest)."""
    return [result for path in discover_datasets(data_dir) for result in ingest_dataset(path)]
