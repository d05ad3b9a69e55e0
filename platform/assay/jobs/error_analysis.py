"""``assay errors``: what a metric misses on an MQM dataset version.

Reads the version's rated outputs (``segments``, candidates only unless human translations are
included, :class:`assay.jobs.judgments.JudgmentFilter`), their errors (``errors``) and the metric's
stored segment scores, and runs the error analysis of :mod:`assay.mqm` on them:

* per error cell (category, or category and severity), the metric's drop per error against the
  humans' with bootstrap intervals over items, and the blind spots ranked by their ratio
  (:func:`assay.mqm.error_sensitivity`);
* the worst disagreements, one per item, with the source, the references and the errors of both
  outputs and their spans (:func:`assay.mqm.worst_disagreements`); a human preference is clear at the
  default gap of the version's kind of human score (:func:`assay.mqm.disagreements.default_clear_gap`:
  1 MQM point, 10 ESA points) unless one is given, and the gap and its basis are in the output and
  the run's parameters;
* with ``parent`` (the signature or metric name of a parent checkpoint scored on the same
  segments), which cells the child got better or worse at, paired over the same resamples
  (:func:`assay.mqm.compare_sensitivity`).

The result is stored (:mod:`assay.results.error_analysis`) and recorded as a run of kind ``errors``.
An item is ``<group>/<item_id>`` when a version holds several language pairs. A version with several
kinds of segment-level human score (an ``mtme`` version's ``mqm`` and ``da-sqm``) is analysed on its
primary one (``info["primary_human"]["seg"]``), the kind its error spans belong to.

:func:`show_item` reads one item's outputs, their scores and errors, its source and references, and
the clear human preferences the metric reverses there (:func:`assay.mqm.item_disagreements`); it
stores nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import DEFAULT_SEED, Settings, load_settings
from assay.datasets import store
from assay.datasets.names import VersionRef
from assay.datasets.rater_scores import score_kind
from assay.errors import NotFoundError, UsageError
from assay.jobs.judgments import JudgmentFilter
from assay.jobs.runs import RecordedFile, RunRecorder, new_run_id, version_inputs
from assay.mqm import (
    RatedOutputs,
    SensitivityComparison,
    SensitivityReport,
    WorstDisagreements,
    compare_sensitivity,
    error_sensitivity,
    item_disagreements,
    worst_disagreements,
)
from assay.mqm.disagreements import ClearGap, default_clear_gap, given_gap
from assay.provenance import code_version
from assay.results import error_analysis, segment_scores
from assay.results.segment_scores import ScoredMetric, score_lookup, scored_signatures, wanted_signatures

LEVELS = ("category", "category+severity")


def one_signature(settings: Settings, wanted: str, keys: set[str]) -> ScoredMetric:
    """The scored signature a request names (a signature, or a metric name with one signature
    that scored every wanted segment)."""
    found = [s for s in wanted_signatures(scored_signatures(settings), [wanted]) if not s.has_sufficient_statistics]
    complete = [s for s in found if keys <= score_lookup(settings, s, keys).keys()]
    if len(complete) == 1:
        return complete[0]
    if not complete:
        raise UsageError(f"no scores of {wanted!r} cover this dataset's rated outputs; score them first, e.g. "
                         f"`assay score --dataset NAME --metric {wanted}`")
    raise UsageError(f"{wanted!r} names {len(complete)} scored signatures; pass one of: "
                     + "; ".join(s.signature for s in complete))


def rated_outputs(settings: Settings, dataset: str | VersionRef, *, include_human: bool | None = None
                  ) -> tuple[Any, RatedOutputs, list[str]]:
    """(version row facts, the rated outputs with metric scores still zero, their segment keys)."""
    with session_scope(settings) as session:
        version = resolve(session, dataset)
        facts: dict[str, Any] = {"version": version.ref, "store_path": version.store_path,
                                 "info": dict(version.info)}
    if not store.has_table(settings, facts["store_path"], "errors"):
        raise UsageError(f"{facts['version'].label} has no error annotations; `assay errors` needs error spans "
                         "(formats mqm-tsv, mtme with .seg.rating files, esa)")
    rows = JudgmentFilter.of(facts["info"], include_human=include_human)
    seg = _primary_kind(rows.table(settings, facts["store_path"], "segments").to_pydict(), facts["info"],
                        facts["version"].label)
    errors = store.read_table(settings, facts["store_path"], "errors").to_pydict()
    by_output: dict[tuple[str, str, str], list[tuple[str, str, str, str, int | None, int | None]]] = {}
    for g, s, seg_id, cat, sev, rater, side, start, end in zip(
            errors["group"], errors["system"], errors["segment_id"], errors["category"], errors["severity"],
            errors["rater"], errors["side"], errors["start"], errors["end"], strict=True):
        # a severity-only error (ESA) has no category
        by_output.setdefault((g, s, seg_id), []).append((cat or "", sev, rater, side, start, end))
    several = len(set(seg["group"])) > 1
    items = [f"{g}/{i}" if several else i for g, i in zip(seg["group"], seg["item_id"], strict=True)]
    keys = segment_scores.segment_keys(seg)
    human = [np.nan if h is None else h for h in seg["human_raw"]]
    outputs = RatedOutputs(items, seg["system"], human, np.zeros(len(items)),
                           [by_output.get((g, s, i), []) for g, s, i in zip(seg["group"], seg["system"],
                                                                           seg["segment_id"], strict=True)],
                           [c or 1 for c in seg["rating_count"]], seg["candidate"],
                           [s or "" for s in seg["source"]], [r or [] for r in seg["references"]])
    facts["aspect"] = ",".join(sorted(set(seg["aspect"])))
    facts["kinds"] = sorted({score_kind(a) for a in seg["aspect"]})
    return facts, outputs, keys


def _primary_kind(seg: dict[str, list[Any]], info: dict[str, Any], label: str) -> dict[str, list[Any]]:
    """The segment rows of one kind of human score: all of them, or where a version holds several
    kinds, those of its primary segment-level kind (``info["primary_human"]["seg"]``, ``mtme``)."""
    kinds = [score_kind(a) for a in seg["aspect"]]
    if len(set(kinds)) <= 1:
        return seg
    primary = (info.get("primary_human") or {}).get("seg")
    if primary not in kinds:
        raise UsageError(f"{label} holds several kinds of segment-level human score ({', '.join(sorted(set(kinds)))}) "
                         "and records no primary one among them; `assay errors` analyses one kind")
    keep = [k == primary for k in kinds]
    return {column: [v for v, kept in zip(values, keep, strict=True) if kept] for column, values in seg.items()}


def clear_gap(facts: dict[str, Any], min_human_gap: float | None) -> ClearGap:
    """The gap of the human score that makes a clear preference: the one given, else the default of
    the version's kind of human score (:func:`assay.mqm.disagreements.default_clear_gap`)."""
    return given_gap(min_human_gap) if min_human_gap is not None else default_clear_gap(facts["kinds"])


