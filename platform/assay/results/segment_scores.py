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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
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


def scored_signatures(settings: Settings) -> list[ScoredMetric]:
    """Every (metric, signature) with scores in the store, read from the first row of each
    signature's first part."""
    root = parts.store_folder(settings, STORE)
    found = []
    for folder in sorted(root.glob("metric=*/sig=*")) if root.is_dir() else []:
        files = sorted(folder.glob("part-*.parquet"))
        if files:
            first = pq.read_table(files[0], columns=["signature", "stats"]).slice(0, 1)
            found.append(ScoredMetric(folder.parent.name.split("=", 1)[1], first.column("signature")[0].as_py(),
                                      first.column("stats")[0].is_valid))
    return found


def scored_keys(settings: Settings, metric: str, signature: str) -> set[str]:
    """Every segment key already scored under ``signature``."""
    folder = partition_dir(settings, metric, signature)
    files = sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []
    if not files:
        return set()
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
) -> pa.Table:
    n = len(keys)
    now = datetime.now(UTC)
    extra_rows = [list(zip(extra, values, strict=True)) for values in zip(*extra.values(), strict=True)] \
        if extra else [None] * n
    return pa.Table.from_pydict(
        {
            "signature": [signature] * n,
            "key": list(keys),
            "score": [None if s is None or s != s else float(s) for s in scores],
            "extra": extra_rows,
            "stats": [list(map(float, s)) for s in stats] if stats is not None else [None] * n,
            "run_id": [run_id] * n,
            "created_at": [now] * n,
        },
        schema=SCHEMA,
    )
