"""The vectorised resampled statistics equal scipy's statistic on each resampled row set.

Oracle: scipy.stats (pearsonr via corrcoef, spearmanr, kendalltau variants b and c) and the
pair-count definitions of ``assay.stats.pairwise`` (tau_23 / acc_23, Deutsch et al. 2023; checked
against the mt-metrics-eval fixtures in test_pairwise.py), applied row by row to the same index
matrix. Tolerance 1e-12 (float summation order only). Data: the real WMT17 DA z-scores with the
WMT17 metrics package's own sentBLEU (``metrics-package-preprocessed/testset``), and ties-heavy
synthetic ratings shaped like WebNLG's 1-3 scale.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

import assay.stats.resampled as resampled
from assay.stats import MetricTies, acc_23, kendall_like_from_pairs, tau_23, tie_calibration
from assay.stats.resampled import ResampledPairs, resample_counts, resampled_pair_share, resampled_statistic, rowwise

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


def _wmt17(shared_data: Path, pair: str) -> tuple[np.ndarray, np.ndarray]:
    """DA z-scores and the WMT17 package's sentBLEU of one language pair (560 segments)."""
    path = shared_data / "wmt17-da" / "metrics-package-preprocessed" / "testset" / f"testset_{pair}.tsv"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return (np.array([float(r["HUMAN_score"]) for r in rows]), np.array([float(r["sentBLEU"]) for r in rows]))


def _row_by_row(statistic: str, human: np.ndarray, metric: np.ndarray, index: np.ndarray) -> np.ndarray:
    return np.array([SCALAR[statistic](human[r], metric[r]) for r in index])


@pytest.mark.parametrize("kind", ["continuous", "ties"])
@pytest.mark.parametrize("statistic", sorted(SCALAR))
def test_matches_scipy_row_by_row(kind: str, statistic: str) -> None:
    rng = np.random.default_rng(7)
    human, metric = _data(kind, 120, rng)
    index = rng.integers(0, human.size, size=(300, human.size))
    got = resampled_statistic(statistic, human, metric, index)
    np.testing.assert_allclose(got, _row_by_row(statistic, human, metric, index), rtol=0, atol=1e-12)


@pytest.mark.parametrize("pair", ["de-en", "zh-en"])
def test_matches_scipy_on_real_wmt17_scores(shared_data: Path, pair: str) -> None:
    human, metric = _wmt17(shared_data, pair)
    index = np.random.default_rng([12345, 1]).integers(0, human.size, size=(40, human.size))
    pairs = ResampledPairs(human, metric, resample_counts(index, human.size))
    for statistic in SCALAR:
        expected = _row_by_row(statistic, human, metric, index)
        np.testing.assert_allclose(pairs.statistic(statistic), expected, rtol=0, atol=1e-12, err_msg=statistic)
        if statistic not in ("pearson", "spearman"):  # integer pair counts, the oracle's own operations
            np.testing.assert_array_equal(pairs.statistic(statistic), expected, err_msg=statistic)


@pytest.mark.parametrize("epsilon", ["calibrated", 0.01])
def test_tie_threshold_on_real_wmt17_scores(shared_data: Path, epsilon: str | float) -> None:
    """acc-t keeps one metric tie threshold in every resample (evaluation: the full sample's
    calibrated one, 0 on these DA z-scores; 0.01 makes sentBLEU pairs within a point ties)."""
    human, metric = _wmt17(shared_data, "tr-en")
    if epsilon == "calibrated":
        epsilon = tie_calibration(human, metric, statistic="acc_23").epsilon
    assert isinstance(epsilon, float)
    index = np.random.default_rng(2).integers(0, human.size, size=(30, human.size))
    expected = [acc_23(human[r], metric[r], epsilon=epsilon).value for r in index]
    np.testing.assert_allclose(resampled_statistic("acc23", human, metric, index, epsilon=epsilon), expected,
                               rtol=0, atol=1e-12)


def test_tie_threshold_is_applied_to_every_resample() -> None:
    rng = np.random.default_rng(3)
    human, metric = _data("ties", 80, rng)
    index = rng.integers(0, human.size, size=(100, human.size))
    expected = [acc_23(human[r], metric[r], epsilon=0.25).value for r in index]
    np.testing.assert_allclose(resampled_statistic("acc23", human, metric, index, epsilon=0.25), expected,
                               rtol=0, atol=1e-12)
    expected_tau = [tau_23(human[r], metric[r], epsilon=0.25).value for r in index]
    np.testing.assert_allclose(resampled_statistic("tau23", human, metric, index, epsilon=0.25), expected_tau,
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["continuous", "ties"])
def test_blocked_products_equal_one_block(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Large groups are multiplied in column and row blocks; the result does not change."""
    rng = np.random.default_rng(5)
    human, metric = _data(kind, 90, rng)
    index = rng.integers(0, 90, size=(70, 90))
    whole = {s: resampled_statistic(s, human, metric, index) for s in SCALAR}
    whole_eps = resampled_statistic("acc23", human, metric, index, epsilon=0.3)
    monkeypatch.setattr(resampled, "MAX_BLOCK_ELEMENTS", 7 * 90)  # 7 columns, 7 resamples per block
    for statistic, values in whole.items():
        np.testing.assert_array_equal(resampled_statistic(statistic, human, metric, index), values)
    np.testing.assert_array_equal(resampled_statistic("acc23", human, metric, index, epsilon=0.3), whole_eps)


def test_degenerate_samples_are_undefined_like_scipy() -> None:
    constant = np.ones(6)
    metric = np.arange(6.0)
    index = np.random.default_rng(0).integers(0, 6, size=(5, 6))
    for statistic in ("pearson", "spearman", "kendall", "kendall_c"):
        assert np.isnan(resampled_statistic(statistic, constant, metric, index)).all(), statistic
    assert np.isnan(resampled_statistic("kendall", metric[:1], metric[:1], np.zeros((5, 1), dtype=np.intp))).all()


@pytest.mark.parametrize("ties", ["discordant", "ignore"])
def test_darr_pairs_match_kendall_like(ties: MetricTies) -> None:
    rng = np.random.default_rng(11)
    better = np.round(rng.normal(size=200), 1)
    worse = np.round(rng.normal(size=200), 1)
    index = rng.integers(0, 200, size=(50, 200))
    expected = [kendall_like_from_pairs(better[r], worse[r], metric_ties=ties).value for r in index]
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


def test_grouped_pearson_equals_scipy_on_the_drawn_cells() -> None:
    """Resampling whole items (groups of cells): each replicate equals scipy's Pearson on the cells of
    the drawn items, repeated as often as their item was drawn (the oracle: scipy.stats.pearsonr)."""
    from assay.stats.resampled import resampled_grouped_pearson

    rng = np.random.default_rng(3)
    items, systems = 40, 5
    group = np.repeat(np.arange(items), systems)
    human = rng.normal(size=items * systems).round(1) - 3.0  # ties and an offset, as MQM scores have
    metric = human + rng.normal(scale=2.0, size=human.size) + 80.0
    index = rng.integers(0, items, size=(30, items))
    counts = resample_counts(index, items)
    replicates = resampled_grouped_pearson(human, metric, group, counts)
    for row, drawn in zip(replicates, index, strict=True):
        cells = np.concatenate([np.flatnonzero(group == i) for i in drawn])
        assert row == pytest.approx(sps.pearsonr(human[cells], metric[cells])[0], abs=1e-12)
    # with every item drawn once, the full-sample value
    assert resampled_grouped_pearson(human, metric, group, np.ones((1, items)))[0] == pytest.approx(
        sps.pearsonr(human, metric)[0], abs=1e-12)
