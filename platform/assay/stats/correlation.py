"""Pearson, Spearman and Kendall correlation between human (gold) and metric scores.

The coefficients are scipy's: ``pearsonr``, ``spearmanr`` and ``kendalltau`` with ``variant="b"``
(ties adjusted in both vectors) or ``variant="c"`` (Stuart's tau-c, for rectangular tables).

Segment-level scores can be grouped as in mt-metrics-eval's ``stats.Correlation``
(google-research/mt-metrics-eval, ``average_by``): ``"none"`` correlates all (system, item)
entries at once; ``"item"`` correlates, within each item, the systems' scores, then averages over
items; ``"system"`` correlates, within each system, its item scores, then averages over systems.
Averages are plain (macro) means over the groups whose coefficient is defined; a group with a
constant vector (coefficient ``NaN``) or fewer than two scored entries is left out, as
mt-metrics-eval does by default. Missing gold scores (``None``/``NaN``) are dropped together
with their metric score; metric scores must all be defined.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

import numpy as np

from assay.errors import StatsInputError
from assay.stats._groups import (
    FloatArray,
    Grouping,
    Scores,
    infer_num_systems,
    paired_vectors,
    split_groups,
)

CorrelationStatistic: TypeAlias = Literal["pearson", "spearman", "kendall_b", "kendall_c"]
CORRELATION_STATISTICS: tuple[str, ...] = get_args(CorrelationStatistic)


@dataclass(frozen=True)
class CorrelationResult:
    """A correlation coefficient with the record of how it was computed."""

    statistic: str
    """``"pearson"``, ``"spearman"``, ``"kendall_b"`` or ``"kendall_c"``."""
    grouping: str
    """``"none"``, ``"item"`` or ``"system"``."""
    value: float
    """The coefficient, or the mean of the per-group coefficients; ``NaN`` when no group has one."""
    p_value: float
    """scipy's two-sided p-value for ``grouping="none"``; ``NaN`` for grouped results, because a
    mean of p-values is not a p-value (use ``permutation_test`` to compare metrics)."""
    n: int
    """Scored (gold, metric) pairs in the groups that contributed to ``value``."""
    n_groups: int
    """Groups averaged into ``value`` (1 for ``"none"`` when defined, 0 when undefined)."""
    n_missing: int
    """Entries dropped because their gold score was missing."""


def _quiet(function: Callable[[], tuple[float, float]]) -> tuple[float, float]:
    # scipy warns on constant input and returns NaN; NaN is the answer we want, not a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function()


def _pearson(gold: FloatArray, metric: FloatArray) -> tuple[float, float]:
    import scipy.stats  # here, not at module level: importing scipy.stats takes most of a second

    def compute() -> tuple[float, float]:
        result = scipy.stats.pearsonr(gold, metric)
        return float(result.statistic), float(result.pvalue)

    return _quiet(compute)


def _spearman(gold: FloatArray, metric: FloatArray) -> tuple[float, float]:
    import scipy.stats

    def compute() -> tuple[float, float]:
        result = scipy.stats.spearmanr(gold, metric)
        return float(result.statistic), float(result.pvalue)

    return _quiet(compute)


def _kendall(variant: str) -> Callable[[FloatArray, FloatArray], tuple[float, float]]:
    def kendall(gold: FloatArray, metric: FloatArray) -> tuple[float, float]:
        import scipy.stats

        def compute() -> tuple[float, float]:
            result = scipy.stats.kendalltau(gold, metric, variant=variant)
            return float(result.statistic), float(result.pvalue)

        return _quiet(compute)

    return kendall


_KERNELS: dict[str, Callable[[FloatArray, FloatArray], tuple[float, float]]] = {
    "pearson": _pearson,
    "spearman": _spearman,
    "kendall_b": _kendall("b"),
    "kendall_c": _kendall("c"),
}


def correlation_kernel(statistic: str) -> Callable[[FloatArray, FloatArray], float]:
    """The bare coefficient ``f(gold, metric) -> float`` for complete, equal-length vectors."""
    if statistic not in _KERNELS:
        raise StatsInputError(
            f"unknown correlation {statistic!r} (expected one of {', '.join(CORRELATION_STATISTICS)})"
        )
    kernel = _KERNELS[statistic]
    return lambda gold, metric: kernel(gold, metric)[0]


def correlate(
    gold: Scores,
    metric: Scores,
    statistic: CorrelationStatistic = "pearson",
    *,
    num_systems: int | None = None,
    grouping: Grouping = "none",
) -> CorrelationResult:
    """Correlation of ``metric`` with ``gold``, over all entries or averaged over groups.

    ``gold`` and ``metric`` are parallel: flat system-major vectors of ``num_systems * num_items``
    scores, or ``(num_systems, num_items)`` matrices. ``num_systems`` is needed only for grouping
    a flat vector.
    """
    correlation_kernel(statistic)  # validates the name
    kernel = _KERNELS[statistic]
    systems = infer_num_systems(gold, num_systems)
    gold_vec, metric_vec = paired_vectors(gold, metric)
    n_missing = int(np.isnan(gold_vec).sum())
    groups = split_groups(gold_vec, [metric_vec], num_systems=systems, grouping=grouping)

    values, p_values, sizes = [], [], []
    for group_gold, group_metric in groups:
        value, p_value = kernel(group_gold, group_metric)
        if not np.isnan(value):
            values.append(value)
            p_values.append(p_value)
            sizes.append(group_gold.size)
    if not values:
        return CorrelationResult(statistic, grouping, float("nan"), float("nan"), 0, 0, n_missing)
    p_value = p_values[0] if grouping == "none" else float("nan")
    return CorrelationResult(
        statistic=statistic,
        grouping=grouping,
        value=float(np.mean(values)),
        p_value=p_value,
        n=int(sum(sizes)),
        n_groups=len(values),
        n_missing=n_missing,
    )


def pearson(
    gold: Scores, metric: Scores, *, num_systems: int | None = None, grouping: Grouping = "none"
) -> CorrelationResult:
    """Pearson's r (``scipy.stats.pearsonr``); see ``correlate`` for the arguments."""
    return correlate(gold, metric, "pearson", num_systems=num_systems, grouping=grouping)


