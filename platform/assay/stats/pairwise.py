"""Pairwise agreement: tau_23, acc_23, tie calibration and system-level pairwise accuracy.

Every pair of entries (i, j) falls in one class, comparing the gold (human) and the metric scores:
Concordant (both order the pair the same way), Discordant (opposite ways), tied in the human
scores only, tied in the metric scores only, or tied in both. Deutsch, Foster and Freitag (2023),
"Ties Matter: Meta-Evaluating Modern Metrics with Pairwise Accuracy and Tie Calibration"
(arXiv:2305.14324), define over all N pairs

    tau_23 = (C + T_both - D - T_human - T_metric) / N
    acc_23 = (C + T_both) / N

so a metric earns credit for predicting a human tie. A metric pair counts as tied when its scores
differ by at most ``epsilon`` (0: exact ties only). *Tie calibration* picks the ``epsilon`` that
maximises the statistic: the candidates are 0 and every absolute metric-score difference of a
pair, and the smallest maximising candidate wins (google-research/mt-metrics-eval,
``tau_optimization.py`` and ``stats.KendallWithTiesOpt``; the search here is exact, over all pairs,
i.e. mt-metrics-eval's ``sample_rate=1.0``).

System-level *pairwise accuracy* (Kocmi et al. 2021, "To Ship or Not to Ship") is the share of
system pairs that the metric orders as humans do, a pair counting as agreement when the signs of
the two score differences are equal (mt-metrics-eval's ``Agreement``); that is acc_23 with
``epsilon=0`` on system scores.

Grouping (``"none"``, ``"item"``, ``"system"``) and missing gold scores work as in
``assay.stats.correlation``: a grouped value is the mean of the per-group values.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from assay.errors import StatsInputError
from assay.stats._groups import (
    FloatArray,
    Grouping,
    Scores,
    drop_missing,
    infer_num_systems,
    paired_vectors,
    split_groups,
)

PairwiseStatistic: TypeAlias = Literal["tau_23", "acc_23"]

# Values equal up to this much are treated as equal when picking the calibrated epsilon, so that
# float noise in the running sums cannot pick a larger threshold than the exact arithmetic would.
_CALIBRATION_TOLERANCE = 1e-12


@dataclass(frozen=True)
class PairCounts:
    """The sufficient statistics of Kendall-type correlations for one vector pair."""

    concordant: int
    discordant: int
    ties_human: int
    """Pairs tied in the human scores only."""
    ties_metric: int
    """Pairs tied in the metric scores only (difference at most epsilon)."""
    ties_both: int

    @property
    def n_pairs(self) -> int:
        return self.concordant + self.discordant + self.ties_human + self.ties_metric + self.ties_both

    @property
    def tau_23(self) -> float:
        agree = self.concordant + self.ties_both
        return (2 * agree - self.n_pairs) / self.n_pairs if self.n_pairs else float("nan")

    @property
    def acc_23(self) -> float:
        return (self.concordant + self.ties_both) / self.n_pairs if self.n_pairs else float("nan")

    def value(self, statistic: str) -> float:
        if statistic == "tau_23":
            return self.tau_23
        if statistic == "acc_23":
            return self.acc_23
        raise StatsInputError(f"unknown pairwise statistic {statistic!r} (expected 'tau_23' or 'acc_23')")


@dataclass(frozen=True)
class PairwiseResult:
    """tau_23, acc_23 or pairwise accuracy, with the record of how it was computed."""

    statistic: str
    """``"tau_23"``, ``"acc_23"`` or ``"pairwise_accuracy"``."""
    value: float
    """The statistic, or the mean of the per-group statistics; ``NaN`` when no group has a pair."""
    epsilon: float
    """Metric tie threshold: pairs whose metric scores differ by at most this are ties."""
    grouping: str
    n_pairs: int
    """Pairs over all contributing groups."""
    n_groups: int


@dataclass(frozen=True)
class TieCalibrationResult:
    """The tie-calibrated tau_23 / acc_23 ("acc-t" for acc_23) and the threshold that achieves it."""

    statistic: str
    value: float
    """The statistic at ``epsilon`` (recomputed exactly from the pair counts)."""
    epsilon: float
    """The calibrated metric tie threshold (the smallest maximising candidate)."""
    grouping: str
    n_pairs: int
    n_groups: int
    n_candidates: int
    """Distinct thresholds searched (0 and every distinct absolute metric difference)."""


def _check_statistic(statistic: str) -> None:
    if statistic not in ("tau_23", "acc_23"):
        raise StatsInputError(f"unknown pairwise statistic {statistic!r} (expected 'tau_23' or 'acc_23')")


def _check_epsilon(epsilon: float) -> None:
    if not epsilon >= 0:
        raise StatsInputError(f"epsilon must be non-negative (got {epsilon})")


@lru_cache(maxsize=64)
def _upper_pairs(size: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The index pairs ``i < j`` of ``size`` entries (``numpy.triu_indices``), built once per size:
    item-grouped statistics ask for the same few sizes thousands of times."""
    first, second = np.triu_indices(size, k=1)
    first.setflags(write=False)
    second.setflags(write=False)
    return first, second


