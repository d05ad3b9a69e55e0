"""The load step of an evaluation: what it reads, read once, as the arrays its kernels take.

Evaluation is load -> array kernels -> record (:mod:`assay.jobs.evaluation`). This module is the
load step of every level and protocol: it reads a version's judgment tables (through a
:class:`~assay.jobs.judgments.JudgmentFilter`, or whole for ``--protocol wmt23``), each candidate's
stored segment scores once (:func:`assay.results.segment_scores.score_lookup`) or an official
submission's scores as submitted (:mod:`assay.jobs.official_scores`), and arranges them into the
arrays of the kernels: :mod:`assay.jobs.evaluation_levels` (segment and system level, WMT DARR),
:mod:`assay.jobs.protocol_wmt23` and :mod:`assay.jobs.protocol_wmt24`, whose pure helpers say what
each protocol evaluates. Nothing here computes a statistic, and nothing there reads a store
(mt-metrics-eval keeps the same split between ``data.py`` and ``stats.py``).

Each load also returns the candidates it leaves out, with the reason, in candidate order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from assay.config import Settings
from assay.datasets import store
from assay.datasets.human import human_array, human_score
from assay.jobs import protocol_wmt23, protocol_wmt24
from assay.jobs.evaluation_cells import FloatArray
from assay.jobs.evaluation_levels import RankingPairs, RatedSegments, SlotScores, SystemSlot
from assay.jobs.judgments import JudgmentFilter
from assay.jobs.official_scores import OfficialScores, VersionOfficialScores
from assay.metrics.registry import metric_class
from assay.results.external_scores import is_external
from assay.results.segment_scores import ScoredMetric, ScoreLookup, score_lookup, segment_keys


def stored_scores(settings: Settings, scored: ScoredMetric, keys: Iterable[str]) -> ScoreLookup:
    """A candidate's stored segment scores of ``keys``, read once; none for an official submission
    (its scores are the version's own, :mod:`assay.jobs.official_scores`) or when no key is asked."""
    wanted = set(keys)
    return {} if is_external(scored.signature) or not wanted else score_lookup(settings, scored, wanted)


def candidate_segment_scores(scored: ScoredMetric, stored: ScoreLookup, official: VersionOfficialScores,
                             seg: Mapping[str, Sequence[Any]], keys: Sequence[str],
                             needed: Sequence[int] | None = None) -> FloatArray | str | None:
    """The score ``scored`` gave each judgment row of ``seg`` (columns ``group``, ``system``,
    ``segment_id``; ``keys`` their segment keys), from its one source: an official submission of
    the version reads its submitted scores per (system, segment) (:mod:`assay.jobs.official_scores`:
    the segment-score store keys by content and cannot hold two systems' different scores for one
    output); every other metric its ``stored`` segment scores (:func:`stored_scores`), by key.

    Only the ``needed`` rows (all by default) are looked up; the others are NaN, as is an undefined
    score. Returns a reason (``"<signature> (N segments unscored)"``) when the store lacks some
    needed segments, and None when the candidate is not evaluated here at all (another version's
    submission, one without segment scores, or a metric with no score on these segments)."""
    if is_external(scored.signature):
        return official.segment_scores(scored.signature, seg["group"], seg["system"], seg["segment_id"], needed)
    index = range(len(keys)) if needed is None else needed
    wanted = {keys[i] for i in index}
    missing = wanted - stored.keys()
    if missing:
        return f"{scored.signature} ({len(missing)} segments unscored)" if len(missing) < len(wanted) else None
    scores = np.full(len(keys), np.nan)
    for i in index:
        value = stored[keys[i]][0]
        if value is not None:
            scores[i] = value
    return scores


# --- segment level --------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class SegmentLevelInputs:
    """What segment level evaluates: the rated segments and each candidate's scores of them; WMT DARR's
    relative-ranking pairs and each candidate's scores of their two outputs."""

    segments: RatedSegments | None
    """None: the version has no segment-level judgments (WMT18: relative rankings only)."""
    scores: list[tuple[ScoredMetric, FloatArray]]
    """Each candidate scored on every rated segment, its scores parallel to ``segments``."""
    rankings: RankingPairs | None
    """None: no relative rankings, or not asked for (``kendall_like``)."""
    ranked_scores: list[tuple[ScoredMetric, FloatArray, FloatArray]]
    """Each candidate scored on every ranked output: its scores of the better and of the worse output."""
    skipped: list[str]


def load_segment_level(settings: Settings, store_path: str, info: Mapping[str, Any],
                       candidates: Sequence[ScoredMetric], rows: JudgmentFilter, *, rankings: bool
                       ) -> SegmentLevelInputs:
    """The segment-level inputs (with WMT DARR's when ``rankings``). A corpus-level signature (its
    rows carry sufficient statistics, corpus BLEU) is not a segment-level metric: its segment scores
    are another metric's (sentBLEU). An official submission has no DARR scores."""
    table = rows.table(settings, store_path, "segments")
    pairs = _ranking_pairs(settings, store_path, rows) if rankings else None
    segments, seg = None, {}
    if table.num_rows:
        seg = table.select(["group", "aspect", "system", "segment_id", "source", "references", "candidate",
                            "human_z", "human_raw"]).to_pydict()
        segments = RatedSegments(seg["group"], seg["aspect"], segment_keys(seg), human_array(seg))
    compared = pairs.keys if pairs is not None else set()
    wanted = (set(segments.keys) if segments is not None else set()) | compared
    official = VersionOfficialScores(settings, store_path, info)
    scores: list[tuple[ScoredMetric, FloatArray]] = []
    ranked: list[tuple[ScoredMetric, FloatArray, FloatArray]] = []
    skipped: list[str] = []
    for scored in candidates:
        if scored.has_sufficient_statistics:
            continue
        stored = stored_scores(settings, scored, wanted)
        if segments is not None:
            found = candidate_segment_scores(scored, stored, official, seg, segments.keys)
            if found is None or isinstance(found, str):
                skipped += [found] if found else []
            else:
                scores.append((scored, found))
        if pairs is not None and not is_external(scored.signature) and compared <= stored.keys():
            ranked.append((scored, _scores_of(stored, pairs.better), _scores_of(stored, pairs.worse)))
    return SegmentLevelInputs(segments, scores, pairs, ranked, skipped)


def _ranking_pairs(settings: Settings, store_path: str, rows: JudgmentFilter) -> RankingPairs | None:
    """The relative-ranking pairs (WMT DARR) whose two outputs the version holds; None without rankings."""
    rankings = rows.table(settings, store_path, "rankings").to_pylist()
    if not rankings:
        return None
    outputs = rows.table(settings, store_path, "outputs").to_pydict()
    key_of = dict(zip(zip(outputs["group"], outputs["system"], outputs["segment_id"], strict=True),
                      segment_keys(outputs), strict=True))
    groups, better, worse = [], [], []
    for r in rankings:
        b = key_of.get((r["group"], r["better_system"], r["segment_id"]))
        w = key_of.get((r["group"], r["worse_system"], r["segment_id"]))
        if b and w:
            groups.append(r["group"])
            better.append(b)
            worse.append(w)
    return RankingPairs(groups, better, worse)


def _scores_of(stored: ScoreLookup, keys: Sequence[str]) -> FloatArray:
    """The stored scores of ``keys``, NaN where undefined."""
    return np.array([stored[k][0] for k in keys], dtype=np.float64)


# --- system level ---------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class SystemLevelInputs:
    """What system level evaluates: each candidate scored on the full test sets, with its scores on
    every (group, aspect) slot of system-level judgments."""

    scores: list[tuple[ScoredMetric, list[tuple[SystemSlot, SlotScores]]]]
    skipped: list[str]


def load_system_level(settings: Settings, store_path: str, info: Mapping[str, Any],
                      candidates: Sequence[ScoredMetric], rows: JudgmentFilter) -> SystemLevelInputs:
    """The system-level inputs: per (group, aspect), the judged systems that have outputs and the
    items every one of them translated (WMT's system level), and each candidate's segment scores (or
    sufficient statistics) of those outputs; it needs every output of every judged system scored
    (``assay score --scope outputs``). An official submission's system scores are the submitted
    ones (never means of its segment scores); a slot whose systems it did not all score is left out."""
    systems = rows.table(settings, store_path, "systems").to_pylist()
    outputs = rows.table(settings, store_path, "outputs")
    if not systems or outputs.num_rows == 0:
        return SystemLevelInputs([], [])
    out = outputs.to_pydict()
    by_system: dict[tuple[str, str], dict[str, str]] = {}
    for g, s, sid, key in zip(out["group"], out["system"], out["segment_id"], segment_keys(out), strict=True):
        by_system.setdefault((g, s), {})[sid] = key
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], float]]] = {}
    for row in systems:
        judged = human_score(row["human_z"], row["human_raw"])
        if row["output_system"] and judged is not None and (row["group"], row["output_system"]) in by_system:
            groups.setdefault((row["group"], row["aspect"]), []).append((row, float(judged)))
    slots: list[tuple[SystemSlot, list[str], list[list[str]]]] = []
    for (group, aspect), judged_rows in sorted(groups.items()):
        produced = [by_system[(group, r["output_system"])] for r, _ in judged_rows]
        items = sorted(set.intersection(*(set(p) for p in produced)), key=lambda s: (len(s), s))
        slot = SystemSlot(group, aspect, [r["system"] for r, _ in judged_rows],
                          np.array([h for _, h in judged_rows], dtype=np.float64), len(items))
        slots.append((slot, [r["output_system"] for r, _ in judged_rows], [[p[i] for i in items] for p in produced]))
    judged_outputs = {k for (group, _), judged_rows in groups.items() for r, _ in judged_rows
                      for k in by_system[(group, r["output_system"])].values()}
    official = VersionOfficialScores(settings, store_path, info)
    scores: list[tuple[ScoredMetric, list[tuple[SystemSlot, SlotScores]]]] = []
    skipped: list[str] = []
    for scored in candidates:
        external = is_external(scored.signature)
        stored = stored_scores(settings, scored, judged_outputs)
        if not external and not judged_outputs <= stored.keys():
            if stored:
                skipped.append(f"{scored.signature} ({len(judged_outputs - stored.keys())} outputs unscored)")
            continue
        # the corpus aggregate is the metric's own (its formula lives with the metric)
        corpus_score = (metric_class(scored.metric).corpus_scorer(scored.signature)
                        if scored.has_sufficient_statistics else None)
        per_slot: list[tuple[SystemSlot, SlotScores]] = []
        for slot, output_systems, keys in slots:
            if external:
                submitted = official.system_scores(scored.signature, slot.group, output_systems)
                if submitted is not None:
                    per_slot.append((slot, SlotScores(submitted=submitted)))
            elif corpus_score is not None:  # systems x items x sufficient statistics
                per_slot.append((slot, SlotScores(np.array([[stored[k][1] for k in row] for row in keys],
                                                           dtype=np.float64), corpus_score)))
            else:
                per_slot.append((slot, SlotScores(np.array([[stored[k][0] for k in row] for row in keys],
                                                           dtype=np.float64))))
        scores.append((scored, per_slot))
    return SystemLevelInputs(scores, skipped)


