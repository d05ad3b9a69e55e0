"""The WMT23 metrics-task protocol (``assay evaluate --protocol wmt23``).

WMT23 ranked metrics on MQM judgments by four statistics and their weighted average
(google-research/mt-metrics-eval ``tasks.WMT23()``, run as its ``wmt23_metrics.ipynb`` does, and
Freitag et al. 2023, "Results of WMT23 Metrics Shared Task"):

* per language pair, **system-level Pearson** (no grouping) of the metric's system scores with the
  humans' system scores;
* per language pair, **segment-level Pearson** without grouping: one correlation over every
  (system, segment) cell that has a human score;
* per language pair, **segment-level acc-t grouped by item** (``KendallWithTiesOpt``, variant
  acc23, ``sample_rate=1.0``; Deutsch et al. 2023): per source segment, the share of system pairs
  the metric orders (or ties) as the humans do, at the one metric tie threshold that maximises the
  mean over items;
* over all language pairs, **system-level pairwise accuracy** (Kocmi et al. 2021), pooled: the
  agreeing system pairs of every pair over all its system pairs (``CompareMetricsWithGlobalAccuracy``);
* the **WMT23 average**: MTME's ``TaskSetResults.AverageCorrs`` with ``tasks.WMT23``'s weights,
  1/4 for the pooled accuracy and 3/4 shared by the per-pair statistics, each mapped to [0, 1]
  first (a correlation r as (r + 1) / 2, an accuracy as it is).

Settings, each from mt-metrics-eval (``tasks.Task``, ``data.GetCorrelations``, ``meta_info``) and
each in the rows' ``protocol_signature``:

* the gold is the pair's standard human score at each level (``std_gold``: ``mqm``);
* the reference is the pair's standard reference (``std_ref``): a submission that used another
  reference (``synthetic_ref``) is not evaluated, and the reference's own output is not a candidate;
* human translations are candidates only for the pairs ``tasks.WMT23`` names as having several
  references (en-he, he-en); outlier systems (``outlier_systems``: en-de's ``synthetic_ref``) are
  left out; a system without a human score at a level is not a candidate at that level;
* only the primary submissions are evaluated (``primary_metrics``), unless ``all_submissions``.

The pair's settings are the version's (``assay.datasets.formats.mtme`` records MTME's metadata
when it ingests the data), else mt-metrics-eval's own metadata
(:func:`assay.datasets.formats.mtme_meta.facts_for`).

Official submissions are read as they were submitted, never recomputed: their segment scores and
their system scores come from the version's ``metric_scores`` table (one row per system and
segment, so two systems with the same output keep their own scores, as the submitters gave them).
A metric Assay scored (any signature in the segment-score store covering the version's outputs)
is placed among them: its segment scores are its own; its system score is the mean of its segment
scores over the whole test set, as the official system scores are (the corpus score where the
signature stores sufficient statistics, corpus BLEU), which needs ``assay score --scope outputs``.

Confidence intervals (mt-metrics-eval's WMT23 run has none, ``k=0``): the segment-level statistics
resample items (source segments), shared by every metric; the system-level statistics resample
systems, shared by every metric, because an official system score cannot be recomputed from
resampled segments. The average's replicate is the weighted sum of its parts' replicates. Metrics
are compared with Williams' test (system Pearson) or the paired bootstrap test (the rest).

This module reads nothing: :func:`assay.jobs.evaluation_inputs.load_wmt23` reads the version's
tables and scores and arranges them with :func:`pair_judgments` and :func:`metric_matrices`;
:func:`wmt23_cells` is the kernel, on those arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from assay.datasets.formats.mtme_meta import facts_for
from assay.datasets.human import human_score
from assay.errors import UsageError
from assay.jobs.evaluation_cells import (
    Cell,
    FloatArray,
    Resamples,
    degenerate_reason,
    item_set_digest,
    widest_spread,
)
from assay.jobs.official_scores import OfficialScores, official_candidates
from assay.metrics.registry import metric_class
from assay.results import segment_scores
from assay.results.external_scores import ExternalMetric, parse_external
from assay.results.segment_scores import ScoredMetric, ScoreLookup
from assay.stats.correlation import pearson
from assay.stats.grouped_acc import per_group_pairwise, resampled_grouped_mean
from assay.stats.pairwise import pair_counts, tie_calibration
from assay.stats.resampled import ResampledPairs, resampled_grouped_pearson

PROTOCOL = "wmt23"
PEARSON, ACC_T, ACCURACY, AVERAGE = "pearson", "acc_t_item", "pairwise_accuracy", "wmt23"
STATISTICS = (PEARSON, ACC_T, ACCURACY, AVERAGE)
"""Stored as ``sys``/``pearson``, ``seg``/``pearson``, ``seg``/``acc_t_item`` per language pair;
``sys``/``pairwise_accuracy`` and ``avg``/``wmt23`` for group ``all``."""
MULTIPLE_REFERENCE_PAIRS = frozenset({"en-he", "he-en"})
"""``tasks.WMT23``'s ``lps_with_multiple_refs``: the pairs whose human translations are candidates."""
ACCURACY_SHARE = 0.25
"""The pooled accuracy's weight in the average: ``tasks.WMT23`` weighs it as many times as there
are pairs, and each pair has three statistics, so it is L / (L + 3L) = 1/4 for any L pairs."""


