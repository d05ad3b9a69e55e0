"""Segment scores joined back to a dataset version's judgments: one row per judged segment
(``assay scores export``; the file is written by :func:`assay.results.export.write_table`).

Which signature the judged segments were scored under follows scoring's scope rules
(:func:`assay.jobs.scoring.scoped_signature`), so this is a job beside scoring rather than part of
the results store, which only reads and writes the stored rows."""

from __future__ import annotations

import pyarrow as pa

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import Settings, load_settings
from assay.datasets import store
from assay.datasets.human import human_scores
from assay.errors import UsageError
from assay.jobs.scoring import scope_rows, scoped_signature
from assay.metrics.base import Metric
from assay.results import segment_scores


def scored_segments(dataset: str, metric: Metric, settings: Settings | None = None,
                    signature: str | None = None) -> pa.Table:
    """Columns: dataset, version_digest, group, aspect, item_id, segment_id, system, human, human_z,
    human_raw, score, the metric's extra columns, signature."""
    settings = settings or load_settings()
    with session_scope(settings) as session:
        version = resolve(session, dataset)
        label, store_path = version.label, version.store_path
    segments = store.read_table(settings, store_path, "segments")
    if segments.num_rows == 0:
        raise UsageError(f"{label} has no segment-level judgments to export")
    keys = segment_scores.segment_keys(segments)
    signature = signature or _stored_signature(settings, store_path, metric, set(keys))
    stored = segment_scores.read_scores(settings, metric.name, signature, set(keys))
    by_key = {row["key"]: row for row in stored.select(["key", "score", "extra"]).to_pylist()}
    missing = sum(1 for key in keys if key not in by_key)
    if missing:
        raise UsageError(
            f"{missing:,} of {len(keys):,} segments of {label} have no {metric.name} score with signature "
            f"{signature}; run `assay score --dataset {dataset} --metric {metric.name} ...` first"
        )
    human_z = segments.column("human_z").to_pylist()
    human_raw = segments.column("human_raw").to_pylist()
    columns: dict[str, list] = {
        name: segments.column(name).to_pylist()
        for name in ("dataset", "version_digest", "group", "aspect", "item_id", "segment_id", "system")
    }
    columns["human"] = human_scores(segments)
    columns["human_z"] = human_z
    columns["human_raw"] = human_raw
    columns["score"] = [by_key[k]["score"] for k in keys]
    extra_names: list[str] = []
    for row in by_key.values():
        for name, _ in row["extra"] or []:
            if name not in extra_names:
                extra_names.append(name)
    for name in extra_names:
        columns[name] = [dict(by_key[k]["extra"] or []).get(name) for k in keys]
    columns["signature"] = [signature] * len(keys)
    return pa.table(columns)


def _stored_signature(settings: Settings, store_path: str, metric: Metric, keys: set[str]) -> str:
    """The signature the judged segments were scored under. For metrics whose scores depend on the
    scored set (idf, leave-one-out), that is the signature of the scope that was scored: the judged
    segments, or every output; the first that covers all judged segments is taken."""
    if not metric.depends_on_scored_set:
        return metric.signature()
    judged = scoped_signature(metric, scope_rows(settings, store_path, "judged"))
    if keys <= segment_scores.scored_keys(settings, metric.name, judged):
        return judged
    everything = scoped_signature(metric, scope_rows(settings, store_path, "all"))
    return everything if keys <= segment_scores.scored_keys(settings, metric.name, everything) else judged
