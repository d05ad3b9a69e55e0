"""Significance clusters: rank metrics by correlation, grouping those not significantly apart.

The procedure is google-research/mt-metrics-eval's ``ComputeRankings`` / ``AssignRanks`` (used for
the WMT22+ metrics-task tables):

1. Sort the metrics by decreasing value (ties keep the caller's order).
2. For every pair ``i < j`` in that order compute ``p[i][j]``, the p-value of the hypothesis that
   metric ``i`` is better than metric ``j`` (small = significantly better).
3. Walk down the ranking. Cluster 1 opens at the top metric. Metric ``i`` opens a new cluster
   (number = previous + 1) when *any* metric of the current cluster, from the metric that opened
   it down to ``i - 1``, beats it at ``p <= alpha``; otherwise it joins the current cluster.

So the metric that opens a cluster is significantly beaten by some metric of the previous
cluster, and a metric that joins a cluster is not significantly beaten by any metric of that
cluster ranked above it. Comparing with the whole current cluster, not only the preceding metric, keeps a chain of small
steps from hiding a significant gap between the top of a cluster and its bottom.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from assay.config import DEFAULT_RESAMPLES
from assay.errors import StatsInputError
from assay.stats._groups import Grouping, Scores, require_seed
from assay.stats.correlation import pearson
from assay.stats.significance import Statistic, grouped_statistic, permutation_test, williams_test


@dataclass(frozen=True)
class RankedMetric:
    name: str
    value: float
    cluster: int
    """1 for the top cluster."""


@dataclass(frozen=True)
class SignificanceClusters:
    """Metrics in decreasing order of value with their significance clusters."""

    ranking: tuple[RankedMetric, ...]
    p_values: tuple[tuple[float, ...], ...]
    """``p_values[i][j]`` (``i < j``, ranking order): p-value that ranking[i] beats ranking[j];
    ``NaN`` on and below the diagonal."""
    alpha: float
    test: str
    """How the p-values were obtained (e.g. ``"permutation"``, ``"williams"``, ``"custom"``)."""
    seed: int | None = None

    def cluster_of(self, name: str) -> int:
        for metric in self.ranking:
            if metric.name == name:
                return metric.cluster
        raise StatsInputError(f"{name!r} is not among the ranked metrics ({', '.join(m.name for m in self.ranking)})")


def ranking_order(values: Mapping[str, float]) -> list[str]:
    """The names of ``values`` by decreasing value; ties keep the caller's order (step 1)."""
    return sorted(values, key=lambda name: -values[name])


def shared_ranks(values: Sequence[float]) -> list[int]:
    """Ranks (1-based) of ``values`` given in decreasing order, equal values sharing the rank of
    the first of them ("1224" competition ranking): two metrics with the same value are not ranked
    apart. Equal means equal as numbers; values computed from the same pair counts are bitwise equal."""
    ranks: list[int] = []
    for i, value in enumerate(values):
        ranks.append(ranks[-1] if i and value == values[i - 1] else i + 1)
    return ranks


def assign_clusters(p_values: npt.ArrayLike, *, alpha: float = 0.05) -> list[int]:
    """Cluster numbers (1-based) from an upper-triangular p-value matrix in ranking order.

    ``p_values[i, j]`` for ``i < j`` is the p-value that metric ``i`` beats metric ``j``; entries on
    and below the diagonal are ignored. See the module docstring for the rule.
    """
    matrix = np.asarray(p_values, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise StatsInputError(f"p_values must be a square matrix (got shape {matrix.shape})")
    clusters: list[int] = []
    current, opened_at = 1, 0
    for i in range(matrix.shape[0]):
        if np.any(matrix[opened_at:i, i] <= alpha):
            current, opened_at = current + 1, i
        clusters.append(current)
    return clusters


def significance_clusters(
    values: Mapping[str, float],
    p_value: Callable[[str, str], float],
    *,
    alpha: float = 0.05,
    test: str = "custom",
    seed: int | None = None,
) -> SignificanceClusters:
    """Rank ``values`` (metric name -> statistic, higher is better) into significance clusters.

    ``p_value(better, worse)`` is called once for each pair, ``better`` ranked above ``worse``,
    and returns the p-value that ``better`` beats ``worse``.
    """
    if not values:
        raise StatsInputError("no metrics to rank")
    if any(np.isnan(v) for v in values.values()):
        undefined = sorted(name for name, v in values.items() if np.isnan(v))
        raise StatsInputError(f"undefined (NaN) values for {', '.join(undefined)}; drop them before ranking")
    names = ranking_order(values)
    size = len(names)
    matrix = np.full((size, size), np.nan)
    for i in range(size):
        for j in range(i + 1, size):
            matrix[i, j] = p_value(names[i], names[j])
    clusters = assign_clusters(matrix, alpha=alpha)
    return SignificanceClusters(
        ranking=tuple(
            RankedMetric(name, float(values[name]), cluster) for name, cluster in zip(names, clusters, strict=True)
        ),
        p_values=tuple(tuple(float(p) for p in row) for row in matrix),
        alpha=alpha,
        test=test,
        seed=seed,
    )


def rank_metrics(
    gold: Scores,
    metrics: Mapping[str, Scores],
    *,
    statistic: Statistic = "pearson",
    test: Literal["permutation", "williams"] = "permutation",
    num_systems: int | None = None,
    grouping: Grouping = "none",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = None,
    alpha: float = 0.05,
) -> SignificanceClusters:
    """Significance clusters of several metrics scored on the same entries.

    ``test="permutation"`` runs ``permutation_test`` for each pair with the same ``seed``, which it
    requires (common random numbers: every pair sees the same swap patterns). ``test="williams"``
    needs ``statistic="pearson"`` and ``grouping="none"`` and draws nothing.
    """
    if test == "williams":
        if statistic != "pearson" or grouping != "none":
            raise StatsInputError("the Williams test compares ungrouped Pearson correlations only")
        values = {name: pearson(gold, scores).value for name, scores in metrics.items()}
        return significance_clusters(
            values, lambda a, b: williams_test(gold, metrics[a], metrics[b]).p_value, alpha=alpha, test=test
        )
    if test != "permutation":
        raise StatsInputError(f"unknown test {test!r} (expected 'permutation' or 'williams')")
    if seed is None:
        raise StatsInputError("the permutation test draws random swaps: give a seed (it is recorded)")
    fixed_seed = require_seed(seed)
    values = {
        name: grouped_statistic(gold, scores, statistic, num_systems=num_systems, grouping=grouping)
        for name, scores in metrics.items()
    }

    def p_value(better: str, worse: str) -> float:
        return permutation_test(
            gold,
            metrics[better],
            metrics[worse],
            statistic=statistic,
            num_systems=num_systems,
            grouping=grouping,
            n_resamples=n_resamples,
            seed=fixed_seed,
        ).p_value

    return significance_clusters(values, p_value, alpha=alpha, test=test, seed=fixed_seed)