@dataclass(frozen=True)
class PairSettings:
    """What the protocol evaluates on one language pair (mt-metrics-eval's ``MetaInfo``)."""

    group: str
    reference: str
    """The standard reference (``std_ref``)."""
    gold: Mapping[str, str]
    """The primary human score per level (``std_gold``): ``{"seg": "mqm", "sys": "mqm"}``."""
    outliers: frozenset[str]
    primary: frozenset[str]
    include_human: bool
    human_systems: frozenset[str]
    source: str

    def uses(self, metric: ExternalMetric) -> bool:
        """The variant used the standard reference, or none (``data.GetCorrelations``: its
        references are a subset of the main references)."""
        return metric.is_reference_free or set(metric.reference.split(".")) <= {self.reference}

    def evaluates(self, metric: ExternalMetric, all_submissions: bool) -> bool:
        """The protocol evaluates the variant: it used the standard reference (or none), and it is a
        primary submission unless ``all_submissions`` (every one where no primary is named)."""
        return self.uses(metric) and (all_submissions or not self.primary or metric.name in self.primary)


@dataclass
class Evaluated:
    """What :func:`wmt23_cells` computed."""

    cells: list[Cell]
    notes: list[str]
    signature: str
    """The protocol's settings, for every row's ``protocol_signature``."""


@dataclass
class PairJudgments:
    """One language pair's candidate systems and items, with the human scores (:func:`pair_judgments`)."""

    settings: PairSettings
    systems: list[str]
    items: list[str]
    human: FloatArray
    """(systems x items) segment scores, NaN where unrated."""
    sys_systems: list[str]
    sys_human: FloatArray
    left_out: set[str] = field(default_factory=set)
    """Systems with output that are not candidates: the reference's, outliers, human ones."""
    keys: dict[tuple[str, str], str] = field(default_factory=dict)
    """(system, segment id) -> segment key of the version's output."""

    @property
    def rated_items(self) -> np.ndarray:
        return np.flatnonzero((~np.isnan(self.human)).any(axis=0))


def pair_settings(info: Mapping[str, Any], group: str, include_human: bool | None = None) -> PairSettings:
    """The protocol's settings on ``group`` as the version records them (the ``mtme`` format writes
    mt-metrics-eval's metadata, or its documented fallback, into the version's info); where the
    version has none, mt-metrics-eval's own metadata for its test set
    (:func:`~assay.datasets.formats.mtme_meta.facts_for`). ``include_human`` None follows
    ``tasks.WMT23`` (:data:`MULTIPLE_REFERENCE_PAIRS`)."""
    test_set = str(info.get("test_set") or PROTOCOL)
    facts = facts_for(test_set, group)
    reference = info.get("reference_system") or (facts.std_ref if facts else None)
    gold = dict(info.get("primary_human") or (facts.std_gold if facts else {}))
    if not reference or "seg" not in gold or "sys" not in gold:
        raise UsageError(f"--protocol wmt23 needs the standard reference and the primary human score of {group} at "
                         f"segment and system level; mt-metrics-eval's metadata has no {test_set} {group}, and the "
                         f"version records {'neither' if not reference else 'no primary human score per level'} "
                         "(re-ingest it naming them: -o reference=NAME -o primary_human=KIND)")

    def listed(key: str, fallback: frozenset[str]) -> frozenset[str]:
        return frozenset(info[key]) if key in info else fallback

    return PairSettings(
        group=group, reference=str(reference), gold={level: str(kind) for level, kind in gold.items()},
        outliers=listed("outlier_systems", facts.outlier_systems if facts else frozenset()),
        primary=listed("primary_metrics", facts.primary_metrics if facts else frozenset()),
        include_human=group in MULTIPLE_REFERENCE_PAIRS if include_human is None else include_human,
        human_systems=listed("human_systems", frozenset()),
        source=str(info.get("metadata_source") or (facts.source if facts else "the version's info")))


