"""Significance clusters (mt-metrics-eval's AssignRanks rule)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pytest

from assay.stats import StatsInputError, assign_clusters, rank_metrics, significance_clusters

NAN = float("nan")


def test_a_new_cluster_opens_when_any_member_of_the_current_one_wins() -> None:
    # Ranking order A > B > C > D. A vs B not significant; A beats C but B does not: C still opens
    # cluster 2 because A, a member of cluster 1, beats it. D loses to A and B, but only the
    # members of the current cluster (from its opener C on) count, and C does not beat D.
    p = [
        [NAN, 0.30, 0.01, 0.001],
        [NAN, NAN, 0.20, 0.001],
        [NAN, NAN, NAN, 0.40],
        [NAN, NAN, NAN, NAN],
    ]
    assert assign_clusters(p) == [1, 1, 2, 2]
    # Stricter alpha: A's win over C (p = 0.01) no longer counts, so C joins cluster 1, and D
    # (beaten by A at p = 0.001) opens cluster 2.
    assert assign_clusters(p, alpha=0.005) == [1, 1, 1, 2]


def test_boundary_is_inclusive_and_no_wins_means_one_cluster() -> None:
    p = np.full((3, 3), NAN)
    p[0, 1], p[0, 2], p[1, 2] = 0.05, 0.5, 0.5
    assert assign_clusters(p, alpha=0.05) == [1, 2, 2]
    p[0, 1] = 0.06
    assert assign_clusters(p, alpha=0.05) == [1, 1, 1]


def test_significance_clusters_sorts_by_value_and_asks_better_first() -> None:
    values = {"low": 0.1, "top": 0.9, "mid": 0.5}
    asked = []

    def p_value(better: str, worse: str) -> float:
        asked.append((better, worse))
        return 0.01 if better == "top" else 0.6

    result = significance_clusters(values, p_value)
    assert [m.name for m in result.ranking] == ["top", "mid", "low"]
    assert [m.cluster for m in result.ranking] == [1, 2, 2]
    assert asked == [("top", "mid"), ("top", "low"), ("mid", "low")]
    assert result.cluster_of("low") == 2
    assert result.p_values[0][1] == 0.01 and np.isnan(result.p_values[1][0])
    with pytest.raises(StatsInputError, match="NaN"):
        significance_clusters({"a": NAN}, p_value)


@pytest.mark.parametrize("test", ["permutation", "williams"])
def test_rank_metrics_on_constructed_data(test: Literal["permutation", "williams"]) -> None:
    rng = np.random.default_rng(12)
    gold = rng.normal(size=150)
    noise = rng.normal(size=150)
    metrics = {
        "weak": gold + 3.0 * rng.normal(size=150),
        "strong": gold + 0.3 * noise,
        "strong_twin": gold + 0.3 * noise + 0.001 * rng.normal(size=150),
    }
    result = rank_metrics(gold, metrics, test=test, n_resamples=300, seed=4)
    clusters = {m.name: m.cluster for m in result.ranking}
    assert clusters["strong"] == clusters["strong_twin"] == 1
    assert clusters["weak"] == 2
    assert result.test == test


def test_rank_metrics_permutation_needs_a_seed() -> None:
    with pytest.raises(StatsInputError, match="give a seed"):
        rank_metrics([1.0, 2.0, 3.0], {"a": [1.0, 2.0, 3.0], "b": [3.0, 1.0, 2.0]})