def _pair_differences(gold: FloatArray, metric: FloatArray) -> tuple[FloatArray, FloatArray]:
    first, second = _upper_pairs(gold.size)
    return gold[first] - gold[second], metric[first] - metric[second]


def count_pairs(gold: FloatArray, metric: FloatArray, epsilon: float = 0.0) -> PairCounts:
    """Pair classes of two complete, equal-length vectors (metric ties: ``|difference| <= epsilon``)."""
    gold_diff, metric_diff = _pair_differences(gold, metric)
    human_tie = gold_diff == 0
    metric_tie = np.abs(metric_diff) <= epsilon
    both = int((human_tie & metric_tie).sum())
    ties_human = int(human_tie.sum()) - both
    ties_metric = int(metric_tie.sum()) - both
    untied = ~(human_tie | metric_tie)
    concordant = int((np.sign(gold_diff[untied]) == np.sign(metric_diff[untied])).sum())
    discordant = int(untied.sum()) - concordant
    return PairCounts(concordant, discordant, ties_human, ties_metric, both)


def pair_counts(gold: Scores, metric: Scores, *, epsilon: float = 0.0) -> PairCounts:
    """Pair classes over all entries; entries with a missing gold score are dropped first."""
    _check_epsilon(epsilon)
    gold_vec, metric_vec = drop_missing(*paired_vectors(gold, metric))
    return count_pairs(gold_vec, metric_vec, epsilon)


def _grouped_counts(
    gold: Scores, metric: Scores, num_systems: int | None, grouping: str, epsilon: float
) -> list[PairCounts]:
    systems = infer_num_systems(gold, num_systems)
    gold_vec, metric_vec = paired_vectors(gold, metric)
    groups = split_groups(gold_vec, [metric_vec], num_systems=systems, grouping=grouping)
    return [count_pairs(group_gold, group_metric, epsilon) for group_gold, group_metric in groups]


def _pairwise(
    statistic: str, gold: Scores, metric: Scores, epsilon: float, num_systems: int | None, grouping: Grouping
) -> PairwiseResult:
    _check_epsilon(epsilon)
    counts = _grouped_counts(gold, metric, num_systems, grouping, epsilon)
    values = [c.value(statistic) for c in counts]
    return PairwiseResult(
        statistic=statistic,
        value=float(np.mean(values)) if values else float("nan"),
        epsilon=float(epsilon),
        grouping=grouping,
        n_pairs=sum(c.n_pairs for c in counts),
        n_groups=len(counts),
    )


def tau_23(
    gold: Scores,
    metric: Scores,
    *,
    epsilon: float = 0.0,
    num_systems: int | None = None,
    grouping: Grouping = "none",
) -> PairwiseResult:
    """Kendall's tau_23 (Deutsch et al. 2023): ties in both vectors count as agreement."""
    return _pairwise("tau_23", gold, metric, epsilon, num_systems, grouping)