def signature(pairs: Sequence[PairSettings], all_submissions: bool) -> str:
    """The protocol's settings as stored in every row's ``protocol_signature``."""
    per_pair = ",".join(
        f"{p.group}:ref={p.reference};gold=seg:{p.gold['seg']}/sys:{p.gold['sys']};"
        f"human={'in' if p.include_human else 'out'};outliers={'+'.join(sorted(p.outliers)) or 'none'}"
        for p in pairs)
    return (f"sys:pearson,grouping=none,official_sys_scores|seg:pearson,grouping=none"
            f"|acc_t_item:acc23,tie-calibrated,grouping=item,sample_rate=1.0"
            f"|pairwise_accuracy:pooled_over_pairs|avg:accuracy={ACCURACY_SHARE},rest=0.75,pearson_as_(r+1)/2"
            f"|metrics:{'all' if all_submissions else 'primary'}|pairs:{per_pair}"
            "|ci:seg=items,sys=systems")


@dataclass(frozen=True, eq=False)
class PairScores:
    """One metric's scores on one language pair (:func:`metric_matrices`): (systems x items) segment
    scores parallel to the pair's ``human``, and system scores parallel to its ``sys_human``; None
    where the metric has none at that level."""

    scored: ScoredMetric
    pair: PairJudgments
    seg: FloatArray | None
    sys: FloatArray | None


def wmt23_cells(pairs: Sequence[PairJudgments], scores: Sequence[PairScores], resamples: Resamples, *,
                all_submissions: bool = False) -> Evaluated:
    """Every statistic of the protocol for every metric's scores on the ``pairs`` evaluated (see the
    module docstring): ``scores`` holds each (metric, pair) the metric has scores on, metric by
    metric; ``all_submissions`` is only recorded in the signature."""
    notes = [f"{p.settings.group}: gold {p.settings.gold['seg']} (seg) / {p.settings.gold['sys']} (sys), reference "
             f"{p.settings.reference}, {len(p.systems)} systems x {len(p.rated_items)} rated items, "
             f"{len(p.sys_systems)} systems at system level; left out: "
             f"{', '.join(sorted(p.left_out)) or 'none'} ({p.settings.source})" for p in pairs]
    cells: list[Cell] = []
    accuracy_parts: dict[str, list[tuple[ScoredMetric, tuple[PairJudgments, FloatArray]]]] = {}
    per_pair_cells: dict[str, list[Cell]] = {}
    for found in scores:
        scored, pair, sys_scores = found.scored, found.pair, found.sys
        new = _pair_cells(pair, scored, found.seg, sys_scores, resamples)
        cells += new
        per_pair_cells.setdefault(scored.signature, []).extend(new)
        if sys_scores is not None:
            accuracy_parts.setdefault(scored.signature, []).append((scored, (pair, sys_scores)))
    accuracy = {sig: _pooled_accuracy(parts, resamples) for sig, parts in accuracy_parts.items()
                if len(parts) == len(pairs)}
    cells += accuracy.values()
    for sig, acc in accuracy.items():
        average = _average(acc, per_pair_cells.get(sig, []), len(pairs))
        if average is not None:
            cells.append(average)
    if not any(c.statistic == AVERAGE for c in cells) and cells:
        notes.append("no metric has every statistic of the protocol, so none has the WMT23 average "
                     "(a metric Assay scored needs `assay score --scope outputs` for its system scores)")
    return Evaluated(cells, notes, signature([p.settings for p in pairs], all_submissions))


