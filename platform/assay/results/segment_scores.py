"""The segment-score part of the results store.

Layout (relative to ``ASSAY_HOME``), hive-partitioned so DuckDB prunes by metric and signature::

    results/segment_scores/metric=<metric>/sig=<sha256(signature)[:16]>/part-<run>-<n>-<uuid>.parquet

Each scoring task writes its own immutable file (:mod:`assay.atomic`), so any
number of workers can write at once and nothing is ever updated in place. A row is keyed by
(signature, segment key): the segment key is a hash of the segment's content (source, references,
candidate), so a score computed once is reused by every dataset version that contains the same
segment, and never recomputed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from assay.atomic import unique_part_name, write_parquet
from assay.config import Settings
from assay.query.literals import sql_literal
from assay.results import parts

STORE = "segment_scores"
ROOT = parts.root(STORE)

SCHEMA = pa.schema(
    [
        pa.field("signature", pa.string(), nullable=False),
        # the checkpoint the metric scored with (full digest); null: no checkpoint, or a part written before it
        pa.field("checkpoint_digest", pa.string()),
        pa.field("key", pa.string(), nullable=False),
        pa.field("score", pa.float64()),  # null: the metric's prediction is undefined (BLEU Neighbors)
        pa.field("extra", pa.map_(pa.string(), pa.float64())),
        pa.field("stats", pa.list_(pa.float64())),
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)


def segment_key(source: str | None, references: Sequence[str], candidate: str) -> str:
    """Content hash of what a metric sees for one segment (128 bits, hex)."""
    payload = json.dumps([source, list(references), candidate], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


SEGMENT_COLUMNS = ("source", "references", "candidate")
"""The columns of a judgment table (``segments``, ``outputs``) that a segment key is computed from."""


def segment_keys(rows: pa.Table | Mapping[str, Sequence[Any]], index: Iterable[int] | None = None) -> list[str]:
    """The :func:`segment_key` of every row of a table of segments or outputs (its
    :data:`SEGMENT_COLUMNS`), given as a pyarrow table or as its ``to_pydict()``; with ``index``,
    of those rows only, in that order. The one way a dataset's rows are matched to stored scores."""
    if isinstance(rows, pa.Table):
        sources, references, candidates = (rows.column(c).to_pylist() for c in SEGMENT_COLUMNS)
    else:
        sources, references, candidates = (rows[c] for c in SEGMENT_COLUMNS)
    if index is None:
        return [segment_key(s, r, c) for s, r, c in zip(sources, references, candidates, strict=True)]
    return [segment_key(sources[i], references[i], candidates[i]) for i in index]


def signature_hash(signature: str) -> str:
    return hashlib.sha256(signature.encode()).hexdigest()[:16]


def partition_dir(settings: Settings, metric: str, signature: str) -> Path:
    return parts.store_folder(settings, STORE) / f"metric={metric}" / f"sig={signature_hash(signature)}"


@dataclass(frozen=True)
class ScoredMetric:
    """A metric signature with stored segment scores."""

    metric: str
    signature: str
    has_sufficient_statistics: bool = False
    """Its stored rows carry sufficient statistics: a corpus-level metric (corpus BLEU), whose
    segment scores belong to another metric (sentBLEU) and are not evaluated at segment level."""
    checkpoint_digest: str | None = None
    """The checkpoint its scores were computed with, as its stored rows record it (the full digest);
    None for a metric without a checkpoint, and for a signature whose first part was written before
    the column (:attr:`checkpoint` reads its signature then)."""

    @property
    def checkpoint(self) -> str | None:
        """The checkpoint it scored with, as a stored row names it (:func:`assay.checkpoints.labels.row_checkpoint`:
        the full digest, or the short one of scores stored before the column); compare with
        :meth:`assay.checkpoints.ref.CheckpointRef.matches`."""
        from assay.checkpoints.labels import row_checkpoint

        return row_checkpoint({"signature": self.signature, "checkpoint_digest": self.checkpoint_digest})


def scored_signatures(settings: Settings) -> list[ScoredMetric]:
    """Every (metric, signature) with scores in the store, read from the first row of each
    signature's first part."""
    root = parts.store_folder(settings, STORE)
    found = []
    for folder in sorted(root.glob("metric=*/sig=*")) if root.is_dir() else []:
        files = sorted(folder.glob("part-*.parquet"))
        if files:
            stored = set(pq.read_schema(files[0]).names)
            columns = [c for c in ("signature", "stats", "checkpoint_digest") if c in stored]
            first = pq.read_table(files[0], columns=columns).slice(0, 1).to_pylist()[0]
            found.append(ScoredMetric(folder.parent.name.split("=", 1)[1], first["signature"],
                                      first["stats"] is not None, first.get("checkpoint_digest")))
    return found


