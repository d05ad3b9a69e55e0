"""The correlation store: one row per correlation ``assay evaluate`` computed.

Layout (relative to ``ASSAY_HOME``)::

    results/correlations/dataset=<name>/part-<run>-<uuid>.parquet

Correlations are keyed by (run, dataset version, level, group, aspect, statistic, signature) and
carry the item set they were computed on (a digest of the segment keys), so a leaderboard can
refuse to rank numbers computed on different items, and the seed and number of resamples of their
bootstrap intervals. The pairwise p-values behind the clusters are :mod:`assay.results.significance`;
the system-level points are :mod:`assay.results.system_points`.

Each row says what its numbers mean: ``n`` with its ``unit`` (segments, items, systems or pairs);
for a tie-calibrated statistic (acc-t) the calibrated ``epsilon``; ``degenerate``, the reason a
value cannot separate metrics (such a row has no rank and no cluster); ``official``, whether the
signature is an official submission's (:mod:`assay.results.external_scores`) rather than a metric
Assay scored; and ``protocol_signature``, every setting of the protocol the value was computed
under, defaults included. Parts written before these columns existed read them as null
(:func:`assay.results.parts.upgrade`).
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
    pa.field("level", pa.string(), nullable=False),  # seg | sys | avg (a protocol's mean of statistics)
    pa.field("group", pa.string(), nullable=False),  # language pair, task, or "all" (mean over groups)
    pa.field("aspect", pa.string(), nullable=False),
    pa.field("metric", pa.string(), nullable=False),
    pa.field("signature", pa.string(), nullable=False),
    pa.field("statistic", pa.string(), nullable=False),
    pa.field("value", pa.float64()),
    pa.field("ci_low", pa.float64()),
    pa.field("ci_high", pa.float64()),
    pa.field("n", pa.int64(), nullable=False),
    pa.field("unit", pa.string()),  # what n counts: segments | items | systems | pairs
    pa.field("n_excluded", pa.int64(), nullable=False),
    pa.field("item_set", pa.string(), nullable=False),
    pa.field("protocol", pa.string(), nullable=False),
    pa.field("rank", pa.int64()),  # equal values share a rank; null: undefined or degenerate
    pa.field("cluster", pa.int64()),
    pa.field("epsilon", pa.float64()),  # acc-t: the calibrated metric tie threshold
    pa.field("degenerate", pa.string()),  # why the value cannot separate metrics; null when it can
    pa.field("official", pa.bool_()),  # an official submission's scores (external signature)
    pa.field("protocol_signature", pa.string()),  # every setting of the protocol, defaults included
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


def counted(n: int, unit: str | None) -> str:
    """``n`` as every output shows it, with what it counts: ``1,234 segments`` (a part written
    before units were stored has none, and shows the bare number)."""
    return f"{n:,} {unit}" if unit else f"{n:,}"