def analyse_errors(dataset: str, metric: str, *, parent: str | None = None, level: str = "category",
                   n_resamples: int = 1000, seed: int = DEFAULT_SEED, top: int = 10,
                   min_human_gap: float | None = None, include_human: bool | None = None,
                   settings: Settings | None = None) -> dict[str, Any]:
    """Run the error analysis of one metric (and its parent) on a dataset version; store and return it.
    ``min_human_gap`` (points of the human score) None: the default of its kind (:func:`clear_gap`)."""
    settings = settings or load_settings()
    started = time.time()
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r} (expected {' or '.join(LEVELS)})")
    facts, outputs, keys = rated_outputs(settings, dataset, include_human=include_human)
    gap = clear_gap(facts, min_human_gap)
    key_set = set(keys)
    scored = one_signature(settings, metric, key_set)
    with_metric = outputs.with_metric(metric_vector(settings, scored, keys))
    report = error_sensitivity(with_metric, level=level, n_resamples=n_resamples, seed=seed)  # type: ignore[arg-type]
    worst = worst_disagreements(with_metric, min_human_gap=gap, top=top)
    comparison = None
    parent_scored = None
    if parent is not None:
        parent_scored = one_signature(settings, parent, key_set)
        comparison = compare_sensitivity(with_metric, outputs.with_metric(metric_vector(settings, parent_scored,
                                                                                        keys)),
                                         level=level, n_resamples=n_resamples, seed=seed)  # type: ignore[arg-type]
    run_id = new_run_id()
    version: VersionRef = facts["version"]
    head = {"run_id": run_id, **version.columns(), "aspect": facts["aspect"], "metric": scored.metric,
            "signature": scored.signature}
    cell_rows = _cell_rows(head, report, comparison, parent_scored, n_resamples, seed)
    pair_rows = _pair_rows(head, worst)
    written = [(error_analysis.SENSITIVITY.write(settings, version.name, run_id, cell_rows),
                error_analysis.SENSITIVITY_STORE, len(cell_rows)),
               (error_analysis.DISAGREEMENTS.write(settings, version.name, run_id, pair_rows),
                error_analysis.DISAGREEMENTS_STORE, len(pair_rows))]
    files = [RecordedFile.of(settings, path, kind, n) for path, kind, n in written]
    recorder = RunRecorder(
        settings, "errors",
        inputs=version_inputs(version, signatures=[s.signature for s in (scored, parent_scored) if s is not None]),
        parameters={"level": level, "n_resamples": n_resamples, "seed": seed, "top": top,
                    **gap.as_dict(), "include_human": include_human, "parent": parent},
        run_id=run_id, started=started)
    seconds = recorder.record({"cells": len(cell_rows), "disagreements": len(pair_rows)}, files)
    disagreements = worst.as_dict()
    for pair in disagreements["pairs"]:
        pair["reference_names"] = reference_names(facts["info"], pair["references"], pair["item"])
    return {"run_id": run_id, "dataset": version.label, "aspect": facts["aspect"],
            "metric": scored.metric, "signature": scored.signature,
            "parent_signature": parent_scored.signature if parent_scored else None,
            "sensitivity": report.as_dict(), "disagreements": disagreements,
            "comparison": comparison.as_dict() if comparison else None, "seconds": seconds}


