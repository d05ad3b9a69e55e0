"""Pearson / Spearman / Kendall with grouping, against the mt-metrics-eval fixtures and scipy."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pytest
import scipy.stats

from assay.stats import Correlation, Grouping, StatsInputError, correlate, kendall_tau, pearson, spearman
from assay.stats.correlation import CorrelationStatistic

# REFERENCE_NUMBERS.md, from google-research/mt-metrics-eval tests (stats_test.py, CorrelationTest):
# two systems, system-major. Printed with 3 decimals, so compared at abs 1e-3 (their places=3).
TWO_SYSTEMS_GOLD = [1, 2, 3, 4, 5, 6]
TWO_SYSTEMS_METRIC = [2, 1, 4, 3, 3, 7]


@pytest.mark.parametrize(
    ("grouping", "expected"),
    [("none", 0.776), ("system", 0.760), ("item", 1.00)],
)
def test_pearson_fixture(grouping: Grouping, expected: float) -> None:
    # REFERENCE_NUMBERS.md, from google-research/mt-metrics-eval tests: Pearson .776 / .760 / 1.00.
    corr = Correlation(TWO_SYSTEMS_GOLD, TWO_SYSTEMS_METRIC, num_systems=2)
    assert corr.pearson(grouping).value == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize(
    ("grouping", "variant", "expected"),
    [
        ("none", "b", 0.552),
        ("system", "b", 0.575),
        ("item", "b", 1.00),
        ("none", "c", 0.556),
        ("system", "c", 0.611),
        ("item", "c", 1.00),
    ],
)
def test_kendall_fixture(grouping: Grouping, variant: Literal["b", "c"], expected: float) -> None:
    # REFERENCE_NUMBERS.md, from google-research/mt-metrics-eval tests: tau-b .552/.575/1.00,
    # tau-c .556/.611/1.00 (abs 1e-3: printed with 3 decimals).
    corr = Correlation(TWO_SYSTEMS_GOLD, TWO_SYSTEMS_METRIC, num_systems=2)
    assert corr.kendall(grouping, variant).value == pytest.approx(expected, abs=1e-3)


def test_one_group_tau_b_and_tau_c_fixture() -> None:
    # REFERENCE_NUMBERS.md, from google-research/mt-metrics-eval tests: tau-b 0.316227766 (abs 1e-9,
    # printed with 9 decimals) and tau-c 0.32 (exact in their test; abs 1e-12 here).
    gold, metric = [1, 2, 2, 3, 4], [2, 1, 1.5, 5, 3]
    assert kendall_tau(gold, metric).value == pytest.approx(0.316227766, abs=1e-9)
    assert kendall_tau(gold, metric, variant="c").value == pytest.approx(0.32, abs=1e-12)


def test_matrix_input_equals_flat_system_major_input() -> None:
    matrix = np.array(TWO_SYSTEMS_GOLD).reshape(2, 3)
    metric = np.array(TWO_SYSTEMS_METRIC).reshape(2, 3)
    flat = pearson(TWO_SYSTEMS_GOLD, TWO_SYSTEMS_METRIC, num_systems=2, grouping="system")
    from_matrix = pearson(matrix, metric, grouping="system")
    assert (from_matrix.value, from_matrix.n, from_matrix.n_groups) == (flat.value, flat.n, flat.n_groups)


@pytest.mark.parametrize("statistic", ["pearson", "spearman", "kendall_b", "kendall_c"])
def test_ungrouped_matches_scipy_on_random_data(statistic: CorrelationStatistic) -> None:
    rng = np.random.default_rng(7)
    gold = rng.normal(size=300)
    metric = gold + rng.normal(scale=1.5, size=300)
    metric[::10] = np.round(metric[::10])  # some ties
    reference = {
        "pearson": scipy.stats.pearsonr(gold, metric),
        "spearman": scipy.stats.spearmanr(gold, metric),
        "kendall_b": scipy.stats.kendalltau(gold, metric, variant="b"),
        "kendall_c": scipy.stats.kendalltau(gold, metric, variant="c"),
    }[statistic]
    result = correlate(gold, metric, statistic)
    assert result.value == pytest.approx(reference.statistic, abs=1e-12)
    assert result.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    assert (result.n, result.n_groups, result.n_missing) == (300, 1, 0)


@pytest.mark.parametrize("grouping", ["system", "item"])
def test_grouped_is_mean_of_scipy_over_rows_or_columns(grouping: Grouping) -> None:
    rng = np.random.default_rng(11)
    gold = rng.normal(size=(4, 25))
    metric = gold + rng.normal(size=(4, 25))
    rows = (gold, metric) if grouping == "system" else (gold.T, metric.T)
    expected = np.mean([scipy.stats.spearmanr(g, m).statistic for g, m in zip(*rows, strict=True)])
    result = spearman(gold.ravel(), metric.ravel(), num_systems=4, grouping=grouping)
    assert result.value == pytest.approx(expected, abs=1e-12)
    assert result.n_groups == len(rows[0])
    assert np.isnan(result.p_value)  # a mean of p-values is not reported as a p-value


def test_missing_gold_entries_are_dropped_with_their_metric_score() -> None:
    gold = [1, None, 3, 4, float("nan"), 6]
    metric = [2, 1, 4, 3, 5, 6]
    result = pearson(gold, metric)
    expected = scipy.stats.pearsonr([1, 3, 4, 6], [2, 4, 3, 6])
    assert result.value == pytest.approx(expected.statistic, abs=1e-12)
    assert (result.n, result.n_missing) == (4, 2)


def test_grouped_skips_groups_left_without_a_correlation() -> None:
    # System 1 has a constant metric (r undefined) and is left out of the mean, as in mt-metrics-eval.
    gold, metric = [1, 2, 3, 4, 5, 6], [2, 2, 2, 4, 5, 6]
    result = pearson(gold, metric, num_systems=2, grouping="system")
    assert result.value == pytest.approx(1.0, abs=1e-12)
    assert result.n_groups == 1


def test_all_groups_undefined_gives_nan_not_zero() -> None:
    result = pearson([1, 2, 3], [5, 5, 5])
    assert np.isnan(result.value)
    assert result.n_groups == 0


def test_missing_metric_score_is_an_error() -> None:
    with pytest.raises(StatsInputError, match="metric scores: 1 missing"):
        pearson([1, 2, 3], [1, None, 3])


def test_length_mismatch_and_bad_layout_are_errors() -> None:
    with pytest.raises(StatsInputError, match="differ in length"):
        pearson([1, 2, 3], [1, 2])
    with pytest.raises(StatsInputError, match="cannot be split into 4 systems"):
        pearson([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6], num_systems=4, grouping="item")
    with pytest.raises(StatsInputError, match="unknown grouping"):
        pearson([1, 2, 3], [1, 2, 3], grouping="segment")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown correlation"):
        correlate([1, 2, 3], [1, 2, 3], "kendall_23")  # type: ignore[arg-type]
