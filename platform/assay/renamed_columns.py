"""Renamed columns: a stored Parquet file is read under the current column names, never rewritten.

Stored files are immutable: a dataset version's tables (:mod:`assay.datasets.store`) may sit in a
shared, read-only store, and a results part's sha256 is recorded in the catalog
(:mod:`assay.results.parts`). So when a column is renamed, files written before keep the old name,
and every reader renames it as it reads. Each store declares its renames, old name -> new name
(:data:`assay.datasets.schema.LEGACY_STORE_COLUMNS`, :data:`assay.results.parts.RENAMED`); this
module is the one rule that applies them, to an Arrow table and in DuckDB SQL:

* a file that has the old column and not the new one is read with the old column under the new
  name, in its place;
* where both names are present (a scan over files of both layouts, read by name), the new column
  is read, filled from the old one where it is null, and the old column is dropped.

docs/STORAGE.md, "Renamed columns", lists the renames.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import pyarrow as pa

__all__ = ["rename_table", "renames_in", "sql_columns"]


def renames_in(columns: Collection[str], renamed: Mapping[str, str]) -> dict[str, str]:
    """The renames (old -> new) that apply to a file, or a scan of files, with ``columns``: those
    whose old name it has."""
    return {old: new for old, new in renamed.items() if old in columns}


def rename_table(table: pa.Table, renamed: Mapping[str, str]) -> pa.Table:
    """``table`` (one stored file, as read) with its columns under their current names."""
    renames = renames_in(table.column_names, renamed)
    for old, new in renames.items():
        names = table.column_names
        if new in names:
            import pyarrow.compute as pc  # 0.09 s of imports, needed only where both names are present

            merged = pc.coalesce(table.column(new), table.column(old))
            table = table.set_column(names.index(new), new, merged).drop_columns([old])
        else:
            table = table.rename_columns([new if c == old else c for c in names])
    return table


def sql_columns(columns: Collection[str], renamed: Mapping[str, str]) -> str:
    """The DuckDB select list that reads a scan with ``columns`` under the current names: ``*``
    when nothing applies; ``* RENAME ("old" AS "new")`` when only old names are present; with a new
    name present as well, ``* EXCLUDE ("old", "new"), COALESCE("new", "old") AS "new"``."""
    renames = renames_in(columns, renamed)
    if not renames:
        return "*"
    if not any(new in columns for new in renames.values()):
        return "* RENAME (" + ", ".join(f'"{old}" AS "{new}"' for old, new in renames.items()) + ")"
    dropped = ", ".join(f'"{c}"' for c in [*renames, *(new for new in renames.values() if new in columns)])
    kept = ", ".join((f'COALESCE("{new}", "{old}")' if new in columns else f'"{old}"') + f' AS "{new}"'
                     for old, new in renames.items())
    return f"* EXCLUDE ({dropped}), {kept}"
