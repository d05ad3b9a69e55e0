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

import pyarrow as pa

from assay.results import parts

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

PARTS = parts.RunParts(STORE, SCHEMA)
write = PARTS.write
files = PARTS.files
read_run = PARTS.read_run
sql_source = PARTS.sql_source
