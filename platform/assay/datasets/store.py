"""The dataset store: one immutable, content-addressed folder of Parquet files per version.

Layout (relative to ``ASSAY_HOME``)::

    datasets/<name>/<digest>/segments.parquet
                            systems.parquet
                            outputs.parquet
                            rankings.parquet
                            manifest.json

A version is written into a temporary folder beside its final place and renamed into place in
one atomic step, so readers never see a half-written version and a crash leaves no partial
folder under a digest.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from assay import renamed_columns
from assay.atomic import atomic_path
from assay.config import Settings
from assay.datasets.schema import LEGACY_STORE_COLUMNS, OPTIONAL_TABLES, TABLES
from assay.errors import CatalogError, NotFoundError
from assay.provenance import short
from assay.renamed_columns import rename_table, renames_in

MANIFEST = "manifest.json"
#: tables a version may hold besides the canonical ones, whose schema is their producer's:
#: ``pairs``, the synthetic pre-training pairs of a ``synthetic`` version (``assay.synthetic``)
OTHER_TABLES = ("pairs",)


def relative_version_path(name: str, digest: str) -> str:
    return f"datasets/{name}/{digest}"


def with_store_columns(table: pa.Table, table_name: str, dataset: str, digest: str) -> pa.Table:
    """Prefix the parser's table with the ``dataset`` and ``version_digest`` columns (the latter the
    first 12 hex digits of ``digest``)."""
    n = table.num_rows
    full = table.add_column(0, "version_digest", pa.array([short(digest)] * n, pa.string()))
    full = full.add_column(0, "dataset", pa.array([dataset] * n, pa.string()))
    return full.cast(TABLES.get(table_name) or OPTIONAL_TABLES[table_name])


def write_version(
    settings: Settings,
    name: str,
    digest: str,
    tables: dict[str, pa.Table],
    manifest: dict[str, Any],
) -> tuple[str, bool]:
    """Write a version's tables; returns (path relative to home, whether this call created it)."""
    rel = relative_version_path(name, digest)
    final = settings.home / rel
    if final.is_dir():
        check_manifest(final, digest)
        return rel, False
    # first writer wins: a concurrent ingest of the same content writes an identical folder
    try:
        with atomic_path(final, replace=False) as tmp:
            tmp.mkdir()
            for table_name, table in tables.items():
                pq.write_table(table, tmp / f"{table_name}.parquet", compression="zstd")
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str))
            _fsync_dir(tmp)
    except FileExistsError:
        check_manifest(final, digest)
        return rel, False
    _fsync_dir(final.parent)
    return rel, True


def remove_version(settings: Settings, rel: str) -> None:
    """Remove a version folder this process just created (used when the catalog write fails)."""
    path = settings.home / rel
    if path.is_dir():
        shutil.rmtree(path)


def check_manifest(folder: Path, digest: str) -> None:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise CatalogError(f"{folder}: unreadable manifest ({exc}); the store is damaged") from exc
    if manifest.get("digest") != digest:
        raise CatalogError(f"{folder}: manifest digest {manifest.get('digest')} != folder digest {digest}")


def version_folder(settings: Settings, store_path: str) -> Path:
    """The folder of a stored version (``store_path`` as the catalog records it, relative to
    ``ASSAY_HOME``: ``datasets/<name>/<digest>``)."""
    return settings.home / store_path


def is_stored(settings: Settings, store_path: str) -> bool:
    """Whether the version's files are in the store: its folder holds the manifest (a folder only
    appears whole, renamed into place with every file in it)."""
    return (version_folder(settings, store_path) / MANIFEST).is_file()


def table_path(settings: Settings, store_path: str, table: str) -> Path:
    if table not in TABLES and table not in OPTIONAL_TABLES and table not in OTHER_TABLES:
        known = ", ".join([*TABLES, *OPTIONAL_TABLES, *OTHER_TABLES])
        raise NotFoundError(f"a dataset version has no table {table!r} (tables: {known})")
    return version_folder(settings, store_path) / f"{table}.parquet"


def has_table(settings: Settings, store_path: str, table: str) -> bool:
    """Whether a stored version holds ``table`` (an optional table such as MQM ``errors`` is
    there only for releases that have it)."""
    return table_path(settings, store_path, table).is_file()


def read_table(settings: Settings, store_path: str, table: str) -> pa.Table:
    """A table of a stored version, its store columns under their current names (see
    :func:`legacy_renames`)."""
    return rename_table(pq.read_table(table_path(settings, store_path, table)), LEGACY_STORE_COLUMNS)


def legacy_renames(path: Path) -> dict[str, str]:
    """The store columns a table file has under an earlier name (old -> current); empty for a file
    written in the current layout. Read-time upgrade (:mod:`assay.renamed_columns`): stored versions
    are immutable and may sit in a shared, read-only store, so they are never rewritten; their
    readers rename instead (the content digest covers the parser's columns only, so it is the same
    under either name)."""
    return renames_in(pq.read_schema(path).names, LEGACY_STORE_COLUMNS)


def sql_columns(path: Path) -> str:
    """The DuckDB select list that reads the table file at ``path`` under the current column names
    (:func:`assay.renamed_columns.sql_columns`)."""
    return renamed_columns.sql_columns(pq.read_schema(path).names, LEGACY_STORE_COLUMNS)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
