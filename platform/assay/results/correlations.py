"""The correlation part of the results store: what ``assay evaluate`` writes.

Layout (relative to ``ASSAY_HOME``)::

    results/correlations/dataset=<name>/part-<run>.parquet     one row per correlation
    results/significance/dataset=<name>/part-<run>.parquet     one row per compared metric pair

Correlations are keyed by (run, dataset version, level, group, aspect, statistic, signature) and
carry the item set they were computed on (a digest of the segment keys), so a leaderboard can
refuse to rank numbers computed on different items.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

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

CORRELATIONS_ROOT = "results/correlations"
SIGNIFICANCE_ROOT = "results/significance"
MODEL_SELECTION_ROOT = "results/model_selection"


def write_part(settings: Settings, root: str, dataset: str, run_id: str, table: pa.Table, schema: pa.Schema) -> Path:
    folder = settings.home / root / f"dataset={dataset}"
    folder.mkdir(parents=True, exist_ok=True)
    name = f"part-{run_id}-{uuid.uuid4().hex[:8]}.parquet"
    tmp = folder / f".tmp-{name}"
    try:
        pq.write_table(table.cast(schema), tmp)
        os.replace(tmp, folder / name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return (folder / name).relative_to(settings.home)


def glob(settings: Settings, root: str) -> str:
    return str(settings.home / root / "*" / "part-*.parquet")


def has_parts(settings: Settings, root: str) -> bool:
    folder = settings.home / root
    return folder.is_dir() and any(folder.glob("*/part-*.parquet"))
