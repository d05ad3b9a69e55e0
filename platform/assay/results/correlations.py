"""The correlation store: one row per correlation ``assay evaluate`` computed.

Layout (relative to ``ASSAY_HOME``)::

    results/correlations/dataset=<name>/part-<run>-<uuid>.parquet

Correlations are keyed by (run, dataset version, level, group, aspect, statistic, signature) and
carry the item set they were computed on (a digest of the segment keys), so a leaderboard can
refuse to rank numbers computed on different items, and the seed and number of resamples of their
bootstrap intervals. The pairwise p-values behind the clusters are :mod:`assay.results.significance`;
the system-level points are :mod:`assay.results.system_points`.
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

STORE = "correlations"
ROOT = parts.root(STORE)

SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("version_number", pa.int64(), nullable=False),
    pa.field("version_digest", pa.string(), nullable=False),
    pa.field("level", pa.string(), nullable=False),  # seg | sys
    pa.field("group", pa.string(), nullable=False),  # language pair, task, or "all" (mean over groups)
    pa.field("aspect", pa.string(), nullable=False),
    pa.field("metric", pa.string(), nullable=False),
    pa.field("signature", pa.string(), nullable=False),
    pa.field("statistic", pa.string(), nullable=False),
    pa.field("value", pa.float64()),
    pa.field("ci_low", pa.float64()),
    pa.field("ci_high", pa.float64()),
    pa.field("n", pa.int64(), nullable=False),
    pa.field("n_excluded", pa.int64(), nullable=False),
    pa.field("item_set", pa.string(), nullable=False),
    pa.field("protocol", pa.string(), nullable=False),
    pa.field("rank", pa.int64()),
    pa.field("cluster", pa.int64()),
    pa.field("seed", pa.int64(), nullable=False),
    pa.field("n_resamples", pa.int64(), nullable=False),
    pa.field("code_version", pa.string(), nullable=False),
    pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
])


def write(settings: Settings, dataset: str, run_id: str, rows: Sequence[dict[str, Any]]) -> Path:
    """Write one run's rows as one part; returns its path relative to ``ASSAY_HOME``."""
    return parts.write_part(settings, STORE, ("dataset", dataset), run_id, pa.Table.from_pylist(rows, schema=SCHEMA),
                            SCHEMA)


def files(settings: Settings, dataset: str | None = None, run_id: str | None = None) -> list[Path]:
    """The parts (of one dataset, of one run)."""
    return parts.part_files(settings, STORE, ("dataset", dataset) if dataset else None, run_id)


def read_run(settings: Settings, dataset: str, run_id: str) -> list[dict[str, Any]]:
    """Every row one evaluation run stored for ``dataset``."""
    return parts.read_files(files(settings, dataset, run_id), SCHEMA).to_pylist()


def sql_source(con: duckdb.DuckDBPyConnection, settings: Settings, dataset: str | None = None) -> str | None:
    """A DuckDB ``FROM`` source over every stored correlation (of one dataset); None: there is none."""
    found = files(settings, dataset)
    return parts.sql_source(con, found, SCHEMA) if found else None
