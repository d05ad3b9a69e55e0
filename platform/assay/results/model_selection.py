"""The model-selection store: what ``assay select`` computed (BERTScore, Zhang et al. 2020, §4).

Layout (relative to ``ASSAY_HOME``)::

    results/model_selection/dataset=<name>/part-<run>-<uuid>.parquet

One row per (group, aspect, metric) of a run: Hits@1, MRR, the mean human-score gap, the hybrid
human-metric Pearson r and the sizes and seed of the hybrid draws (:mod:`assay.jobs.model_selection`).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from assay.config import Settings
from assay.results import parts

STORE = "model_selection"
ROOT = parts.root(STORE)

SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("version_number", pa.int64(), nullable=False),
    pa.field("version_digest", pa.string(), nullable=False),
    pa.field("group", pa.string(), nullable=False),
    pa.field("aspect", pa.string(), nullable=False),
    pa.field("metric", pa.string(), nullable=False),
    pa.field("signature", pa.string(), nullable=False),
    pa.field("hits_at_1", pa.float64(), nullable=False),
    pa.field("mrr", pa.float64(), nullable=False),
    pa.field("mean_abs_human_diff", pa.float64(), nullable=False),
    pa.field("hybrid_human_metric_pearson", pa.float64()),
    pa.field("n_systems", pa.int64(), nullable=False),
    pa.field("n_items", pa.int64(), nullable=False),
    pa.field("n_hybrid", pa.int64(), nullable=False),
    pa.field("n_candidates", pa.int64(), nullable=False),
    pa.field("n_trials", pa.int64(), nullable=False),
    pa.field("seed", pa.int64(), nullable=False),
    pa.field("code_version", pa.string(), nullable=False),
    pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
])

PARTS = parts.RunParts(STORE, SCHEMA)
write = PARTS.write


def read(settings: Settings) -> list[dict[str, Any]]:
    """Every stored row, of every dataset and run."""
    return PARTS.read(settings).to_pylist()