# --- the protocols --------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Wmt24Inputs:
    """What ``--protocol wmt24`` evaluates: each (group, aspect)'s complete (systems x items) grid of
    MQM or ESA scores, and each candidate's matrix on it."""

    grids: dict[protocol_wmt24.Slot, protocol_wmt24.Grid]
    scores: dict[protocol_wmt24.Slot, list[tuple[ScoredMetric, FloatArray]]]
    skipped: list[str]


def load_wmt24(settings: Settings, store_path: str, info: Mapping[str, Any], candidates: Sequence[ScoredMetric],
               rows: JudgmentFilter, *, dataset: str = "this version") -> Wmt24Inputs:
    """The WMT24 protocol's inputs: the version's MQM or ESA segment scores
    (:func:`assay.jobs.protocol_wmt24.gold_aspects`, a :class:`~assay.errors.UsageError` naming
    ``dataset`` when it has none) as complete grids, and the scores of every segment-level candidate
    that scored all of their items. An official submission of the version (its ``info``) is
    evaluated on its submitted scores; another version's is not."""
    table = rows.table(settings, store_path, "segments")
    aspects = sorted(set(table.column("aspect").to_pylist())) if table.num_rows else []
    gold = protocol_wmt24.gold_aspects(aspects, dataset)
    table = table.filter(pc.is_in(table.column("aspect"), pa.array(gold, pa.string())))
    seg = table.select(["group", "aspect", "item_id", "segment_id", "system", "source", "references", "candidate",
                        "human_z", "human_raw"]).to_pydict()
    keys = segment_keys(seg)
    grids = protocol_wmt24.complete_grids(seg, human_array(seg), keys)
    needed = sorted({int(i) for grid in grids.values() for i in grid.rows.ravel()})
    wanted = {keys[i] for i in needed}
    scores: dict[protocol_wmt24.Slot, list[tuple[ScoredMetric, FloatArray]]] = {slot: [] for slot in grids}
    skipped: list[str] = []
    official = VersionOfficialScores(settings, store_path, info)
    for scored in candidates:
        if scored.has_sufficient_statistics:
            continue  # corpus-level (BLEU): its segment scores are another metric's (sentbleu)
        values = candidate_segment_scores(scored, stored_scores(settings, scored, wanted), official, seg, keys,
                                          needed)
        if values is None or isinstance(values, str):
            skipped += [values] if values else []
            continue
        matrices, undefined = protocol_wmt24.grid_scores(scored, values, grids)
        skipped += undefined
        for slot, matrix in matrices.items():
            scores[slot].append((scored, matrix))
    return Wmt24Inputs(grids, scores, skipped)


