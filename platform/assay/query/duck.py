"""Read-only DuckDB over the Parquet stores, for ``assay sql`` and the leaderboard.

DuckDB runs in-process. Views are created in a throw-away database file which is then reopened
read-only, and only reading statements (SELECT, WITH ... SELECT, DESCRIBE, SHOW, SUMMARIZE,
EXPLAIN) are accepted, so a query can neither change a view nor write a file.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from assay.catalog.dataset_versions import list_versions, resolve
from assay.catalog.engine import session_scope
from assay.config import Settings, load_settings
from assay.datasets import store
from assay.datasets.names import DatasetRef
from assay.datasets.schema import OPTIONAL_TABLES, TABLES
from assay.errors import UsageError
from assay.query.literals import sql_literal

READING_STATEMENTS = {"SELECT", "EXPLAIN"}


def view_name(dataset: str, table: str) -> str:
    base = re.sub(r"[^a-z0-9_]", "_", dataset.lower())
    return base if table == "segments" else f"{base}_{table}"


def dataset_views(settings: Settings, pins: list[str] | None = None) -> dict[str, Path]:
    """View name -> Parquet file, for the latest version of each dataset unless pinned."""
    pinned = {DatasetRef.parse(p).name: p for p in pins or []}
    views: dict[str, Path] = {}
    with session_scope(settings) as session:
        versions = list_versions(session)
        chosen = [resolve(session, pinned[v.dataset.name]) if v.dataset.name in pinned else v for v in versions]
        missing = set(pinned) - {v.dataset.name for v in versions}
        if missing:
            resolve(session, pinned[sorted(missing)[0]])  # raises NotFoundError with the known names
        for version in chosen:
            for table in TABLES:
                views[view_name(version.dataset.name, table)] = store.table_path(settings, version.store_path, table)
            for table in OPTIONAL_TABLES:
                if store.has_table(settings, version.store_path, table):
                    views[view_name(version.dataset.name, table)] = store.table_path(settings, version.store_path,
                                                                                     table)
    return views


@contextmanager
def readonly_connection(
    views: dict[str, Path], extra: dict[str, str] | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only DuckDB connection with one view per Parquet file (and any ``extra`` views,
    given as trusted SQL built by Assay itself). A file written before a store column was renamed
    shows it under its current name (:func:`assay.datasets.store.legacy_renames`)."""
    with tempfile.TemporaryDirectory(prefix="assay-duckdb-") as tmp:
        db_path = str(Path(tmp) / "views.duckdb")
        with duckdb.connect(db_path) as con:
            for name, path in views.items():
                renames = store.legacy_renames(path)
                columns = "*" + (" RENAME (" + ", ".join(f'"{old}" AS "{new}"' for old, new in renames.items()) + ")"
                                 if renames else "")
                con.execute(f'CREATE VIEW "{name}" AS SELECT {columns} FROM read_parquet({sql_literal(str(path))})')
            for name, sql in (extra or {}).items():
                con.execute(f'CREATE VIEW "{name}" AS {sql}')
        con = duckdb.connect(db_path, read_only=True)
        try:
            yield con
        finally:
            con.close()


def run_user_query(
    query: str, pins: list[str] | None = None, settings: Settings | None = None
) -> tuple[list[str], list[tuple]]:
    """Execute a user's reading query; returns (column names, rows)."""
    settings = settings or load_settings()
    statements = duckdb.extract_statements(query)
    if not statements:
        raise UsageError("empty query")
    for statement in statements:
        kind = statement.type.name
        if kind not in READING_STATEMENTS:
            raise UsageError(f"`assay sql` is read-only: {kind} statements are not allowed")
    views = dataset_views(settings, pins)
    union: dict[str, str] = {}
    for table in [*TABLES, *OPTIONAL_TABLES]:
        parts = [f'SELECT * FROM "{v}"' for v in views if _table_of(v, views) == table]
        if parts and table not in views:
            union[table] = " UNION ALL BY NAME ".join(parts)
    with readonly_connection(views, union) as con:
        try:
            result = con.execute(query)
        except duckdb.Error as exc:
            raise UsageError(f"query failed: {exc}") from exc
        columns = [d[0] for d in result.description or []]
        return columns, result.fetchall()


def _table_of(view: str, views: dict[str, Path]) -> str:
    return views[view].stem
