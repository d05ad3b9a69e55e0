"""What a format parser hands to the store: canonical rows, source files and warnings."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from assay.datasets.schema import OPTIONAL_TABLES, TABLES, parser_schema
from assay.errors import PluginError


@dataclass(frozen=True)
class SourceFile:
    """An input file a dataset version was parsed from."""

    path: str  # relative to the ingested folder (or the file name for a single file)
    sha256: str
    size: int

    @classmethod
    def of(cls, path: Path, root: Path) -> SourceFile:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        rel = path.name if path == root else str(path.relative_to(root))
        return cls(path=rel, sha256=digest.hexdigest(), size=path.stat().st_size)


@dataclass
class ParsedDataset:
    """The result of parsing one input: canonical tables (without ``dataset``/``version``).

    ``tables`` maps a table name from :data:`assay.datasets.schema.TABLES` to an Arrow table with
    exactly :func:`parser_schema` of that name. Absent tables are empty; an optional table
    (:data:`assay.datasets.schema.OPTIONAL_TABLES`, e.g. MQM ``errors``) is present only when given.
    ``warnings`` are recoverable quirks (recorded on the dataset version), each one sentence.
    """

    format: str
    tables: dict[str, pa.Table]
    source_files: list[SourceFile]
    warnings: list[str] = field(default_factory=list)
    #: extra facts about the input (year, test set name, ...), stored with the version
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in TABLES:
            expected = parser_schema(name)
            table = self.tables.get(name)
            if table is None:
                self.tables[name] = expected.empty_table()
            elif not table.schema.equals(expected):
                raise PluginError(
                    f"parser {self.format!r} produced table {name!r} with schema "
                    f"{table.schema} instead of {expected}"
                )
        for name, table in self.tables.items():
            if name in TABLES:
                continue
            if name not in OPTIONAL_TABLES:
                raise PluginError(f"parser {self.format!r} produced an unknown table {name!r}")
            if not table.schema.equals(parser_schema(name)):
                raise PluginError(f"parser {self.format!r} produced table {name!r} with schema "
                                  f"{table.schema} instead of {parser_schema(name)}")

    def row_counts(self) -> dict[str, int]:
        return {name: table.num_rows for name, table in self.tables.items()}


class RowsBuilder:
    """Collects rows as Python dicts and builds a table with a canonical parser schema."""

    def __init__(self, table: str) -> None:
        self.schema = parser_schema(table)
        self.columns: dict[str, list[Any]] = {f.name: [] for f in self.schema}

    def append(self, **values: Any) -> None:
        for name, column in self.columns.items():
            column.append(values.get(name))

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    def build(self) -> pa.Table:
        arrays = [pa.array(self.columns[f.name], type=f.type) for f in self.schema]
        return pa.Table.from_arrays(arrays, schema=self.schema)