# --- what is evaluated --------------------------------------------------------------------------

def evaluated_metrics(candidates: Sequence[ScoredMetric], info: Mapping[str, Any], chosen: Sequence[PairSettings],
                      all_submissions: bool) -> list[tuple[ScoredMetric, ExternalMetric | None]]:
    """The signatures evaluated: the version's own official variants (the signatures its info
    records) that the protocol evaluates, and every metric Assay scored (each with its variant, or
    None). Another version's submissions (another pair, or a corrected release) are left out."""
    own = {c.signature for c in official_candidates(info)}
    picked: dict[str, tuple[ScoredMetric, ExternalMetric | None]] = {}
    for scored in candidates:
        variant = parse_external(scored.signature)
        if variant is None:
            picked[scored.signature] = (scored, None)
        elif scored.signature in own and all(p.evaluates(variant, all_submissions) for p in chosen):
            picked[scored.signature] = (scored, variant)
    return list(picked.values())


def pair_judgments(chosen: PairSettings, outputs: Mapping[str, Sequence[Any]], segments: Mapping[str, Sequence[Any]],
                   systems_table: Mapping[str, Sequence[Any]]) -> PairJudgments:
    """The candidates of one pair and their human scores at both levels, from the version's
    ``outputs``, ``segments`` and ``systems`` tables (as ``to_pydict()``)."""
    group = chosen.group
    human_systems = set(chosen.human_systems)
    human_systems |= {s for g, s, h in zip(segments["group"], segments["system"], segments["is_human"], strict=True)
                      if g == group and h}
    human_systems |= {s for g, s, h in zip(systems_table["group"], systems_table["system"],
                                           systems_table["is_human"], strict=True) if g == group and h}
    in_group = [i for i, g in enumerate(outputs["group"]) if g == group]
    keys = dict(zip([(outputs["system"][i], outputs["segment_id"][i]) for i in in_group],
                    segment_scores.segment_keys(outputs, in_group), strict=True))
    left_out = {chosen.reference} | chosen.outliers | (set() if chosen.include_human else human_systems)
    items = sorted({sid for _, sid in keys}, key=lambda v: (0, int(v), v) if v.isdigit() else (1, 0, v))
    gold = {(s, sid): human_score(z, raw)
            for g, a, s, sid, z, raw in zip(segments["group"], segments["aspect"], segments["system"],
                                            segments["segment_id"], segments["human_z"], segments["human_raw"],
                                            strict=True) if g == group and a == chosen.gold["seg"]}
    systems = sorted({s for s, _ in keys} - left_out & {s for (s, _), v in gold.items() if v is not None})
    human = np.array([[np.nan if gold.get((s, i)) is None else gold[(s, i)] for i in items] for s in systems],
                     dtype=np.float64).reshape(len(systems), len(items))
    sys_gold = {s: human_score(z, raw)
                for g, a, s, z, raw in zip(systems_table["group"], systems_table["aspect"], systems_table["system"],
                                           systems_table["human_z"], systems_table["human_raw"], strict=True)
                if g == group and a == chosen.gold["sys"]}
    sys_systems = sorted(s for s in {s for s, _ in keys} - left_out if sys_gold.get(s) is not None)
    return PairJudgments(chosen, systems, items, human, sys_systems,
                         np.array([sys_gold[s] for s in sys_systems], dtype=np.float64),
                         left_out & {s for s, _ in keys}, keys)