def acc_23(
    gold: Scores,
    metric: Scores,
    *,
    epsilon: float = 0.0,
    num_systems: int | None = None,
    grouping: Grouping = "none",
) -> PairwiseResult:
    """Pairwise accuracy with ties, acc_23 (Deutsch et al. 2023): share of pairs ranked or tied alike."""
    return _pairwise("acc_23", gold, metric, epsilon, num_systems, grouping)


def pairwise_accuracy(gold_system_scores: Scores, metric_system_scores: Scores) -> PairwiseResult:
    """System-level pairwise accuracy (Kocmi et al. 2021): share of system pairs ordered as humans do.

    One score per system in each vector; systems without a human score are left out.
    """
    result = _pairwise("acc_23", gold_system_scores, metric_system_scores, 0.0, None, "none")
    return PairwiseResult("pairwise_accuracy", result.value, 0.0, "none", result.n_pairs, result.n_groups)


def tie_calibration(
    gold: Scores,
    metric: Scores,
    *,
    statistic: PairwiseStatistic = "acc_23",
    num_systems: int | None = None,
    grouping: Grouping = "none",
) -> TieCalibrationResult:
    """Tie-calibrated tau_23 or acc_23: the value at the metric tie threshold that maximises it.

    One threshold serves all groups; the objective is the mean over groups, as in mt-metrics-eval.
    Memory grows with the number of pairs in the largest group (n * (n - 1) / 2).
    """
    _check_statistic(statistic)
    systems = infer_num_systems(gold, num_systems)
    gold_vec, metric_vec = paired_vectors(gold, metric)
    groups = split_groups(gold_vec, [metric_vec], num_systems=systems, grouping=grouping)
    if not groups:
        return TieCalibrationResult(statistic, float("nan"), 0.0, grouping, 0, 0, 0)

    # Each pair adds `agree` (1 when it counts as agreement, else 0) to acc_23's numerator, or
    # 2 * agree - 1 to tau_23's. Once epsilon reaches the pair's metric difference the pair
    # becomes a metric tie, agreeing exactly when humans tie it too: the objective moves by a
    # fixed step at that threshold.
    base = 0.0
    steps_by_group, diffs_by_group = [], []
    for group_gold, group_metric in groups:
        gold_diff, metric_diff = _pair_differences(group_gold, group_metric)
        human_tie = gold_diff == 0
        distance = np.abs(metric_diff)
        agree_now = np.where(distance == 0, human_tie, np.sign(gold_diff) == np.sign(metric_diff))
        weight = (2.0 if statistic == "tau_23" else 1.0) / (gold_diff.size * len(groups))
        base += float(agree_now.sum()) * weight - (1.0 / len(groups) if statistic == "tau_23" else 0.0)
        steps_by_group.append((human_tie.astype(np.float64) - agree_now) * weight)
        diffs_by_group.append(distance)
    distances = np.concatenate(diffs_by_group)
    steps = np.concatenate(steps_by_group)
    order = np.argsort(distances, kind="stable")
    distances, running = distances[order], base + np.cumsum(steps[order])
    # The objective at threshold t includes every pair with distance <= t: the last index of each run.
    last_of_run = np.r_[distances[1:] != distances[:-1], True]
    candidates = np.r_[0.0, distances[last_of_run]]
    objective = np.r_[base, running[last_of_run]]
    if candidates.size > 1 and candidates[1] == 0.0:  # exact metric ties are already ties at 0
        candidates, objective = candidates[1:], objective[1:]
    best = int(np.flatnonzero(objective >= np.nanmax(objective) - _CALIBRATION_TOLERANCE)[0])
    epsilon = float(candidates[best])

    counts = [count_pairs(group_gold, group_metric, epsilon) for group_gold, group_metric in groups]
    return TieCalibrationResult(
        statistic=statistic,
        value=float(np.mean([c.value(statistic) for c in counts])),
        epsilon=epsilon,
        grouping=grouping,
        n_pairs=sum(c.n_pairs for c in counts),
        n_groups=len(counts),
        n_candidates=int(candidates.size),
    )
