"""Writing a dataset version's official segment scores into the segment-score store: plan -> write -> record.

A version of a shared task's data (format ``mtme``) lists its official (metric, reference) variants in
its ``info`` (``external_metrics``, each with its signature, :mod:`assay.results.external_scores`), and
holds their scores in its ``metric_scores`` table. The segment-level ones are also written, once, into
the segment-score store, keyed by the segment key of the version's ``outputs`` row each score belongs
to, so evaluation finds them like any scored metric. They are never recomputed.

1. :func:`plan_external_scores` is pure: from the ``outputs`` and ``metric_scores`` tables it builds,
   per variant, the (segment key, score) pairs. One key can belong to several systems: two systems
   that produced the same output for a segment have the same key. Where a submission gave them
   different scores (a document-level metric sees different context; ``Random-sysname`` is random),
   the store, which holds one score per (signature, key), gets their mean; :func:`conflict_warning`
   says how many keys that concerns, and ``metric_scores`` keeps every system's own score, which is
   what the shared task's own correlations use.
2. :func:`write_external_scores` writes one part per variant whose keys are not all stored yet, under
   the variant's signature lock (:mod:`assay.jobs.signature_lock`), and records one run of kind
   ``external-scores`` (:class:`assay.jobs.runs.RunRecorder`) with the parts as its files. Nothing
   missing: nothing written, no run.
3. :func:`ensure_external_scores` does both for a stored version (an identical re-ingest of a version
   that lacks them), and :func:`has_external_scores` is the cheap check a no-op re-ingest makes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from assay.config import Settings
from assay.datasets import store
from assay.datasets.names import VersionRef
from assay.jobs.runs import RecordedFile, RunRecorder, version_inputs
from assay.jobs.signature_lock import signature_lock
from assay.results import segment_scores
from assay.results.external_scores import ExternalMetric, has_scores, parse_external, write_scores

RUN_KIND = "external-scores"
#: how several systems' scores of one segment key become the key's stored score
CONFLICTS = "mean"


@dataclass(frozen=True)
class VariantScores:
    """One variant's segment scores, one per segment key."""

    metric: ExternalMetric
    keys: list[str]
    scores: list[float]
    #: keys whose systems were given different scores (stored as their mean)
    conflicting_keys: int = 0


@dataclass
class ExternalPlan:
    variants: list[VariantScores] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(len(v.keys) for v in self.variants)


def external_metrics(info: Mapping[str, Any], level: str | None = "seg") -> list[ExternalMetric]:
    """The external metrics a version's ``info`` lists (those with ``level`` scores; every one for None)."""
    found = []
    for entry in info.get("external_metrics") or []:
        metric = parse_external(str(entry.get("signature", "")))
        if metric is not None and (level is None or level in entry.get("levels", ())):
            found.append(metric)
    return found


def plan_external_scores(outputs: pa.Table, metric_scores: pa.Table, metrics: list[ExternalMetric]) -> ExternalPlan:
    """Per variant of ``metrics``, its segment scores by segment key (the ``outputs`` row of the same
    group, system and segment). ``metric_scores`` rows without an ``outputs`` row cannot occur in a
    parsed version (the parser refuses scores of systems without output)."""
    key_of = dict(zip(zip(*(outputs.column(c).to_pylist() for c in ("group", "system", "segment_id")), strict=True),
                      segment_scores.segment_keys(outputs), strict=True))
    seg = metric_scores.filter(pc.equal(metric_scores.column("level"), "seg"))
    wanted = {(m.name, m.reference): m for m in metrics}
    grouped: dict[tuple[str, str], dict[str, list[float]]] = {}
    columns = (seg.column(c).to_pylist() for c in ("metric", "reference", "group", "system", "segment_id", "score"))
    for metric, reference, group, system, segment, score in zip(*columns, strict=True):
        if (metric, reference) in wanted and score is not None:
            grouped.setdefault((metric, reference), {}).setdefault(key_of[(group, system, segment)], []).append(score)
    plan = ExternalPlan()
    for variant, by_key in sorted(grouped.items()):
        keys = sorted(by_key)
        values = [by_key[k] for k in keys]
        plan.variants.append(VariantScores(
            wanted[variant], keys, [v[0] if len(set(v)) == 1 else math.fsum(v) / len(v) for v in values],
            sum(len(set(v)) > 1 for v in values)))
    return plan


def conflict_warning(plan: ExternalPlan) -> str | None:
    """One sentence about the keys whose systems a submission scored differently, if any."""
    hit = sorted(((v.conflicting_keys, v.metric.name + "-" + v.metric.reference) for v in plan.variants
                  if v.conflicting_keys), reverse=True)
    if not hit:
        return None
    worst = ", ".join(f"{name} {n:,}" for n, name in hit[:3])
    return (f"In {len(hit)} of {len(plan.variants)} official segment-level variants, systems with the same output for "
            f"a segment have different scores (most: {worst} segment keys); the segment-score store holds one score "
            f"per segment content, their {CONFLICTS}, while metric_scores keeps each system's own score.")


def write_external_scores(settings: Settings, plan: ExternalPlan, version: VersionRef,
                          started: float | None = None) -> dict[str, Any]:
    """Write each variant's keys that are not stored yet (one part per variant, under its signature
    lock) and record one ``external-scores`` run when anything was written. Returns a summary."""
    recorder = RunRecorder(settings, RUN_KIND, inputs={}, parameters={"conflicts": CONFLICTS})
    if started is not None:
        recorder.started = started
    run_id = recorder.run_id
    files: list[RecordedFile] = []
    written: list[str] = []
    for variant in plan.variants:
        metric = variant.metric
        with signature_lock(settings, metric.name, metric.signature):
            stored = segment_scores.scored_keys(settings, metric.name, metric.signature) \
                if has_scores(settings, metric) else set()
            todo = [i for i, key in enumerate(variant.keys) if key not in stored]
            if not todo:
                continue
            path = write_scores(settings, metric, [variant.keys[i] for i in todo], [variant.scores[i] for i in todo],
                                run_id)
        files.append(RecordedFile.of(settings, path, "segment_scores", len(todo)))
        written.append(metric.signature)
    summary = {"variants": len(plan.variants), "written": len(written), "rows": sum(f.rows for f in files),
               "conflicting_keys": sum(v.conflicting_keys for v in plan.variants)}
    if not files:
        return {**summary, "run_id": None}
    recorder.inputs = version_inputs(version, signatures=written)
    recorder.record({**summary, "files": [f.path for f in files]}, files)
    return {**summary, "run_id": run_id}


def ensure_external_scores(settings: Settings, version: VersionRef, store_path: str,
                           info: Mapping[str, Any]) -> dict[str, Any] | None:
    """Write what is missing of a stored version's official segment scores; None when it lists none."""
    metrics = external_metrics(info)
    if not metrics or not store.has_table(settings, store_path, "metric_scores"):
        return None
    outputs = store.read_table(settings, store_path, "outputs")
    scores = store.read_table(settings, store_path, "metric_scores")
    return write_external_scores(settings, plan_external_scores(outputs, scores, metrics), version)


def has_external_scores(settings: Settings, info: Mapping[str, Any]) -> bool:
    """Whether every segment-level variant a version lists has stored scores: one folder listing per
    variant, the check of a no-op re-ingest (a version ingested through the parser wrote every key)."""
    return all(has_scores(settings, metric) for metric in external_metrics(info))