def show_item(dataset: str, metric: str, item: str, *, min_human_gap: float | None = None,
              include_human: bool | None = None, settings: Settings | None = None) -> dict[str, Any]:
    """One item of a version: its source, references, every rated output with its human and metric
    scores (and ranks), its errors and their marks, and the clear human preferences the metric
    reverses. Nothing is stored."""
    settings = settings or load_settings()
    facts, outputs, keys = rated_outputs(settings, dataset, include_human=include_human)
    scored = one_signature(settings, metric, set(keys))
    shown = item_disagreements(outputs.with_metric(metric_vector(settings, scored, keys)), item,
                               min_human_gap=clear_gap(facts, min_human_gap))
    return {"dataset": facts["version"].label, "aspect": facts["aspect"], "metric": scored.metric,
            "signature": scored.signature,
            "reference_names": reference_names(facts["info"], shown.references, shown.item),
            **shown.as_dict()}


def reference_names(info: dict[str, Any], references: Sequence[str], item: str) -> list[str]:
    """What to call each reference of ``item``: the release's reference system where it names one
    (``info["reference_system"]``, one name or one per group), else numbered."""
    system = info.get("reference_system")
    if isinstance(system, dict):
        group = item.split("/", 1)[0] if "/" in item else None
        system = system.get(group) if group in system else next(iter(system.values())) if len(system) == 1 else None
    if len(references) == 1 and isinstance(system, str) and system:
        return [system]
    return [f"reference {k}" for k in range(1, len(references) + 1)]


def registered_parent(settings: Settings, dataset: str, signature: str) -> str | None:
    """The scored signature of the registered parent checkpoint of ``signature``'s checkpoint that
    covers ``dataset``'s rated outputs, or None (not a checkpoint, no registered parent, or the
    parent not scored there). The nightly diffs each checkpoint's error analysis against it."""
    from assay.catalog.models import Checkpoint
    from assay.checkpoints.registry import find

    stored = scored_signatures(settings)
    child_digest = next((s.checkpoint for s in stored if s.signature == signature), None)
    if child_digest is None:
        return None
    with session_scope(settings) as session:
        try:
            child = find(session, child_digest)
        except NotFoundError:  # an unregistered folder's scores
            return None
        parent_row = session.get(Checkpoint, child.parent_id) if child.parent_id else None
        parent = parent_row.ref if parent_row is not None else None
    if parent is None:
        return None
    _, _, keys = rated_outputs(settings, dataset)
    wanted = set(keys)
    for scored in stored:
        if parent.matches(scored.checkpoint) and wanted <= score_lookup(settings, scored, wanted).keys():
            return scored.signature
    return None


