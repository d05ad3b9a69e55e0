"""Item-grouped acc_23 at one threshold (WMT24 segment-level acc-t) and its bootstrap replicates."""

from __future__ import annotations

import numpy as np
import pytest

from assay.stats import StatsInputError, acc_23, per_group_pairwise, resampled_grouped_mean, tie_calibration
from assay.stats.resampled import resample_counts


def test_grouped_value_at_the_calibrated_threshold_is_tie_calibration() -> None:
    rng = np.random.default_rng(8)
    gold = rng.integers(0, 5, size=(6, 40)).astype(float)  # MQM-like: many human ties
    gold[rng.random(gold.shape) < 0.1] = np.nan
    metric = np.round(gold + rng.normal(size=gold.shape), 1)
    metric[np.isnan(metric)] = 0.0
    gold[:, 3] = np.nan  # an item nobody scored: no value, drops out
    gold[1:, 5] = np.nan  # an item with one score: no pair, drops out
    for grouping in ("item", "system"):
        calibrated = tie_calibration(gold, metric, grouping=grouping)
        grouped = per_group_pairwise(gold, metric, epsilon=calibrated.epsilon, grouping=grouping)
        assert grouped.value == calibrated.value  # the same per-group numbers, averaged the same way
        assert grouped.n_groups == calibrated.n_groups
        assert int(grouped.n_pairs.sum()) == calibrated.n_pairs
    by_item = per_group_pairwise(gold, metric, epsilon=0.5)
    assert by_item.values.shape == (40,)
    assert np.isnan(by_item.values[[3, 5]]).all() and (by_item.n_pairs[[3, 5]] == 0).all()
    assert by_item.value == pytest.approx(acc_23(gold, metric, epsilon=0.5, grouping="item").value, abs=1e-12)


def test_hand_derived_item_grouped_case() -> None:
    # 3 systems x 2 items (rows systems, columns items, so item k is column k).
    #   item 0: gold (1, 2, 2), metric (1, 3, 4); pairs (s0,s1) (s0,s2) (s1,s2):
    #     gold: s0<s1, s0<s2, tie;  |metric diff|: 2, 3, 1 (metric orders s0<s1, s0<s2, s1<s2)
    #   item 1: gold (0, 0, 3), metric (2, 4, 7):
    #     gold: tie, s0<s2, s1<s2;  |metric diff|: 2, 5, 3 (metric orders s0<s1, s0<s2, s1<s2)
    # Candidates: 0 and every |metric diff|: {0, 1, 2, 3, 5}. A pair agrees when ordered alike, or
    # tied in both (metric tie: |diff| <= epsilon).
    #   eps 0: item 0: C, C, human tie only         -> 2/3;  item 1: human tie only, C, C -> 2/3;  mean 2/3
    #   eps 1: item 0: C, C, tie both               -> 3/3;  item 1: unchanged            -> 2/3;  mean 5/6
    #   eps 2: item 0: (s0,s1) metric tie only      -> 2/3;  item 1: (s0,s1) tie both     -> 3/3;  mean 5/6
    #   eps 3: item 0: (s0,s2) metric tie only too  -> 1/3;  item 1: (s1,s2) metric tie   -> 2/3;  mean 1/2
    #   eps 5: item 0: as at 3                      -> 1/3;  item 1: (s0,s2) metric tie   -> 1/3;  mean 1/3
    # The maximum 5/6 is reached at 1 and 2; the smallest maximiser, epsilon = 1, is chosen.
    gold = [[1, 0], [2, 0], [2, 3]]
    metric = [[1, 2], [3, 4], [4, 7]]
    expected = {0: (2 / 3, 2 / 3), 1: (1.0, 2 / 3), 2: (2 / 3, 1.0), 3: (1 / 3, 2 / 3), 5: (1 / 3, 1 / 3)}
    for epsilon, per_item in expected.items():
        grouped = per_group_pairwise(gold, metric, epsilon=epsilon)
        np.testing.assert_allclose(grouped.values, per_item, rtol=0, atol=1e-12)
        assert grouped.value == pytest.approx(sum(per_item) / 2, abs=1e-12)
        assert grouped.n_pairs.tolist() == [3, 3]
    calibrated = tie_calibration(gold, metric, grouping="item")
    assert calibrated.epsilon == 1.0
    assert calibrated.value == pytest.approx(5 / 6, abs=1e-12)
    assert calibrated.n_candidates == 5


