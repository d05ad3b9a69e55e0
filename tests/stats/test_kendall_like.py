"""WMT DARR Kendall-like correlation."""

from __future__ import annotations

import math

import pytest

from assay.stats import StatsInputError, kendall_like, kendall_like_from_pairs, metric_ties_for_wmt_year


def test_fixture_one_system_with_missing_gold() -> None:
    # REFERENCE_NUMBERS.md, from google-research/mt-metrics-eval tests: gold [10, None, 100, 150],
    # metric [2, 1, 4, 3], threshold 1, no grouping -> 1/3 (exact equality in their test; abs 1e-12).
    result = kendall_like([10, None, 100, 150], [2, 1, 4, 3], threshold=1, grouping="none")
    assert result.value == pytest.approx(1 / 3, abs=1e-12)
    assert (result.concordant, result.discordant, result.n_pairs) == (2, 1, 3)


def test_more_mt_metrics_eval_cases() -> None:
    # google-research/mt-metrics-eval stats_test.py (CorrelationFunctionsTest.testKendallLike and
    # CorrelationTest.testKendallLike): (3/5, 5 pairs, 4 C, 1 D) at the default threshold 25,
    # (2/6, 6, 4, 2) at threshold 1, and 1.0 when averaged by item over two systems.
    gold, metric = [10, 11, 100, 150], [2, 1, 4, 3]
    default = kendall_like(gold, metric, grouping="none")
    assert (default.value, default.n_pairs, default.concordant, default.discordant) == (3 / 5, 5, 4, 1)
    loose = kendall_like(gold, metric, threshold=1, grouping="none")
    assert (loose.value, loose.n_pairs, loose.concordant, loose.discordant) == (2 / 6, 6, 4, 2)
    assert kendall_like(gold, metric, threshold=1, num_systems=2).value == 1
    assert kendall_like([10, None, 100, 150], metric, threshold=1, num_systems=2).value == 1


def test_metric_ties_policies() -> None:
    gold, metric = [0, 50, 100], [1, 1, 2]  # (0,50) is a metric tie; the other two pairs agree
    penalised = kendall_like(gold, metric, grouping="none", metric_ties="discordant")
    ignored = kendall_like(gold, metric, grouping="none", metric_ties="ignore")
    assert (penalised.concordant, penalised.discordant, penalised.metric_ties) == (2, 1, 1)
    assert penalised.value == pytest.approx(1 / 3)
    assert (ignored.concordant, ignored.discordant, ignored.metric_ties) == (2, 0, 1)
    assert ignored.value == 1.0


def test_policy_by_wmt_year() -> None:
    assert metric_ties_for_wmt_year(2017) == "ignore"
    assert metric_ties_for_wmt_year(2018) == "discordant"
    assert metric_ties_for_wmt_year(2019) == "discordant"
    with pytest.raises(StatsInputError, match="starts with WMT17"):
        metric_ties_for_wmt_year(2016)


def test_threshold_is_inclusive_as_in_mt_metrics_eval() -> None:
    at_threshold = kendall_like([0, 25], [1, 0], grouping="none")
    assert (at_threshold.n_pairs, at_threshold.value) == (1, -1.0)
    below = kendall_like([0, 24.9], [1, 0], grouping="none")
    assert below.n_pairs == 0 and math.isnan(below.value)


def test_item_grouping_pools_pairs_over_items() -> None:
    # 3 systems x 2 items, system-major. Item 0: gold 0/30/60, metric agrees on all 3 pairs.
    # Item 1: gold 0/0/90 -> pairs (0,2) and (1,2) qualify; the metric gets one right, one wrong.
    gold = [0, 0, 30, 0, 60, 90]
    metric = [1, 5, 2, 9, 3, 7]
    result = kendall_like(gold, metric, num_systems=3)
    assert (result.concordant, result.discordant, result.n_groups) == (4, 1, 2)
    assert result.value == pytest.approx(3 / 5)  # pooled, not the mean of 1.0 and 0.0


def test_explicit_darr_pairs() -> None:
    better, worse = [3.0, 2.0, 2.0, 0.5], [1.0, 2.0, 3.0, 0.1]
    penalised = kendall_like_from_pairs(better, worse)
    assert (penalised.concordant, penalised.discordant, penalised.metric_ties) == (2, 2, 1)
    assert penalised.value == 0.0
    ignored = kendall_like_from_pairs(better, worse, metric_ties="ignore")
    assert ignored.value == pytest.approx(1 / 3)
    assert ignored.threshold is None


def test_bad_arguments() -> None:
    with pytest.raises(StatsInputError, match="threshold must be positive"):
        kendall_like([1, 2], [1, 2], threshold=0, grouping="none")
    with pytest.raises(StatsInputError, match="unknown metric_ties"):
        kendall_like([1, 2], [1, 2], metric_ties="concordant", grouping="none")  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="one of each per pair"):
        kendall_like_from_pairs([1, 2], [1])