def compare_on_errors(dataset: str | VersionRef, child: str, parent: str, *, level: str = "category",
                      n_resamples: int = 1000, seed: int = DEFAULT_SEED, settings: Settings | None = None
                      ) -> tuple[dict[str, Any], SensitivityComparison]:
    """(version facts, child - parent sensitivity per error cell, paired over item resamples) for two
    scored signatures (or metric names) on a dataset version's rated outputs; nothing is stored."""
    settings = settings or load_settings()
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r} (expected {' or '.join(LEVELS)})")
    facts, outputs, keys = rated_outputs(settings, dataset)
    vectors = [metric_vector(settings, one_signature(settings, wanted, set(keys)), keys) for wanted in (child, parent)]
    comparison = compare_sensitivity(outputs.with_metric(vectors[0]), outputs.with_metric(vectors[1]),
                                     level=level, n_resamples=n_resamples, seed=seed)  # type: ignore[arg-type]
    return facts, comparison


def metric_vector(settings: Settings, scored: ScoredMetric, keys: Sequence[str]) -> np.ndarray:
    found = score_lookup(settings, scored, set(keys))
    return np.array([np.nan if found[k][0] is None else found[k][0] for k in keys], dtype=np.float64)


def _cell_rows(head: dict[str, Any], report: SensitivityReport, comparison: SensitivityComparison | None,
               parent: ScoredMetric | None, n_resamples: int, seed: int) -> list[dict[str, Any]]:
    rank = {c.name: i for i, c in enumerate(report.blind_spots(), start=1)}
    now = datetime.now(UTC)
    rows = []
    for cell in report.cells:
        row: dict[str, Any] = {**head, "level": report.level, "cell": cell.name, "outputs": cell.outputs,
                               "items_varying": cell.items_varying, "human_penalises": cell.human_penalises,
                               "blind_spot_rank": rank.get(cell.name),
                               "undetermined": report.undetermined_reason(cell),
                               "parent_signature": parent.signature if parent else None,
                               "n_resamples": n_resamples, "seed": seed, "code_version": code_version(),
                               "created_at": now}
        for name in ("metric_drop", "metric_drop_std", "human_drop", "human_drop_std", "ratio"):
            estimate = getattr(cell, name)
            row.update({name: _finite(estimate.value), f"{name}_low": _finite(estimate.low),
                        f"{name}_high": _finite(estimate.high)})
        if comparison is not None:
            change = comparison.cell(cell.name)
            difference = change.difference
            row.update({"change_std": _finite(difference.value), "change_std_low": _finite(difference.low),
                        "change_std_high": _finite(difference.high), "verdict": change.verdict})
        rows.append(row)
    return rows


def _pair_rows(head: dict[str, Any], worst: WorstDisagreements) -> list[dict[str, Any]]:
    rows = []
    for rank, pair in enumerate(worst.pairs, start=1):
        rows.append({**head, "rank": rank, "item": pair.item, "source": pair.source,
                     "references": list(pair.references), "reversed_in_item": pair.reversed_in_item,
                     "preferred_system": pair.preferred.system, "preferred_human": pair.preferred.human,
                     "preferred_metric": pair.preferred.metric, "preferred_candidate": pair.preferred.candidate,
                     "preferred_errors": json.dumps([e.as_dict() for e in pair.preferred.errors]),
                     "other_system": pair.other.system, "other_human": pair.other.human,
                     "other_metric": pair.other.metric, "other_candidate": pair.other.candidate,
                     "other_errors": json.dumps([e.as_dict() for e in pair.other.errors]),
                     "human_gap": pair.human_gap, "metric_gap_std": pair.metric_gap_std})
    return rows


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