@dataclass(frozen=True, eq=False)
class Wmt23Inputs:
    """What ``--protocol wmt23`` evaluates: each language pair's candidates and human scores, and each
    evaluated metric's scores on each pair it scored (metric by metric)."""

    pairs: list[protocol_wmt23.PairJudgments]
    scores: list[protocol_wmt23.PairScores]
    skipped: list[str]


def load_wmt23(settings: Settings, store_path: str, info: Mapping[str, Any], candidates: Sequence[ScoredMetric],
               *, exclude_groups: Sequence[str] = (), include_human: bool | None = None,
               all_submissions: bool = False) -> Wmt23Inputs:
    """The WMT23 protocol's inputs: every language pair but ``exclude_groups`` with its settings
    (:func:`assay.jobs.protocol_wmt23.pair_settings`), and the scores of the version's official
    submissions the protocol evaluates and of every metric Assay scored on it
    (:func:`assay.jobs.protocol_wmt23.evaluated_metrics`)."""
    outputs = store.read_table(settings, store_path, "outputs").to_pydict()
    groups = sorted(set(outputs["group"]) - set(exclude_groups))
    chosen = [protocol_wmt23.pair_settings(info, g, include_human) for g in groups]
    official = OfficialScores.of(settings, store_path)
    pairs: list[protocol_wmt23.PairJudgments] = []
    if chosen:
        segments = store.read_table(settings, store_path, "segments").to_pydict()
        systems = store.read_table(settings, store_path, "systems").to_pydict()
        pairs = [protocol_wmt23.pair_judgments(p, outputs, segments, systems) for p in chosen]
    every_output = {k for pair in pairs for k in pair.keys.values()}
    scores: list[protocol_wmt23.PairScores] = []
    skipped: list[str] = []
    for scored, variant in protocol_wmt23.evaluated_metrics(candidates, info, chosen, all_submissions):
        stored = {} if variant is not None else stored_scores(settings, scored, every_output)
        for pair in pairs:
            found = protocol_wmt23.metric_matrices(scored, variant, pair, official, stored)
            if isinstance(found, str):
                if found:
                    skipped.append(f"{scored.signature} ({pair.settings.group}: {found})")
                continue
            scores.append(found)
    return Wmt23Inputs(pairs, scores, skipped)