def metric_matrices(scored: ScoredMetric, variant: ExternalMetric | None, pair: PairJudgments,
                    official: OfficialScores, stored: ScoreLookup) -> PairScores | str:
    """One metric's segment scores (systems x items) and system scores on one pair (None where the
    metric has none at that level): an official ``variant``'s as submitted (``official``), else
    from its ``stored`` segment scores (:func:`assay.results.segment_scores.score_lookup`, keys of
    other pairs ignored), a system's score being their mean over the test set or, where they carry
    sufficient statistics, the corpus score. A string says why the metric is left out ("" silently:
    it was not scored on this version)."""
    group = pair.settings.group
    if variant is not None:
        if not official.has(group, variant):
            return ""
        seg = official.matrix(group, variant, "seg", pair.systems, pair.items)
        sys_matrix = official.matrix(group, variant, "sys", pair.sys_systems, [""])
        sys_scores = None if sys_matrix is None or np.isnan(sys_matrix).any() else sys_matrix[:, 0]
        return PairScores(scored, pair, seg, sys_scores)
    lookup = {k: stored[k] for k in set(pair.keys.values()) if k in stored}
    if not lookup:
        return ""
    rated = {pair.keys[(s, i)] for r, s in enumerate(pair.systems) for c, i in enumerate(pair.items)
             if not np.isnan(pair.human[r, c])}
    seg = None
    if not scored.has_sufficient_statistics:  # a corpus-level metric's segment scores are another metric's
        if not rated <= lookup.keys():
            return f"{len(rated - lookup.keys())} rated segments unscored"
        seg = np.array([[_float(lookup[pair.keys[(s, i)]][0]) if pair.keys[(s, i)] in lookup else np.nan
                         for i in pair.items] for s in pair.systems], dtype=np.float64)
    everything = {pair.keys[(s, i)] for s in pair.sys_systems for i in pair.items if (s, i) in pair.keys}
    sys_scores = None
    if everything <= lookup.keys():
        if scored.has_sufficient_statistics:
            corpus = metric_class(scored.metric).corpus_scorer(scored.signature)
            sys_scores = np.array([corpus(np.array([lookup[pair.keys[(s, i)]][1] for i in pair.items
                                                    if (s, i) in pair.keys], dtype=np.float64))
                                   for s in pair.sys_systems], dtype=np.float64)
        else:
            sys_scores = np.array([np.mean([_float(lookup[pair.keys[(s, i)]][0]) for i in pair.items
                                            if (s, i) in pair.keys]) for s in pair.sys_systems], dtype=np.float64)
    return PairScores(scored, pair, seg, sys_scores)


def _float(value: float | None) -> float:
    return np.nan if value is None else float(value)


# --- the statistics -------------------------------------------------------------------------------

def _pair_cells(pair: PairJudgments, scored: ScoredMetric, seg: FloatArray | None, sys_scores: FloatArray | None,
                resamples: Resamples) -> list[Cell]:
    """System Pearson, segment Pearson and item-grouped acc-t of one metric on one pair."""
    group = pair.settings.group
    cells: list[Cell] = []
    if sys_scores is not None and len(pair.sys_systems) >= 2:
        h = pair.sys_human
        counts = resamples.counts(f"{PROTOCOL}/sys/{group}", len(pair.sys_systems))
        value = pearson(h, sys_scores).value
        cells.append(Cell(group, pair.settings.gold["sys"], PEARSON, scored, None if np.isnan(value) else value,
                          ResampledPairs(h, sys_scores, counts).pearson(), len(h), 0,
                          item_set_digest([f"{s}" for s in pair.sys_systems]), h, sys_scores, list(pair.sys_systems),
                          level="sys", unit="systems", degenerate=degenerate_reason(widest_spread(sys_scores, h))))
    if seg is None:
        return cells
    rated = ~np.isnan(pair.human)
    if np.isnan(seg[rated]).any():
        return cells  # a score missing where the humans rated: no segment-level statistic
    items = pair.rated_items
    human, metric = pair.human[:, items], np.where(rated, seg, 0.0)[:, items]
    mask = rated[:, items]
    n_systems = len(pair.systems)
    item_counts = resamples.counts(f"{PROTOCOL}/seg/{group}", len(items))
    item_set = item_set_digest([f"{s}/{pair.items[i]}" for r, s in enumerate(pair.systems) for i in items
                                if rated[r, i]])
    # segment Pearson over every rated cell; a resample draws items, and with them their cells
    h_cells, m_cells = human[mask], metric[mask]
    cell_item = np.broadcast_to(np.arange(len(items)), human.shape)[mask]
    value = pearson(h_cells, m_cells).value
    gold = pair.settings.gold["seg"]
    cells.append(Cell(group, gold, PEARSON, scored, None if np.isnan(value) else value,
                      resampled_grouped_pearson(h_cells, m_cells, cell_item, item_counts), int(mask.sum()), 0,
                      item_set, level="seg", unit="segments",
                      degenerate=degenerate_reason(widest_spread(m_cells, h_cells))))
    calibrated = tie_calibration(human.ravel(), metric.ravel(), statistic="acc_23", num_systems=n_systems,
                                 grouping="item")
    per_item = per_group_pairwise(human.ravel(), metric.ravel(), epsilon=calibrated.epsilon,
                                  num_systems=n_systems, grouping="item")
    spread = widest_spread(np.where(mask, metric, np.nan), human, by_item=True)
    cells.append(Cell(group, gold, ACC_T, scored, float(calibrated.value),
                      resampled_grouped_mean(per_item.values, item_counts), per_item.n_groups, 0, item_set,
                      level="seg", unit="items", epsilon=calibrated.epsilon,
                      degenerate=degenerate_reason(spread, within="item", epsilon=calibrated.epsilon)))
    return cells


