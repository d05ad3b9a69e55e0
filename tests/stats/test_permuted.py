"""PERM-BOTH permutations in matrix form equal scipy's statistic on every permuted vector.

Oracles: scipy.stats.kendalltau (variants b and c) and spearmanr, and the pair-count definitions of
``assay.stats.pairwise`` for tau_23 / acc_23 (themselves checked against mt-metrics-eval's
fixtures), applied to each permuted vector (``np.where(swap, b, a)`` for side A, the reverse for
side B); tolerance 1e-9 (float32 products of integers are exact; the rest is float64 summation
order). The p-values of ``assay.stats.permutation_test`` equal those of a plain scipy loop written
out below (PERM-BOTH as in mt-metrics-eval's ``PermutationSigDiff``, with this module's seeded
draws: one ``rng.random((chunk, n)) < 0.5`` per chunk of 256 permutations) on the same seed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats as sps

import assay.stats.resampled as resampled
from assay.stats import acc_23, permutation_test, permutation_tests, tau_23
from assay.stats.permuted import permuted_statistics
from assay.stats.significance import StatisticName

ORACLE: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "kendall_b": lambda h, m: float(sps.kendalltau(h, m).statistic),
    "kendall_c": lambda h, m: float(sps.kendalltau(h, m, variant="c").statistic),
    "spearman": lambda h, m: float(sps.spearmanr(h, m).statistic),
    "tau_23": lambda h, m: float(tau_23(h, m).value),
    "acc_23": lambda h, m: float(acc_23(h, m).value),
}


def _data(kind: str, rng: np.random.Generator, n: int = 90) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    human = rng.normal(size=n) if kind == "continuous" else rng.integers(1, 4, size=n).astype(float)
    a = human + rng.normal(size=n)
    b = np.round(human + 1.1 * rng.normal(size=n), 1)  # ties within b and across a and b
    return human, (a - a.mean()) / a.std(), (b - b.mean()) / b.std()


@pytest.mark.parametrize("kind", ["continuous", "ties"])
@pytest.mark.parametrize("statistic", sorted(ORACLE))
def test_every_permutation_matches_scipy(kind: str, statistic: str) -> None:
    rng = np.random.default_rng(4)
    human, a, b = _data(kind, rng)
    swap = rng.random((60, human.size)) < 0.5
    result = permuted_statistics(statistic, human, a, b, swap)
    assert result is not None
    side_a, side_b = result
    expected_a = [ORACLE[statistic](human, np.where(s, b, a)) for s in swap]
    expected_b = [ORACLE[statistic](human, np.where(s, a, b)) for s in swap]
    np.testing.assert_allclose(side_a, expected_a, atol=1e-9)
    np.testing.assert_allclose(side_b, expected_b, atol=1e-9)


def test_column_blocks_give_the_same_concordance(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    human, a, b = _data("ties", rng, n=50)
    swap = rng.random((20, 50)) < 0.5
    whole = permuted_statistics("kendall_b", human, a, b, swap)
    monkeypatch.setattr("assay.stats.permuted.MAX_BLOCK_ELEMENTS", 4 * 6 * 50)  # blocks of 6 columns
    assert resampled.MAX_BLOCK_ELEMENTS != 4 * 6 * 50  # only this module's blocks changed
    blocked = permuted_statistics("kendall_b", human, a, b, swap)
    assert whole is not None and blocked is not None
    np.testing.assert_array_equal(whole[0], blocked[0])
    np.testing.assert_array_equal(whole[1], blocked[1])


def _scipy_perm_both(statistic: str, human: np.ndarray, a: np.ndarray, b: np.ndarray, n_resamples: int,
                     seed: int) -> float:
    """PERM-BOTH with a scipy statistic per permuted vector (the oracle)."""
    function = ORACLE[statistic]
    a_z, b_z = (a - a.mean()) / a.std(), (b - b.mean()) / b.std()
    delta = function(human, a_z) - function(human, b_z)
    rng = np.random.default_rng(seed)
    hits = 0
    for begin in range(0, n_resamples, 256):
        for swap in rng.random((min(256, n_resamples - begin), human.size)) < 0.5:
            diff = function(human, np.where(swap, b_z, a_z)) - function(human, np.where(swap, a_z, b_z))
            hits += int(diff >= delta - 1e-12)
    return hits / n_resamples


@pytest.mark.parametrize("kind", ["continuous", "ties"])
@pytest.mark.parametrize("statistic", sorted(ORACLE))
def test_p_values_equal_a_scipy_loop(kind: str, statistic: StatisticName) -> None:
    rng = np.random.default_rng(9)
    n = 120
    human = rng.normal(size=n) if kind == "continuous" else rng.integers(1, 4, size=n).astype(float)
    a = human + 2.0 * rng.normal(size=n)
    b = np.round(human + 2.1 * rng.normal(size=n), 1)  # close: a p-value well inside (0, 1)
    fast = permutation_test(human, a, b, statistic=statistic, n_resamples=300, seed=3)
    expected = _scipy_perm_both(statistic, human, a, b, 300, 3)
    assert 0 < expected < 1
    assert fast.p_value == expected


def test_several_statistics_both_ways_equal_single_tests() -> None:
    """One set of permutations for every statistic and both directions gives exactly the p-values
    of separate tests with the metrics in either order (same seed)."""
    rng = np.random.default_rng(12)
    human = rng.integers(1, 4, size=100).astype(float)
    a = human + 2.0 * rng.normal(size=100)
    b = np.round(human + 2.0 * rng.normal(size=100), 1)
    names: list[StatisticName] = ["pearson", "spearman", "kendall_b", "kendall_c", "tau_23"]
    together = permutation_tests(human, a, b, statistics=names, n_resamples=300, seed=5)
    for name, (a_over_b, b_over_a) in zip(names, together, strict=True):
        assert a_over_b == permutation_test(human, a, b, statistic=name, n_resamples=300, seed=5)
        assert b_over_a == permutation_test(human, b, a, statistic=name, n_resamples=300, seed=5)
