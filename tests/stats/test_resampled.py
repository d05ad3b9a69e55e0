"""The vectorised resampled statistics equal scipy's statistic on each resampled row set.

Oracle: scipy.stats (pearsonr via corrcoef, spearmanr, kendalltau variants b and c) and the
pair-count definitions of ``assay.stats.pairwise`` (tau_23 / acc_23, Deutsch et al. 2023), applied
row by row to the same index matrix. Tolerance 1e-12 (float summation order only).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from assay.stats import acc_23, kendall_like_from_pairs, tau_23
from assay.stats.resampled import resampled_pair_share, resampled_statistic, rowwise

SCALAR = {
    "pearson": lambda h, m: float(np.corrcoef(h, m)[0, 1]),
    "spearman": lambda h, m: float(sps.spearmanr(h, m).statistic),
    "kendall": lambda h, m: float(sps.kendalltau(h, m).statistic),
    "kendall_c": lambda h, m: float(sps.kendalltau(h, m, variant="c").statistic),
    "tau23": lambda h, m: float(tau_23(h, m).value),
    "acc23": lambda h, m: float(acc_23(h, m).value),
}


def _data(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if kind == "continuous":  # like WMT DA z-scores against a sentence-level metric
        human = rng.normal(size=n)
        return human, human * 0.5 + rng.normal(size=n)
    # like WebNLG's 1-3 ratings against a metric with many exact ties (e.g. sentBLEU of 0)
    human = rng.integers(1, 4, size=n).astype(float)
    return human, np.round(human + rng.normal(size=n), 1).clip(0, None)


@pytest.mark.parametrize("kind", ["continuous", "ties"])
@pytest.mark.parametrize("statistic", sorted(SCALAR))
def test_matches_scipy_row_by_row(kind: str, statistic: str) -> None:
    rng = np.random.default_rng(7)
    human, metric = _data(kind, 120, rng)
    index = rng.integers(0, human.size, size=(300, human.size))
    expected = np.array([SCALAR[statistic](human[r], metric[r]) for r in index])
    got = resampled_statistic(statistic, human, metric, index)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_tie_threshold_is_applied_to_every_resample() -> None:
    rng = np.random.default_rng(3)
    human, metric = _data("ties", 80, rng)
    index = rng.integers(0, human.size, size=(100, human.size))
    expected = [acc_23(human[r], metric[r], epsilon=0.25).value for r in index]
    np.testing.assert_allclose(resampled_statistic("acc23", human, metric, index, epsilon=0.25), expected,
                               atol=1e-12)


def test_large_groups_fall_back_to_the_scalar_statistic(monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.stats.resampled as resampled

    monkeypatch.setattr(resampled, "MAX_MATRIX_ROWS", 10)
    rng = np.random.default_rng(5)
    human, metric = _data("continuous", 30, rng)
    index = rng.integers(0, 30, size=(20, 30))
    got = resampled_statistic("kendall", human, metric, index, scalar=SCALAR["kendall"])
    np.testing.assert_allclose(got, [SCALAR["kendall"](human[r], metric[r]) for r in index], atol=1e-12)


@pytest.mark.parametrize("ties", ["discordant", "ignore"])
def test_darr_pairs_match_kendall_like(ties: str) -> None:
    rng = np.random.default_rng(11)
    better = np.round(rng.normal(size=200), 1)
    worse = np.round(rng.normal(size=200), 1)
    index = rng.integers(0, 200, size=(50, 200))
    expected = [kendall_like_from_pairs(better[r], worse[r], metric_ties=ties).value for r in index]  # type: ignore[arg-type]
    got = resampled_pair_share(better, worse, index, ties_are_discordant=ties == "discordant")
    np.testing.assert_allclose(got, expected, atol=1e-12)


@pytest.mark.parametrize("statistic", ["pearson", "spearman", "kendall", "pairwise_accuracy"])
def test_system_level_rows(statistic: str) -> None:
    rng = np.random.default_rng(2)
    human = rng.normal(size=9)
    rows = np.round(human + rng.normal(size=(40, 9)), 1)
    scalar = {**SCALAR, "pairwise_accuracy": lambda h, m: float(np.mean(
        [np.sign(h[i] - h[j]) == np.sign(m[i] - m[j]) for i in range(9) for j in range(i + 1, 9)]))}[statistic]
    np.testing.assert_allclose(rowwise(statistic, human, rows), [scalar(human, r) for r in rows], atol=1e-12)
