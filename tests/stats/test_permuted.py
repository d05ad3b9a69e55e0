"""PERM-BOTH permutations in matrix form equal scipy's statistic on every permuted vector.

Oracle: scipy.stats.kendalltau (variants b and c) and spearmanr, applied to each permuted vector
(``np.where(swap, b, a)`` for side A and the reverse for side B), tolerance 1e-9 (float32 products
of integers are exact; the rest is float64 summation order). The p-values of
``assay.stats.permutation_test`` through this path equal the row-by-row path's on the same seed.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

import assay.stats.significance as significance
from assay.stats import permutation_test
from assay.stats.permuted import permuted_statistics

SCIPY = {
    "kendall_b": lambda h, m: sps.kendalltau(h, m).statistic,
    "kendall_c": lambda h, m: sps.kendalltau(h, m, variant="c").statistic,
    "spearman": lambda h, m: sps.spearmanr(h, m).statistic,
}


def _data(kind: str, rng: np.random.Generator, n: int = 90) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    human = rng.normal(size=n) if kind == "continuous" else rng.integers(1, 4, size=n).astype(float)
    a = human + rng.normal(size=n)
    b = np.round(human + 1.1 * rng.normal(size=n), 1)  # ties within b and across a and b
    return human, (a - a.mean()) / a.std(), (b - b.mean()) / b.std()


@pytest.mark.parametrize("kind", ["continuous", "ties"])
@pytest.mark.parametrize("statistic", sorted(SCIPY))
def test_every_permutation_matches_scipy(kind: str, statistic: str) -> None:
    rng = np.random.default_rng(4)
    human, a, b = _data(kind, rng)
    swap = rng.random((60, human.size)) < 0.5
    result = permuted_statistics(statistic, human, a, b, swap)
    assert result is not None
    side_a, side_b = result
    expected_a = [SCIPY[statistic](human, np.where(s, b, a)) for s in swap]
    expected_b = [SCIPY[statistic](human, np.where(s, a, b)) for s in swap]
    np.testing.assert_allclose(side_a, expected_a, atol=1e-9)
    np.testing.assert_allclose(side_b, expected_b, atol=1e-9)


@pytest.mark.parametrize("statistic", sorted(SCIPY))
def test_p_values_equal_the_row_by_row_path(statistic: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(9)
    human = rng.normal(size=150)
    a = human + 2.0 * rng.normal(size=150)
    b = human + 2.1 * rng.normal(size=150)  # close: a p-value well inside (0, 1)
    fast = permutation_test(human, a, b, statistic=statistic, n_resamples=300, seed=3)  # type: ignore[arg-type]
    monkeypatch.setattr(significance, "permuted_statistics", lambda *args: None)
    slow = permutation_test(human, a, b, statistic=statistic, n_resamples=300, seed=3)  # type: ignore[arg-type]
    assert 0 < slow.p_value < 1
    assert fast.p_value == slow.p_value and fast.delta == pytest.approx(slow.delta, abs=1e-12)