def _pooled_accuracy(parts: list[tuple[ScoredMetric, tuple[PairJudgments, FloatArray]]], resamples: Resamples) -> Cell:
    """System-level pairwise accuracy pooled over the pairs: agreeing system pairs over all system
    pairs (mt-metrics-eval ``CompareMetricsWithGlobalAccuracy`` with ``stats.Agreement``: equal
    signs of the two differences, so a pair both tie agrees)."""
    scored = parts[0][0]
    agree, total = 0, 0
    replicate_agree: FloatArray = np.zeros(resamples.n_resamples)
    replicate_total = 0.0
    spreads: list[float] = []
    for _, (pair, sys_scores) in parts:
        counts = pair_counts(pair.sys_human, sys_scores)
        agree += counts.concordant + counts.ties_both
        total += counts.n_pairs
        drawn = resamples.counts(f"{PROTOCOL}/sys/{pair.settings.group}", len(pair.sys_systems))
        replicate_agree = replicate_agree + ResampledPairs(pair.sys_human, sys_scores, drawn).agreements(0.0)
        replicate_total += counts.n_pairs
        spread = widest_spread(sys_scores, pair.sys_human)
        if spread is not None:
            spreads.append(spread)
    pairs = [p for _, (p, _) in parts]
    gold = "+".join(sorted({p.settings.gold["sys"] for p in pairs}))
    return Cell("all", gold, ACCURACY, scored, agree / total if total else None,
                np.asarray(replicate_agree / replicate_total if replicate_total else np.nan, dtype=np.float64),
                sum(len(p.sys_systems) for p in pairs), 0,
                item_set_digest([f"{p.settings.group}/{s}" for p in pairs for s in p.sys_systems]),
                level="sys", unit="systems", degenerate=degenerate_reason(max(spreads) if spreads else None))


def _average(accuracy: Cell, per_pair: list[Cell], n_pairs: int) -> Cell | None:
    """The WMT23 average (``TaskSetResults.AverageCorrs`` with ``tasks.WMT23``'s weights): None
    unless the metric has every statistic on every pair."""
    wanted = {(c.group, c.level, c.statistic) for c in per_pair}
    if accuracy.value is None or len(wanted) != 3 * n_pairs or any(c.value is None for c in per_pair):
        return None
    share = (1 - ACCURACY_SHARE) / len(per_pair)
    value = ACCURACY_SHARE * accuracy.value
    replicates = ACCURACY_SHARE * accuracy.replicates
    for c in per_pair:
        part = float(c.value) if c.value is not None else float("nan")
        if c.statistic == PEARSON:  # a correlation's range is [-1, 1]: mapped to [0, 1] as an accuracy's
            value += share * (part + 1) / 2
            replicates = replicates + share * (c.replicates + 1) / 2
        else:
            value += share * part
            replicates = replicates + share * c.replicates
    degenerate = [f"{c.level} {c.statistic} {c.group}" for c in (accuracy, *per_pair) if c.degenerate]
    return Cell("all", accuracy.aspect, AVERAGE, accuracy.scored, value, np.asarray(replicates, dtype=np.float64),
                sum(c.n for c in per_pair if c.statistic == PEARSON and c.level == "seg"), 0,
                item_set_digest([accuracy.item_set, *(c.item_set for c in per_pair)]), level="avg",
                unit="segments", degenerate=("its parts are degenerate: " + ", ".join(degenerate)) if degenerate
                else None)
