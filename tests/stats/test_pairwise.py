"""tau_23, acc_23, tie calibration and pairwise accuracy."""

from __future__ import annotations

from typing import cast

import numpy as np
import pytest
import scipy.stats

from assay.stats import (
    Grouping,
    StatsInputError,
    acc_23,
    pair_counts,
    pairwise_accuracy,
    per_group_pairwise,
    tau_23,
    tie_calibration,
)
from assay.stats.pairwise import PairwiseStatistic

GOLD, METRIC = [1, 2, 2, 3, 4], [2, 1, 1.5, 5, 3]


def test_one_group_fixture() -> None:
    # REFERENCE_NUMBERS.md, from google-research/mt-metrics-eval tests: tau_23 0.2, acc_23 0.6,
    # acc_23 with epsilon 2: 0.4, tie-calibrated acc_23 0.7 (exact equality in their tests; the
    # values are ratios of small integers, compared here at abs 1e-12).
    assert tau_23(GOLD, METRIC).value == pytest.approx(0.2, abs=1e-12)
    assert acc_23(GOLD, METRIC).value == pytest.approx(0.6, abs=1e-12)
    assert acc_23(GOLD, METRIC, epsilon=2).value == pytest.approx(0.4, abs=1e-12)
    calibrated = tie_calibration(GOLD, METRIC)
    assert calibrated.value == pytest.approx(0.7, abs=1e-12)
    # The calibrated threshold reproduces the value, and is the smallest that does.
    assert acc_23(GOLD, METRIC, epsilon=calibrated.epsilon).value == calibrated.value
    assert calibrated.epsilon == 0.5


def test_sufficient_statistics_mt_metrics_eval_case() -> None:
    # google-research/mt-metrics-eval stats_test.py testKendallVariants_23 (x is gold, y metric):
    # 21 pairs, tau_23 = (14 - 7) / 21, acc_23 = 14 / 21; with epsilon 1
    # (testKendallVariantsWithPositiveEpsilon) tau_23 = -1 / 21. Epsilon widens the *metric* ties,
    # as in mt-metrics-eval's code: 7 concordant, 1 human-only tie, 10 metric-only, 3 both.
    x, y = [1, 1, 1, 2, 2, 3, 4], [1, 1, 2, 2, 4, 3, 3]
    counts = pair_counts(x, y)
    assert counts.n_pairs == 21
    assert (counts.ties_both, counts.ties_human, counts.ties_metric, counts.discordant) == (1, 3, 2, 2)
    assert tau_23(x, y).value == pytest.approx(7 / 21, abs=1e-12)
    assert acc_23(x, y).value == pytest.approx(14 / 21, abs=1e-12)
    assert tau_23(x, y, epsilon=0.1).value == pytest.approx(7 / 21, abs=1e-12)
    widened = pair_counts(x, y, epsilon=1.0)
    assert (widened.concordant, widened.ties_human, widened.ties_metric, widened.ties_both) == (7, 1, 10, 3)
    assert widened.discordant == 0
    assert tau_23(x, y, epsilon=1.0).value == pytest.approx(-1 / 21, abs=1e-12)


def test_agreement_mt_metrics_eval_case() -> None:
    # google-research/mt-metrics-eval stats_test.py testAgreement: 5 of 10 pairs agree in sign.
    result = pairwise_accuracy([1, 2, 3, 3, 4], [1, 1, 2, 1, 2])
    assert (result.value, result.n_pairs, result.statistic) == (0.5, 10, "pairwise_accuracy")


def test_without_ties_tau_23_is_tau_b() -> None:
    rng = np.random.default_rng(3)
    gold, metric = rng.normal(size=40), rng.normal(size=40)
    assert tau_23(gold, metric).value == pytest.approx(scipy.stats.kendalltau(gold, metric).statistic, abs=1e-12)


def test_tie_calibration_brute_force_on_random_data() -> None:
    rng = np.random.default_rng(5)
    gold = rng.integers(0, 4, size=30).astype(float)  # many human ties
    metric = np.round(gold + rng.normal(scale=1.0, size=30), 1)
    for statistic, function in (("acc_23", acc_23), ("tau_23", tau_23)):
        result = tie_calibration(gold, metric, statistic=cast(PairwiseStatistic, statistic))
        candidates = np.unique(np.r_[0.0, np.abs(metric[:, None] - metric[None, :]).ravel()])
        values = np.array([function(gold, metric, epsilon=float(e)).value for e in candidates])
        assert result.value == pytest.approx(values.max(), abs=1e-12)
        assert result.epsilon == candidates[np.argmax(values)]  # smallest maximiser
        assert result.n_candidates == candidates.size


@pytest.mark.parametrize("grouping", ["system", "item"])
def test_tie_calibration_grouped_uses_one_threshold_for_all_groups(grouping: Grouping) -> None:
    # Mirrors mt-metrics-eval stats_test.py testKendallWithTiesOpt: the grouped optimum is the
    # mean of the per-group acc_23 at the single calibrated epsilon.
    gold, metric = [1, 2, 2, 3, 3, 4], [2, 1, 1.5, 5, 3, 2]
    result = tie_calibration(gold, metric, num_systems=2, grouping=grouping)
    at_epsilon = acc_23(gold, metric, epsilon=result.epsilon, num_systems=2, grouping=grouping)
    assert result.value == pytest.approx(at_epsilon.value, abs=1e-12)
    # ... and the mean of the per-group values at that epsilon (3 items or 2 systems)
    per_group = per_group_pairwise(gold, metric, epsilon=result.epsilon, num_systems=2, grouping=grouping)
    assert per_group.values.shape == ((3,) if grouping == "item" else (2,))
    assert result.value == float(np.mean(per_group.values))
    rng = np.random.default_rng(0)
    for epsilon in rng.uniform(0, 4, size=20):
        other = acc_23(gold, metric, epsilon=float(epsilon), num_systems=2, grouping=grouping)
        assert other.value <= result.value + 1e-12


def test_missing_gold_and_bad_arguments() -> None:
    assert acc_23([1, None, 3], [1, 5, 2]).n_pairs == 1
    with pytest.raises(StatsInputError, match="epsilon must be non-negative"):
        acc_23(GOLD, METRIC, epsilon=-1)
    with pytest.raises(StatsInputError, match="unknown pairwise statistic"):
        tie_calibration(GOLD, METRIC, statistic="tau_b")  # type: ignore[arg-type]
