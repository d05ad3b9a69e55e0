"""The significance store: the pairwise tests behind ``assay evaluate``'s clusters.

Layout (relative to ``ASSAY_HOME``)::

    results/significance/dataset=<name>/part-<run>-<uuid>.parquet

One row per ordered pair of metrics in a cell (level, group, aspect, statistic): the one-sided
p-value that ``better`` (the higher-valued signature) truly correlates better than ``worse``, and
the test that gave it. A leaderboard that shows a subset of metrics re-clusters from these.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from assay.config import Settings
from assay.results import parts

if TYPE_CHECKING:
    import duckdb

STORE = "significance"
ROOT = parts.root(STORE)

SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("version_number", pa.int64(), nullable=False),
    pa.field("level", pa.string(), nullable=False),
    pa.field("group", pa.string(), nullable=False),
    pa.field("aspect", pa.string(), nullable=False),
    pa.field("statistic", pa.string(), nullable=False),
    pa.field("better", pa.string(), nullable=False),  # signature of the higher-valued metric
    pa.field("worse", pa.string(), nullable=False),
    pa.field("p_value", pa.float64(), nullable=False),  # that `better` truly correlates better
    pa.field("test", pa.string(), nullable=False),
])


def write(settings: Settings, dataset: str, run_id: str, rows: Sequence[dict[str, Any]]) -> Path:
    """Write one run's rows as one part; returns its path relative to ``ASSAY_HOME``."""
    return parts.write_part(settings, STORE, ("dataset", dataset), run_id, pa.Table.from_pylist(rows, schema=SCHEMA),
                            SCHEMA)


def files(settings: Settings, dataset: str | None = None, run_id: str | None = None) -> list[Path]:
    return parts.part_files(settings, STORE, ("dataset", dataset) if dataset else None, run_id)


def read_run(settings: Settings, dataset: str, run_id: str) -> list[dict[str, Any]]:
    """Every p-value one evaluation run stored for ``dataset``."""
    return parts.read_files(files(settings, dataset, run_id), SCHEMA).to_pylist()


def sql_source(con: duckdb.DuckDBPyConnection, settings: Settings, dataset: str | None = None) -> str | None:
    """A DuckDB ``FROM`` source over every stored p-value (of one dataset); None: there is none."""
    found = files(settings, dataset)
    return parts.sql_source(con, found, SCHEMA) if found else None