def spearman(
    gold: Scores, metric: Scores, *, num_systems: int | None = None, grouping: Grouping = "none"
) -> CorrelationResult:
    """Spearman's rho (``scipy.stats.spearmanr``); see ``correlate`` for the arguments."""
    return correlate(gold, metric, "spearman", num_systems=num_systems, grouping=grouping)


def kendall_tau(
    gold: Scores,
    metric: Scores,
    *,
    variant: Literal["b", "c"] = "b",
    num_systems: int | None = None,
    grouping: Grouping = "none",
) -> CorrelationResult:
    """Kendall's tau-b or tau-c (``scipy.stats.kendalltau``); see ``correlate`` for the arguments.

    For tau_23 / acc_23 (ties in both vectors counted as agreement) see ``assay.stats.pairwise``.
    """
    if variant not in ("b", "c"):
        raise StatsInputError(f"unknown Kendall variant {variant!r} (expected 'b' or 'c'; for '23' see tau_23)")
    statistic: CorrelationStatistic = "kendall_b" if variant == "b" else "kendall_c"
    return correlate(gold, metric, statistic, num_systems=num_systems, grouping=grouping)


class Correlation:
    """Gold and metric scores of one metric on one test set, ready to be correlated.

    Modelled on mt-metrics-eval's ``stats.Correlation``: the scores are stored once (system-major,
    ``num_systems`` rows of ``num_items`` items) and each method computes one statistic with a
    grouping (``"none"``, ``"item"`` or ``"system"``; see the module docstring).
    """

    def __init__(self, gold: Scores, metric: Scores, *, num_systems: int | None = None) -> None:
        self.num_systems = infer_num_systems(gold, num_systems)
        gold_vec, metric_vec = paired_vectors(gold, metric)
        if gold_vec.size % self.num_systems:
            raise StatsInputError(
                f"{gold_vec.size} scores cannot be split into {self.num_systems} systems of equal length"
            )
        gold_vec.setflags(write=False)
        metric_vec.setflags(write=False)
        self.gold = gold_vec
        self.metric = metric_vec
        self.num_items = gold_vec.size // self.num_systems
        self.n_missing = int(np.isnan(gold_vec).sum())

    def pearson(self, grouping: Grouping = "none") -> CorrelationResult:
        return correlate(self.gold, self.metric, "pearson", num_systems=self.num_systems, grouping=grouping)

    def spearman(self, grouping: Grouping = "none") -> CorrelationResult:
        return correlate(self.gold, self.metric, "spearman", num_systems=self.num_systems, grouping=grouping)

    def kendall(self, grouping: Grouping = "none", variant: Literal["b", "c"] = "b") -> CorrelationResult:
        return kendall_tau(self.gold, self.metric, variant=variant, num_systems=self.num_systems, grouping=grouping)

    def __repr__(self) -> str:
        return f"Correlation(num_systems={self.num_systems}, num_items={self.num_items}, n_missing={self.n_missing})"
