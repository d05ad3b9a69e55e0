"""The kernels of the two default levels: one metric's segment-level correlations, its WMT DARR
Kendall-like and its system-level correlations, computed from arrays already loaded.

Like torchmetrics' functional API and mt-metrics-eval's ``stats``, a kernel takes the human and
metric scores as arrays (:class:`RatedSegments`, :class:`RankingPairs`, :class:`SystemSlot` and
:class:`SlotScores` hold them, parallel) and returns :class:`~assay.jobs.evaluation_cells.Cell` s;
it reads and writes nothing. :mod:`assay.jobs.evaluation_inputs` reads a version's judgments and the
candidates' scores into these arrays; :mod:`assay.jobs.evaluation` ranks, tests and records the
cells. The statistics are :mod:`assay.stats`'s:

* segment level (BLEURT §5, BERTScore §4): each statistic per (group, aspect) over the rated
  segments both the humans and the metric scored, with replicates from the group's resample counts
  (:class:`assay.stats.resampled.ResampledPairs`); tie-calibrated acc_23 (acc-t, Deutsch et al.
  2023) keeps the threshold calibrated on the full sample in every replicate;
* WMT DARR Kendall-like (Ma et al. 2018) from relative-ranking pairs, with the year's metric-tie
  policy (:func:`assay.stats.kendall_like_from_pairs`), resampling the pairs;
* system level (WMT, BERTScore Table 1): a system's metric score is the corpus score of its summed
  sufficient statistics where the metric has them (corpus BLEU), else the mean of its segment
  scores, or the official submission's own system score; resamples draw items, the systems staying
  fixed, as WMT's system-level bootstrap does (an official system score has no replicates).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from assay.jobs.evaluation_cells import Cell, FloatArray, Resamples, degenerate_reason, item_set_digest, widest_spread
from assay.results.segment_scores import ScoredMetric
from assay.stats import MetricTies, kendall_like_from_pairs, tie_calibration
from assay.stats.resampled import ResampledPairs, resampled_pair_share, rowwise, scalar_statistic
from assay.stats.system_level import resampled_corpus_scores, resampled_system_scores, system_scores

MIN_SYSTEMS = 3
"""System-level groups with fewer judged systems are not correlated."""


# --- segment level --------------------------------------------------------------------------------

@dataclass(frozen=True)
class RatedSegments:
    """A version's segment-level judgments, one entry per judgment row, parallel: the row's group,
    aspect and segment key, and its human score (NaN: none)."""

    groups: Sequence[str]
    aspects: Sequence[str]
    keys: Sequence[str]
    human: FloatArray

    @cached_property
    def slots(self) -> dict[tuple[str, str], list[int]]:
        """(group, aspect) -> its rows, in row order."""
        found: dict[tuple[str, str], list[int]] = {}
        for i, (g, a) in enumerate(zip(self.groups, self.aspects, strict=True)):
            found.setdefault((g, a), []).append(i)
        return found


def segment_statistic(statistic: str, human: FloatArray, metric: FloatArray, pairs: ResampledPairs
                      ) -> tuple[float, FloatArray, float | None]:
    """(point estimate, replicates, calibrated tie threshold or None) of one statistic; NaN where
    undefined."""
    if human.size < 2:
        return float("nan"), np.full(pairs.counts.shape[0], np.nan), None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on constant input; the value is NaN
        if statistic == "acc_t":
            calibrated = tie_calibration(human, metric, statistic="acc_23")
            return float(calibrated.value), pairs.acc23(calibrated.epsilon), calibrated.epsilon
        return scalar_statistic(statistic)(human, metric), pairs.statistic(statistic), None


def segment_cells(scored: ScoredMetric, segments: RatedSegments, scores: FloatArray, statistics: Sequence[str],
                  resamples: Resamples) -> list[Cell]:
    """One metric's segment-level cells: every statistic (but ``kendall_like``, which is DARR's:
    :func:`darr_cells`) per (group, aspect), over the rows with both a human and a metric score.
    ``scores`` is parallel to ``segments`` (NaN: no score)."""
    correlated = [s for s in statistics if s != "kendall_like"]
    human, keys = segments.human, segments.keys
    cells: list[Cell] = []
    for (group, aspect), index in sorted(segments.slots.items()):
        idx = np.array(index)
        ok = idx[~np.isnan(human[idx]) & ~np.isnan(scores[idx])]
        item_set = item_set_digest([keys[i] for i in ok])
        h, m = human[ok], scores[ok]
        pairs = ResampledPairs(h, m, resamples.counts(f"seg/{group}/{aspect}", len(ok)))
        spread = widest_spread(m, h)
        for statistic in correlated:
            value, replicates, epsilon = segment_statistic(statistic, h, m, pairs)
            cells.append(Cell(group, aspect, statistic, scored, None if np.isnan(value) else value, replicates,
                              len(ok), len(idx) - len(ok), item_set, h, m, unit="segments", epsilon=epsilon,
                              degenerate=degenerate_reason(spread, epsilon=epsilon)))
    return cells


# --- WMT DARR -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RankingPairs:
    """WMT DARR relative-ranking judgments whose two outputs the version holds, parallel: each pair's
    group and the segment keys of its better and its worse output."""

    groups: Sequence[str]
    better: Sequence[str]
    worse: Sequence[str]

    @cached_property
    def keys(self) -> set[str]:
        """Every segment key a pair compares."""
        return {*self.better, *self.worse}


def darr_cells(scored: ScoredMetric, pairs: RankingPairs, better: FloatArray, worse: FloatArray,
               metric_ties: MetricTies, resamples: Resamples) -> list[Cell]:
    """One metric's WMT DARR Kendall-like per group; ``better``/``worse``: its scores of each pair's
    better and worse output (parallel to ``pairs``)."""
    by_group: dict[str, list[int]] = {}
    for i, group in enumerate(pairs.groups):
        by_group.setdefault(group, []).append(i)
    cells = []
    for group, index in sorted(by_group.items()):
        b, w = better[index], worse[index]
        result = kendall_like_from_pairs(b, w, metric_ties=metric_ties)
        replicates = resampled_pair_share(b, w, resamples.indices(f"darr/{group}", len(b)),
                                          ties_are_discordant=metric_ties == "discordant")
        differences = np.abs(b - w)[~np.isnan(b - w)]
        spread = float(differences.max()) if differences.size else None
        cells.append(Cell(group, "darr", "kendall_like", scored, result.value, replicates, len(b), 0,
                          item_set_digest([f"{pairs.better[i]}>{pairs.worse[i]}" for i in index]),
                          unit="pairs", degenerate=degenerate_reason(spread, within="relative-ranking pair")))
    return cells


# --- system level ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class SystemSlot:
    """One (group, aspect) of system-level judgments: the judged systems with outputs and their human
    scores (parallel), and how many items every one of them translated (what a resample draws)."""

    group: str
    aspect: str
    systems: Sequence[str]
    human: FloatArray
    n_items: int


@dataclass(frozen=True)
class SlotScores:
    """What one metric's system scores on a :class:`SystemSlot` are computed from: ``values``, the
    (systems x items) segment scores (a system's score is their mean), or with ``corpus_score`` the
    (systems x items x statistics) sufficient statistics (the corpus score of their sum); or, for an
    official submission, ``submitted``, its own system scores (never recomputed, so no replicates)."""

    values: FloatArray | None = None
    corpus_score: Callable[[FloatArray], float] | None = None
    submitted: FloatArray | None = None

    def system_scores(self, counts: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(system scores, replicates x systems) for the item resample ``counts``."""
        if self.submitted is not None:
            return self.submitted, np.full((counts.shape[0], len(self.submitted)), np.nan)
        if self.values is None:
            raise ValueError("SlotScores needs values or submitted scores")
        if self.corpus_score is not None:
            return (resampled_corpus_scores(self.values, np.ones((1, self.values.shape[1])), self.corpus_score)[0],
                    resampled_corpus_scores(self.values, counts, self.corpus_score))
        return system_scores(self.values), resampled_system_scores(self.values, counts)


def system_cells(scored: ScoredMetric, slots: Sequence[tuple[SystemSlot, SlotScores]], statistics: Sequence[str],
                 resamples: Resamples) -> list[Cell]:
    """One metric's system-level cells: every statistic per slot with at least :data:`MIN_SYSTEMS`
    systems, the metric's system scores correlated with the humans'."""
    cells: list[Cell] = []
    for slot, scores in slots:
        if len(slot.systems) < MIN_SYSTEMS:
            continue
        counts = resamples.counts(f"sys/{slot.group}/{slot.aspect}", slot.n_items)
        metric_sys, resampled = scores.system_scores(counts)
        human, names = slot.human, list(slot.systems)
        item_set = item_set_digest([*names, f"items:{slot.n_items}"])
        degenerate = degenerate_reason(widest_spread(metric_sys, human))
        for statistic in statistics:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # constant system scores: the value is NaN
                value = scalar_statistic(statistic)(human, metric_sys)
                replicates = rowwise(statistic, human, resampled)
            cells.append(Cell(slot.group, slot.aspect, statistic, scored, None if np.isnan(value) else value,
                              replicates, len(names), 0, item_set, human, metric_sys,
                              names, unit="systems", degenerate=degenerate))
    return cells
