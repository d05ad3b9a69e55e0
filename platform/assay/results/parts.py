"""The part files of the results store: where a store's parts lie, how one is written, how they are read.

Layout (relative to ``ASSAY_HOME``)::

    results/<store>/<key>=<value>/part-<run>[-<n>]-<uuid8>.parquet

Every part is written once, atomically, under a unique name (:func:`assay.atomic.write_parquet`), so
any number of writers can add parts at once and nothing is updated in place; a part's sha256 is
recorded in the catalog's ``result_files``. Only the modules of :mod:`assay.results` build these
paths; everything else reads and writes through their named functions.

Renamed columns. A stored column that was renamed is upgraded when read, never rewritten: the
parts are immutable and their recorded sha256 must keep matching. :data:`RENAMED` maps each old
name to its new one; a part that has the old column and not the new one is read with the old
column under the new name (:func:`upgrade`; :func:`sql_source` does the same in DuckDB; the rule
is :mod:`assay.renamed_columns`). A part that lacks a column of the declared schema (written before
the column existed) reads it as null.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from assay.atomic import unique_part_name, write_parquet
from assay.config import Settings
from assay.query.literals import sql_literal
from assay.renamed_columns import rename_table, renames_in, sql_columns

if TYPE_CHECKING:
    import duckdb

RESULTS = "results"
"""The results store's folder under ``ASSAY_HOME``."""

RENAMED = {"dataset_version": "version_number", "dataset_digest": "version_digest"}
"""Old stored column name -> new one (docs/STORAGE.md, "Renamed columns")."""


def root(store: str) -> str:
    """``results/<store>``, relative to ``ASSAY_HOME``."""
    return f"{RESULTS}/{store}"


def store_folder(settings: Settings, store: str) -> Path:
    return settings.home / RESULTS / store


def write_part(settings: Settings, store: str, partition: tuple[str, str], run_id: str, table: pa.Table,
               schema: pa.Schema, part: int | None = None) -> Path:
    """Write one immutable part of ``store`` under ``key=value`` (atomically); returns its path
    relative to ``ASSAY_HOME``."""
    key, value = partition
    target = store_folder(settings, store) / f"{key}={value}" / unique_part_name(run_id, part)
    write_parquet(table, target, schema=schema)
    return target.relative_to(settings.home)


def part_files(settings: Settings, store: str, partition: tuple[str, str] | None = None,
               run_id: str | None = None) -> list[Path]:
    """The parts of ``store`` (of one ``(key, value)`` partition, and of one run), sorted by path."""
    folder = store_folder(settings, store)
    if not folder.is_dir():
        return []
    where = f"{partition[0]}={partition[1]}" if partition else "*"
    name = f"part-{run_id}-*.parquet" if run_id else "part-*.parquet"
    return sorted(folder.glob(f"{where}/{name}"))


def upgrade(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` (one stored part) in ``schema``: renamed columns under their new names, columns the
    part lacks as nulls, every column cast to its declared type, in the declared order."""
    table = rename_table(table, RENAMED)
    names = set(table.column_names)
    arrays = [table.column(f.name).cast(f.type) if f.name in names else pa.nulls(table.num_rows, f.type)
              for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def read_files(files: Sequence[Path], schema: pa.Schema) -> pa.Table:
    """The rows of ``files``, each upgraded to ``schema`` (:func:`upgrade`), in file order."""
    if not files:
        return schema.empty_table()
    return pa.concat_tables([upgrade(pq.read_table(f), schema) for f in files])


def sql_source(con: duckdb.DuckDBPyConnection, files: Sequence[Path], schema: pa.Schema) -> str:
    """A DuckDB ``FROM`` source over ``files`` whose columns carry ``schema``'s names: parts written
    before a rename (:data:`RENAMED`) are read with the old column under its new name, and a column
    of ``schema`` that no part has (added after they were written) reads as null. ``con`` is the
    DuckDB connection the source will be queried on (it reads the parts' column names)."""
    listed = "[" + ", ".join(sql_literal(str(f)) for f in files) + "]"
    scan = f"read_parquet({listed}, hive_partitioning = false, union_by_name = true)"
    found = {d[0] for d in con.execute(f"SELECT * FROM {scan} LIMIT 0").description or []}
    renamed = {old: new for old, new in RENAMED.items() if new in schema.names}
    legacy = renames_in(found, renamed)
    absent = [f for f in schema if f.name not in found and f.name not in legacy.values()]
    nulls = "".join(f', CAST(NULL AS {_SQL_TYPES.get(str(f.type), "VARCHAR")}) AS "{f.name}"' for f in absent)
    if not legacy and not absent:
        return scan
    return f"(SELECT {sql_columns(found, renamed)}{nulls} FROM {scan})"


_SQL_TYPES = {"string": "VARCHAR", "bool": "BOOLEAN", "double": "DOUBLE", "int64": "BIGINT", "int32": "INTEGER",
              "timestamp[us, tz=UTC]": "TIMESTAMPTZ"}
"""DuckDB's type for each column type the stores declare, for a column no part has yet."""


@dataclass(frozen=True)
class RunParts:
    """A store of one part per run and dataset (``results/<store>/dataset=<name>/``), in ``schema``:
    the reads and writes that the correlation, significance, system-point and model-selection
    stores share."""

    store: str
    schema: pa.Schema

    def write(self, settings: Settings, dataset: str, run_id: str, rows: Sequence[dict[str, Any]]) -> Path:
        """Write one run's rows as one part; returns its path relative to ``ASSAY_HOME``."""
        table = pa.Table.from_pylist(list(rows), schema=self.schema)
        return write_part(settings, self.store, ("dataset", dataset), run_id, table, self.schema)

    def files(self, settings: Settings, dataset: str | None = None, run_id: str | None = None) -> list[Path]:
        """The parts (of one dataset, of one run)."""
        return part_files(settings, self.store, ("dataset", dataset) if dataset else None, run_id)

    def read(self, settings: Settings, dataset: str | None = None, run_id: str | None = None) -> pa.Table:
        """The stored rows (of one dataset, of one run), upgraded to the schema."""
        return read_files(self.files(settings, dataset, run_id), self.schema)

    def read_run(self, settings: Settings, dataset: str, run_id: str) -> list[dict[str, Any]]:
        """Every row one run stored for ``dataset``."""
        return self.read(settings, dataset, run_id).to_pylist()

    def sql_source(self, con: duckdb.DuckDBPyConnection, settings: Settings, dataset: str | None = None) -> str | None:
        """A DuckDB ``FROM`` source over every stored row (of one dataset); None when there is none."""
        found = self.files(settings, dataset)
        return sql_source(con, found, self.schema) if found else None
