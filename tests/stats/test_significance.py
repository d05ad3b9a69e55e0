"""Williams' test and the PERM-BOTH permutation test."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import scipy.stats

from assay.stats import (
    Grouping,
    StatsInputError,
    grouped_statistic,
    kendall_tau,
    pair_counts,
    pearson,
    permutation_test,
    williams_p_value,
    williams_test,
)
from assay.stats.significance import StatisticName


def test_williams_fixture() -> None:
    # REFERENCE_NUMBERS.md, from google-research/mt-metrics-eval tests: one-sided p = 0.019,
    # r1 0.999, r2 0.987 (printed with 3 decimals: abs 1e-3).
    result = williams_test([1, 2, 3, 4, 5], [1.1, 2, 3.1, 4, 5.1], [1.5, 2, 3.1, 4, 5.5])
    assert result.p_value == pytest.approx(0.019, abs=1e-3)
    assert result.r_a == pytest.approx(0.999, abs=1e-3)
    assert result.r_b == pytest.approx(0.987, abs=1e-3)
    assert result.n == 5


def test_williams_is_symmetric_and_two_sided_doubles() -> None:
    gold, a, b = [1, 2, 3, 4, 5], [1.1, 2, 3.1, 4, 5.1], [1.5, 2, 3.1, 4, 5.5]
    forward, backward = williams_test(gold, a, b), williams_test(gold, b, a)
    assert forward.p_value == pytest.approx(backward.p_value, abs=1e-15)
    two_sided = williams_test(gold, a, b, one_sided=False)
    assert two_sided.p_value == pytest.approx(2 * forward.p_value, abs=1e-15)
    with pytest.raises(StatsInputError, match="more than 3"):
        williams_p_value(0.9, 0.8, 0.7, 3)


def test_williams_drops_missing_gold() -> None:
    result = williams_test([1, None, 3, 4, 5, 6], [1, 9, 3, 3, 7, 3], [2, 0, 2, 6, 8, 8])
    assert result.n == 5
    assert result.r_a == pytest.approx(scipy.stats.pearsonr([1, 3, 4, 5, 6], [1, 3, 3, 7, 3]).statistic)


def _data(seed: int = 0, n: int = 120) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    gold = rng.normal(size=n)
    return gold, gold + rng.normal(scale=0.3, size=n), gold + rng.normal(scale=2.0, size=n)


@pytest.mark.parametrize("statistic", ["pearson", "kendall_b", "acc_23", "spearman"])
def test_identical_metrics_give_p_one(statistic: StatisticName) -> None:
    gold, good, _ = _data()
    result = permutation_test(gold, good, good.copy(), statistic=statistic, n_resamples=200, seed=1)
    assert result.delta == 0.0
    assert result.p_value == 1.0


def test_clearly_better_metric_gets_small_p_and_the_reverse_large() -> None:
    gold, good, bad = _data()
    better = permutation_test(gold, good, bad, n_resamples=500, seed=3)
    assert better.delta > 0.4
    assert better.p_value < 0.01
    worse = permutation_test(gold, bad, good, n_resamples=500, seed=3)
    assert worse.p_value > 0.99


def test_deterministic_under_seed_and_recorded() -> None:
    gold, good, _ = _data(n=40)
    noisy = gold + np.random.default_rng(9).normal(scale=0.3, size=40)  # as good as `good`
    first = permutation_test(gold, good, noisy, n_resamples=300, seed=42)
    again = permutation_test(gold, good, noisy, n_resamples=300, seed=42)
    assert first == again
    assert (first.seed, first.n_resamples) == (42, 300)
    other_seeds = {permutation_test(gold, good, noisy, n_resamples=300, seed=s).p_value for s in range(5)}
    assert 0.02 < first.p_value < 0.98
    assert len(other_seeds) > 1  # the seed matters: the p-value is a Monte Carlo estimate


def test_delta_is_difference_of_the_grouped_correlations() -> None:
    # z-scoring before swapping does not move a correlation, so delta is the plain difference.
    gold, good, bad = _data(n=60)
    result = permutation_test(
        gold, good, bad, statistic="kendall_b", num_systems=6, grouping="item", n_resamples=10, seed=0
    )
    expected = (
        kendall_tau(gold, good, num_systems=6, grouping="item").value
        - kendall_tau(gold, bad, num_systems=6, grouping="item").value
    )
    assert result.delta == pytest.approx(expected, abs=1e-12)
    assert grouped_statistic(gold, good, "pearson", num_systems=6, grouping="system") == pytest.approx(
        pearson(gold, good, num_systems=6, grouping="system").value, abs=1e-12
    )


@pytest.mark.parametrize(("statistic", "grouping"), [("pearson", "system"), ("kendall_b", "item"), ("tau_23", "item")])
def test_vectorised_paths_equal_the_generic_path(statistic: StatisticName, grouping: Grouping) -> None:
    # The same seed draws the same swaps, so the vectorised statistic and a plain callable agree.
    gold, good, bad = _data(seed=4, n=48)
    gold = np.round(gold, 1)  # ties in the gold scores
    gold[5] = np.nan
    generic: Callable[[np.ndarray, np.ndarray], float] = {
        "pearson": lambda g, m: scipy.stats.pearsonr(g, m).statistic,
        "kendall_b": lambda g, m: scipy.stats.kendalltau(g, m).statistic,
        "tau_23": lambda g, m: pair_counts(g, m).tau_23,
    }[statistic]
    fast = permutation_test(
        gold, good, bad, statistic=statistic, num_systems=4, grouping=grouping, n_resamples=40, seed=8
    )
    slow = permutation_test(
        gold, good, bad, statistic=generic, num_systems=4, grouping=grouping, n_resamples=40, seed=8
    )
    assert fast.delta == pytest.approx(slow.delta, abs=1e-12)
    assert fast.p_value == slow.p_value


def test_bad_inputs() -> None:
    gold, good, bad = _data(n=10)
    with pytest.raises(StatsInputError, match="seed must be a non-negative integer"):
        permutation_test(gold, good, bad, seed=None)  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="constant metric"):
        permutation_test(gold, good, np.ones(10), seed=0)
    with pytest.raises(StatsInputError, match="metric_b has 9 scores"):
        permutation_test(gold, good, bad[:9], seed=0)
    with pytest.raises(StatsInputError, match="unknown statistic"):
        permutation_test(gold, good, bad, statistic="kendall_23", seed=0)  # type: ignore[arg-type]
