"""Bootstrap confidence intervals."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from assay.stats import StatsInputError, bootstrap_ci


def _kendall(gold: np.ndarray, metric: np.ndarray) -> float:
    return float(scipy.stats.kendalltau(gold, metric).statistic)


def _pearson(gold: np.ndarray, metric: np.ndarray) -> float:
    return float(np.corrcoef(gold, metric)[0, 1])


def _data(n: int = 80) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    gold = rng.normal(size=n)
    return gold, gold + rng.normal(size=n)


def test_deterministic_under_seed_and_seed_recorded() -> None:
    gold, metric = _data()
    first = bootstrap_ci(_pearson, gold, metric, seed=17, n_resamples=200)
    again = bootstrap_ci(_pearson, gold, metric, seed=17, n_resamples=200)
    other = bootstrap_ci(_pearson, gold, metric, seed=18, n_resamples=200)
    assert first == again
    assert first.seed == 17 and first.n_resamples == 200 and first.n_valid == 200
    assert (other.ci_low, other.ci_high) != (first.ci_low, first.ci_high)


def test_interval_brackets_the_estimate_and_narrows_with_confidence() -> None:
    gold, metric = _data()
    wide = bootstrap_ci(_kendall, gold, metric, seed=0, n_resamples=150, confidence=0.95)
    narrow = bootstrap_ci(_kendall, gold, metric, seed=0, n_resamples=150, confidence=0.5)
    assert wide.value == pytest.approx(_kendall(gold, metric))
    assert wide.ci_low < wide.value < wide.ci_high
    assert wide.ci_low <= narrow.ci_low <= narrow.ci_high <= wide.ci_high


def test_percentiles_of_the_replicates() -> None:
    # Same generator calls as the implementation: one integers() draw of n rows per resample.
    values = np.arange(10.0)
    result = bootstrap_ci(np.mean, values, seed=5, n_resamples=50, confidence=0.9)
    rng = np.random.default_rng(5)
    replicates = [values[rng.integers(0, 10, size=10)].mean() for _ in range(50)]
    assert (result.ci_low, result.ci_high) == tuple(np.percentile(replicates, [5, 95]))


def test_cluster_resampling_keeps_clusters_whole() -> None:
    # Two clusters with constant values 0 and 1: a resample holds 0, 1 or 2 copies of cluster "b",
    # so the mean can only be 0, 0.5 or 1 (row resampling would give many other values).
    values = np.array([0.0, 0.0, 1.0, 1.0])
    seen = set()

    def record(v: np.ndarray) -> float:
        seen.add(float(v.mean()))
        return float(v.mean())

    result = bootstrap_ci(record, values, seed=3, n_resamples=100, clusters=["a", "a", "b", "b"])
    assert seen <= {0.0, 0.5, 1.0}
    assert result.resampling_unit == "cluster"


def test_undefined_replicates_are_counted_not_used() -> None:
    values = np.array([1.0, 1.0, 1.0, 2.0])

    def undefined_when_constant(v: np.ndarray) -> float:
        return float("nan") if np.all(v == v[0]) else float(v.std())

    result = bootstrap_ci(undefined_when_constant, values, seed=0, n_resamples=400)
    assert 0 < result.n_valid < 400
    assert not np.isnan(result.ci_low)


def test_bad_inputs() -> None:
    gold, metric = _data()
    with pytest.raises(StatsInputError, match="seed"):
        bootstrap_ci(_kendall, gold, metric, seed=-1)
    with pytest.raises(StatsInputError, match="same number of rows"):
        bootstrap_ci(_kendall, gold, metric[:-1], seed=0)
    with pytest.raises(StatsInputError, match="confidence"):
        bootstrap_ci(_kendall, gold, metric, seed=0, confidence=95)
    with pytest.raises(StatsInputError, match="one label per row"):
        bootstrap_ci(_kendall, gold, metric, seed=0, clusters=[1, 2])


@pytest.mark.parametrize("name", ["pearson", "spearman", "kendall", "kendall_c", "tau23", "acc23"])
def test_named_statistics_are_the_vectorised_form_of_the_same_bootstrap(name: str) -> None:
    """A named statistic draws the same resamples (one (R, n) draw equals R draws of n from the
    generator) and computes every replicate at once; the oracle is the row-by-row bootstrap of
    the scalar statistic (scipy / assay.stats.pairwise), interval ends to 1e-12."""
    from assay.stats.resampled import scalar_statistic

    rng = np.random.default_rng(4)
    gold = rng.integers(1, 4, size=70).astype(float)  # ties, like WebNLG's 1-3 ratings
    metric = np.round(gold + rng.normal(size=70), 1)
    vectorised = bootstrap_ci(name, gold, metric, seed=11, n_resamples=300)
    row_by_row = bootstrap_ci(scalar_statistic(name), gold, metric, seed=11, n_resamples=300)
    assert vectorised.value == row_by_row.value
    assert vectorised.ci_low == pytest.approx(row_by_row.ci_low, abs=1e-12)
    assert vectorised.ci_high == pytest.approx(row_by_row.ci_high, abs=1e-12)
    assert (vectorised.seed, vectorised.n_valid) == (11, row_by_row.n_valid)
