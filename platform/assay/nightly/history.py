"""A checkpoint's nightly history: its correlations as each completed nightly evaluation stored them,
against the time that evaluation finished. One read for every view of it: the report's nightly
section (:mod:`assay.report.sections.nightly`), ``assay checkpoints show --json`` and the served
checkpoint page (:mod:`assay.serve`).

A point is one completed ledger row (:class:`assay.catalog.models.SuiteEvaluation`) and one stored
correlation of its checkpoint (:mod:`assay.results.correlations`): nothing is recomputed. Checkpoints
of one lineage (the same root ancestor through ``checkpoints.parent_id``) share the lineage name, so
a chart can draw them as one line.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint, DatasetVersion, Suite, SuiteEvaluation
from assay.checkpoints.labels import lineage_text, row_checkpoint
from assay.checkpoints.ref import CheckpointRef
from assay.config import Settings
from assay.results import correlations

__all__ = ["HISTORY_FIELDS", "as_utc", "history_rows", "nightly_points"]

#: what :func:`history_rows` keeps of a point (JSON-ready)
HISTORY_FIELDS = ("suite", "suite_signature", "label", "level", "statistic", "group", "aspect", "value", "ci_low",
                  "ci_high", "n", "unit", "signature", "run_id", "checkpoint", "lineage", "lineage_text")


def as_utc(moment: datetime) -> datetime:
    """Timestamps from SQLite come back naive; the catalog writes UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _lineages(rows: list[Checkpoint]) -> dict[str, dict[str, Any]]:
    """digest -> name, lineage label and the name of its root ancestor (the lineage's name)."""
    by_id = {r.id: r for r in rows}
    names = {r.id: r.name for r in rows}
    out = {}
    for row in rows:
        root, seen = row, {row.id}
        while root.parent_id is not None and root.parent_id in by_id and root.parent_id not in seen:
            root = by_id[root.parent_id]
            seen.add(root.id)
        label = {"name": row.name, "operation": (row.lineage or {}).get("operation"),
                 "parent": names.get(row.parent_id) if row.parent_id is not None else None}
        out[row.digest] = {"name": row.name, "text": lineage_text(label), "root": root.name}
    return out


def nightly_points(settings: Settings, checkpoint_digest: str | None = None) -> list[dict[str, Any]]:
    """One point per completed ledger row and stored correlation of its checkpoint (only
    ``checkpoint_digest``'s where given): the correlation row, with the suite, its signature, the
    time the evaluation finished, the dataset version, the checkpoint's name, lineage root and
    lineage text. Oldest first."""
    with session_scope(settings) as session:
        query = (select(SuiteEvaluation, Suite, DatasetVersion)
                 .join(Suite, Suite.id == SuiteEvaluation.suite_id)
                 .join(DatasetVersion, DatasetVersion.id == SuiteEvaluation.dataset_version_id)
                 .where(SuiteEvaluation.status == "completed", SuiteEvaluation.evaluate_run_id.is_not(None),
                        SuiteEvaluation.finished_at.is_not(None)))
        if checkpoint_digest is not None:
            query = query.where(SuiteEvaluation.checkpoint_digest == checkpoint_digest)
        found = session.execute(query.order_by(SuiteEvaluation.finished_at, SuiteEvaluation.id)).all()
        ledger = [(e.checkpoint_digest, e.evaluate_run_id, as_utc(e.finished_at), e.suite_signature,
                   f"{s.name}@{s.version}", v.id, v.ref) for e, s, v in found
                  if e.finished_at is not None]
        lineages = _lineages(list(session.scalars(select(Checkpoint))))
    points = []
    for digest, run_id, finished, suite_signature, suite, version_id, version in ledger:
        stored = correlations.read_run(settings, version.name, run_id)
        checkpoint = CheckpointRef(digest)
        unregistered = f"unregistered {checkpoint.short}"
        lineage = lineages.get(digest, {"name": unregistered, "text": unregistered, "root": unregistered})
        for row in stored:
            if not checkpoint.matches(row_checkpoint(row)) or row["value"] is None:
                continue
            points.append({**row, "suite": suite, "suite_signature": suite_signature, "finished_at": finished,
                           "dataset_version_id": version_id, "checkpoint_digest": digest,
                           "checkpoint": lineage["name"], "lineage": lineage["root"],
                           "lineage_text": lineage["text"], "version": version, "label": version.label})
    return points


def history_rows(settings: Settings, checkpoint_digest: str, *, lineage: bool = False) -> list[dict[str, Any]]:
    """:func:`nightly_points` of one checkpoint (with ``lineage``: of every checkpoint of its lineage,
    the same root ancestor) as JSON-ready rows (:data:`HISTORY_FIELDS`, the checkpoint's digest, the
    finish time in ISO 8601 UTC), oldest first."""
    if lineage:
        points = nightly_points(settings)
        roots = {p["lineage"] for p in points if p["checkpoint_digest"] == checkpoint_digest}
        points = [p for p in points if p["lineage"] in roots]
    else:
        points = nightly_points(settings, checkpoint_digest)
    return [{**{k: p.get(k) for k in HISTORY_FIELDS}, "checkpoint_digest": p["checkpoint_digest"],
             "finished_at": p["finished_at"].isoformat()} for p in points]
