"""Hybrid super-sampling and model selection (BERTScore appendix F.2)."""

from __future__ import annotations

import numpy as np
import pytest

from assay.stats import StatsInputError, model_selection, sample_hybrid_systems


def _segment_scores(seed: int = 0, systems: int = 6, items: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.normal(size=(systems, 1)) + rng.normal(size=(systems, items))
    return human, human + rng.normal(scale=0.5, size=(systems, items))


def test_hybrids_are_deterministic_under_seed() -> None:
    human, metric = _segment_scores()
    first = sample_hybrid_systems(human, metric, n_hybrid=300, seed=7)
    again = sample_hybrid_systems(human, metric, n_hybrid=300, seed=7)
    other = sample_hybrid_systems(human, metric, n_hybrid=300, seed=8)
    np.testing.assert_array_equal(first.human, again.human)
    np.testing.assert_array_equal(first.metric, again.metric)
    assert not np.array_equal(first.human, other.human)
    assert (first.seed, first.num_real_systems, first.num_items) == (7, 6, 40)


def test_hybrid_scores_are_means_of_the_picked_segments() -> None:
    # System s scores s on every item (human) and 10*s (metric): a hybrid's human score is the mean
    # of the picked systems' indices, and its metric score is exactly 10 times that.
    human = np.repeat(np.arange(4.0)[:, None], 5, axis=1)
    result = sample_hybrid_systems(human, 10 * human, n_hybrid=200, seed=1)
    np.testing.assert_allclose(result.metric, 10 * result.human, rtol=1e-12)
    assert set(np.round(result.human * 5).astype(int)) <= set(range(16))  # sums of 5 picks in 0..3
    assert result.human.std() > 0


def test_missing_human_scores_are_left_out_of_the_hybrid_mean() -> None:
    # Item 1's human score is missing for system 0 only; systems score 1 (system 0) or 3 (system 1).
    human = np.array([[1.0, np.nan], [3.0, 3.0]])
    result = sample_hybrid_systems(human, np.zeros((2, 2)), n_hybrid=100, seed=0)
    assert set(result.human) <= {1.0, 2.0, 3.0}
    with pytest.raises(StatsInputError, match="too sparse"):
        sample_hybrid_systems(np.array([[np.nan], [np.nan]]), np.zeros((2, 1)), n_hybrid=5, seed=0)


def test_metric_equal_to_human_always_selects_the_best() -> None:
    human, _ = _segment_scores()
    hybrids = sample_hybrid_systems(human, human, n_hybrid=500, seed=3)
    result = model_selection(hybrids.human, hybrids.metric, n_candidates=20, n_trials=400, seed=5)
    assert (result.hits_at_1, result.mrr, result.mean_abs_human_diff) == (1.0, 1.0, 0.0)
    assert (result.n_trials, result.n_candidates, result.seed) == (400, 20, 5)


def test_reversed_metric_selects_the_worst() -> None:
    human = np.arange(50.0)
    result = model_selection(human, -human, n_candidates=10, n_trials=200, seed=0)
    assert result.hits_at_1 == 0.0
    assert result.mrr == pytest.approx(0.1)  # the pick is always last of 10
    assert result.mean_abs_human_diff > 10


def test_model_selection_is_deterministic_and_between_extremes() -> None:
    human, metric = _segment_scores(seed=1)
    hybrids = sample_hybrid_systems(human, metric, n_hybrid=1000, seed=2)
    first = model_selection(hybrids.human, hybrids.metric, n_candidates=50, n_trials=500, seed=9)
    again = model_selection(hybrids.human, hybrids.metric, n_candidates=50, n_trials=500, seed=9)
    assert first == again
    assert 0.0 < first.hits_at_1 < 1.0
    assert first.hits_at_1 <= first.mrr <= 1.0


def test_bad_inputs() -> None:
    with pytest.raises(StatsInputError, match="n_candidates"):
        model_selection([1.0, 2.0], [1.0, 2.0], n_candidates=3, n_trials=1, seed=0)
    with pytest.raises(StatsInputError, match="at least 2 real systems"):
        sample_hybrid_systems([[1.0, 2.0]], [[1.0, 2.0]], n_hybrid=1, seed=0)