def test_mt_metrics_eval_tau_optimization_regression_example() -> None:
    # google-research/mt-metrics-eval tau_optimization_test.py test_regression_example: rows are
    # groups (items, as KendallWithTiesOpt(average_by='item') passes them), columns systems; the
    # expected grouped acc_23 at thresholds 0..8, best threshold 1 and best value are theirs
    # (assertEqual there; 1e-12 here). Their filter drops an entry when either score is None; here
    # the gold score is made missing where the metric's is, which drops the same entries.
    metric_rows = [[0, 5, 2, 3, 2], [None, 2, 1, 5, 3], [9, 1, 5, 3, 8], [9, 3, 4, 4, 1], [None] * 5]
    human_rows = [[1, 5, 2, 1, 1], [4, 2, 2, 1, 4], [5, 9, 2, 8, 7], [7, 6, None, 3, 2], [None] * 5]
    human = np.array(human_rows, dtype=float).T  # (systems, items)
    metric = np.array(metric_rows, dtype=float).T
    human[np.isnan(metric)] = np.nan
    metric[np.isnan(metric)] = 0.0
    expected_taus = [0.4666666666666667, 0.4916666666666668, 0.38333333333333347, 0.29166666666666674,
                     0.2666666666666667, 0.2, 0.15833333333333335, 0.15833333333333335, 0.1166666666666667]
    for threshold, expected in enumerate(expected_taus):
        assert per_group_pairwise(human, metric, epsilon=threshold).value == pytest.approx(expected, abs=1e-12)
    calibrated = tie_calibration(human, metric, grouping="item")
    assert calibrated.epsilon == 1.0
    assert calibrated.value == pytest.approx(0.4916666666666668, abs=1e-12)
    assert calibrated.n_groups == 4  # the all-None row has no pair


def test_resampled_grouped_mean() -> None:
    values = np.array([0.5, np.nan, 1.0, 0.25])
    counts = np.array([[1, 1, 1, 1], [0, 2, 2, 0], [0, 4, 0, 0], [2, 0, 1, 1]], dtype=float)
    replicates = resampled_grouped_mean(values, counts)
    assert replicates[0] == pytest.approx(np.nanmean(values), abs=1e-12)
    assert replicates[1] == pytest.approx(1.0, abs=1e-12)  # the NaN group's draws count for nothing
    assert np.isnan(replicates[2])  # drew only the group without a value
    assert replicates[3] == pytest.approx((2 * 0.5 + 1.0 + 0.25) / 4, abs=1e-12)


def test_resampled_grouped_mean_equals_recomputation_on_drawn_items() -> None:
    rng = np.random.default_rng(9)
    gold = rng.integers(0, 4, size=(5, 30)).astype(float)
    metric = gold + rng.normal(size=gold.shape)
    epsilon = tie_calibration(gold, metric, grouping="item").epsilon
    grouped = per_group_pairwise(gold, metric, epsilon=epsilon)
    index = rng.integers(0, 30, size=(50, 30))
    replicates = resampled_grouped_mean(grouped.values, resample_counts(index, 30))
    for rows, replicate in zip(index, replicates, strict=True):
        direct = acc_23(gold[:, rows], metric[:, rows], epsilon=epsilon, grouping="item").value
        assert replicate == pytest.approx(direct, abs=1e-12)
    ones = resampled_grouped_mean(grouped.values, np.ones((2, 30)))
    np.testing.assert_allclose(ones, grouped.value, rtol=0, atol=1e-12)


def test_bad_arguments() -> None:
    with pytest.raises(StatsInputError, match="epsilon must be non-negative"):
        per_group_pairwise([1, 2], [1, 2], epsilon=-1)
    with pytest.raises(StatsInputError, match="unknown pairwise statistic"):
        per_group_pairwise([1, 2], [1, 2], epsilon=0, statistic="tau_b")  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="counts must be"):
        resampled_grouped_mean([0.5, 1.0], np.ones((2, 3)))