def wanted_signatures(candidates: list[ScoredMetric], metrics: Sequence[str] | None) -> list[ScoredMetric]:
    """The candidates a request names (a metric name, a signature or a signature prefix); all
    of them when it names none."""
    if not metrics:
        return candidates
    return [c for c in candidates if any(c.metric == m or c.signature == m or c.signature.startswith(m + "|")
                                         for m in metrics)]


def scored_keys(settings: Settings, metric: str, signature: str) -> set[str]:
    """Every segment key already scored under ``signature``."""
    folder = partition_dir(settings, metric, signature)
    files = sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []
    if not files:
        return set()
    import pyarrow.dataset as ds  # here: it imports pandas, which a command that reads no scores never needs

    table = ds.dataset([str(f) for f in files], format="parquet").to_table(
        columns=["key"], filter=ds.field("signature") == signature
    )
    return set(table.column("key").to_pylist())


def row_count(settings: Settings) -> int:
    """The number of stored rows, every metric and signature (from the parts' footers)."""
    root = parts.store_folder(settings, STORE)
    return sum(pq.read_metadata(f).num_rows for f in root.glob("metric=*/sig=*/part-*.parquet")) \
        if root.is_dir() else 0


def sql_source(settings: Settings) -> str | None:
    """A DuckDB ``FROM`` source over every stored row of every signature, with its ``metric`` (the
    partition's name) as a column; None while nothing is stored. Rows are as stored: a key scored by
    two concurrent runs appears twice (identical scores; :func:`read_scores` keeps one)."""
    root = parts.store_folder(settings, STORE)
    files = sorted(root.glob("metric=*/sig=*/part-*.parquet")) if root.is_dir() else []
    if not files:
        return None
    listed = "[" + ", ".join(sql_literal(str(f)) for f in files) + "]"
    return (f"read_parquet({listed}, hive_partitioning = true, hive_types = {{'metric': VARCHAR, 'sig': VARCHAR}}, "
            "union_by_name = true)")


def read_scores(settings: Settings, metric: str, signature: str, keys: Iterable[str] | None = None) -> pa.Table:
    """The stored rows of ``signature`` (optionally only ``keys``), one row per key."""
    folder = partition_dir(settings, metric, signature)
    files = sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []
    if not files:
        return SCHEMA.empty_table()
    import pyarrow.dataset as ds

    expr = ds.field("signature") == signature
    if keys is not None:
        expr = expr & ds.field("key").isin(pa.array(list(keys), pa.string()))
    table = ds.dataset([str(f) for f in files], format="parquet", schema=SCHEMA).to_table(filter=expr)
    # the same key may have been scored by two concurrent runs: identical by construction, keep one
    first_index: dict[str, int] = {}
    for i, key in enumerate(table.column("key").to_pylist()):
        first_index.setdefault(key, i)
    first = sorted(first_index.values())
    return table.take(first) if len(first) != table.num_rows else table


ScoreLookup = dict[str, tuple[float | None, Any]]
"""segment key -> (score, sufficient statistics) of one signature's stored rows: what the load step
of an evaluation reads once per signature (:func:`score_lookup`)."""


def score_lookup(settings: Settings, scored: ScoredMetric, keys: Iterable[str]) -> ScoreLookup:
    """segment key -> (score, sufficient statistics) of the stored rows of ``keys`` (:func:`read_scores`;
    keys not scored under the signature are absent)."""
    table = read_scores(settings, scored.metric, scored.signature, keys)
    return {k: (s, st) for k, s, st in zip(table.column("key").to_pylist(), table.column("score").to_pylist(),
                                           table.column("stats").to_pylist(), strict=True)}


def write_part(settings: Settings, metric: str, signature: str, run_id: str, part: int, rows: pa.Table) -> Path:
    """Write one immutable part file (:func:`assay.atomic.write_parquet`, a unique name); returns
    its path relative to ``ASSAY_HOME``."""
    target = partition_dir(settings, metric, signature) / unique_part_name(run_id, part)
    write_parquet(rows, target, schema=SCHEMA)
    return target.relative_to(settings.home)


def rows_table(
    signature: str,
    keys: Sequence[str],
    scores: Sequence[float | None],
    extra: dict[str, Sequence[float]] | None,
    stats: Sequence[Sequence[float]] | None,
    run_id: str,
    checkpoint_digest: str | None = None,
) -> pa.Table:
    """One part's rows; ``checkpoint_digest``: the checkpoint the metric scored with (a learned metric's)."""
    n = len(keys)
    now = datetime.now(UTC)
    extra_rows = [list(zip(extra, values, strict=True)) for values in zip(*extra.values(), strict=True)] \
        if extra else [None] * n
    return pa.Table.from_pydict(
        {
            "signature": [signature] * n,
            "checkpoint_digest": [checkpoint_digest] * n,
            "key": list(keys),
            "score": [None if s is None or s != s else float(s) for s in scores],
            "extra": extra_rows,
            "stats": [list(map(float, s)) for s in stats] if stats is not None else [None] * n,
            "run_id": [run_id] * n,
            "created_at": [now] * n,
        },
        schema=SCHEMA,
    )
