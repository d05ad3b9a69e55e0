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
Assay scored; ``protocol_signature``, every setting of the protocol the value was computed
under, defaults included; and ``checkpoint_digest``, the checkpoint a learned metric scored with
(:class:`assay.checkpoints.ref.CheckpointRef`), so a reader finds a checkpoint's rows without reading
signatures. Parts written before these columns existed read them as null
(:func:`assay.results.parts.upgrade`; :func:`assay.checkpoints.labels.row_checkpoint` then reads the
signature's short digest).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

import pyarrow as pa

from assay.results import parts

STORE = "correlations"
ROOT = parts.root(STORE)

MEAN_GROUP = "all"
"""The group of a correlation averaged over the groups (language pairs, tasks): the "avg" column of
the WMT and BLEURT tables (:func:`assay.jobs.evaluation_cells.group_means`)."""

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
    pa.field("checkpoint_digest", pa.string()),  # the learned metric's checkpoint (null: none, or an older part)
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
    pa.field("side", pa.string()),  # what makes the run a side evaluation (assay.results.headline); null: headline
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


Row = TypeVar("Row", bound=Mapping[str, Any])


def mean_else_each_group(rows: Iterable[Row], cell: Sequence[str]) -> list[Row]:
    """The rows that stand for each cell: the mean over groups (group ``all``) where the cell has
    one, else the row of every group (an evaluation of a single language pair has no mean, and
    :func:`~assay.jobs.evaluation_cells.group_means` leaves it out where a group's value is
    undefined). A cell is the rows that share the ``cell`` columns, e.g. ``("level", "aspect",
    "statistic")``; the rows kept are in their given order.

    The one rule behind a nightly ledger's summary, the regression check's default comparison, the
    nightly report's charts and a robustness experiment's result rows."""
    rows = list(rows)
    with_mean = {tuple(r[c] for c in cell) for r in rows if r["group"] == MEAN_GROUP}
    return [r for r in rows if r["group"] == MEAN_GROUP or tuple(r[c] for c in cell) not in with_mean]


def counted(n: int, unit: str | None) -> str:
    """``n`` as every output shows it, with what it counts: ``1,234 segments`` (a part written
    before units were stored has none, and shows the bare number)."""
    return f"{n:,} {unit}" if unit else f"{n:,}"
