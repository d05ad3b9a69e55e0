"""The correlation part of the results store: what ``assay evaluate`` writes.

Layout (relative to ``ASSAY_HOME``)::

    results/correlations/dataset=<name>/part-<run>-<uuid>.parquet    one row per correlation
    results/significance/dataset=<name>/part-<run>-<uuid>.parquet    one row per compared metric pair
    results/system_points/dataset=<name>/part-<run>-<uuid>.parquet   one row per system of a
                                                                      system-level correlation

Correlations are keyed by (run, dataset version, level, group, aspect, statistic, signature) and
carry the item set they were computed on (a digest of the segment keys), so a leaderboard can
refuse to rank numbers computed on different items, and the seed and number of resamples of their
bootstrap intervals. System points are the (human, metric) system scores a system-level
correlation was computed on, so the report draws them without recomputing anything. Every part is
written once, atomically, under a unique name (:func:`assay.atomic.write_parquet`).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from assay.atomic import unique_part_name, write_parquet
from assay.config import Settings

CORRELATIONS = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("dataset_version", pa.int64(), nullable=False),
    pa.field("dataset_digest", pa.string(), nullable=False),
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

SIGNIFICANCE = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("dataset_version", pa.int64(), nullable=False),
    pa.field("level", pa.string(), nullable=False),
    pa.field("group", pa.string(), nullable=False),
    pa.field("aspect", pa.string(), nullable=False),
    pa.field("statistic", pa.string(), nullable=False),
    pa.field("better", pa.string(), nullable=False),  # signature of the higher-valued metric
    pa.field("worse", pa.string(), nullable=False),
    pa.field("p_value", pa.float64(), nullable=False),  # that `better` truly correlates better
    pa.field("test", pa.string(), nullable=False),
])

SYSTEM_POINTS = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("dataset_version", pa.int64(), nullable=False),
    pa.field("level", pa.string(), nullable=False),  # sys
    pa.field("group", pa.string(), nullable=False),
    pa.field("aspect", pa.string(), nullable=False),
    pa.field("metric", pa.string(), nullable=False),
    pa.field("signature", pa.string(), nullable=False),
    pa.field("system", pa.string(), nullable=False),
    pa.field("human", pa.float64(), nullable=False),  # the human system score the correlation used
    pa.field("metric_score", pa.float64(), nullable=False),  # corpus score or mean segment score
])

CORRELATIONS_ROOT = "results/correlations"
SYSTEM_POINTS_ROOT = "results/system_points"
SIGNIFICANCE_ROOT = "results/significance"
MODEL_SELECTION_ROOT = "results/model_selection"


def write_part(settings: Settings, root: str, dataset: str, run_id: str, table: pa.Table, schema: pa.Schema) -> Path:
    """Write one immutable part (atomically); returns its path relative to ``ASSAY_HOME``."""
    target = settings.home / root / f"dataset={dataset}" / unique_part_name(run_id)
    write_parquet(table, target, schema=schema)
    return target.relative_to(settings.home)


def glob(settings: Settings, root: str) -> str:
    return str(settings.home / root / "*" / "part-*.parquet")


def has_parts(settings: Settings, root: str) -> bool:
    folder = settings.home / root
    return folder.is_dir() and any(folder.glob("*/part-*.parquet"))
