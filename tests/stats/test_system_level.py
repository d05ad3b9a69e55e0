"""System-level correlation from segment means or corpus scores."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from assay.stats import StatsInputError, system_level_correlation, system_scores


def test_system_score_is_mean_of_segment_scores() -> None:
    segments = np.array([[1.0, 2.0, 3.0], [4.0, 4.0, 4.0]])
    np.testing.assert_array_equal(system_scores(segments), [2.0, 4.0])
    np.testing.assert_array_equal(system_scores(segments.ravel(), num_systems=2), [2.0, 4.0])


def test_correlation_from_segments_and_from_corpus_scores() -> None:
    rng = np.random.default_rng(1)
    segments = rng.normal(size=(7, 30))
    human = segments.mean(axis=1) + rng.normal(scale=0.1, size=7)
    from_segments = system_level_correlation(human, segment_scores=segments)
    expected = scipy.stats.pearsonr(human, segments.mean(axis=1)).statistic
    assert from_segments.value == pytest.approx(expected, abs=1e-12)
    corpus = rng.normal(size=7)
    from_corpus = system_level_correlation(human, corpus_scores=corpus, statistic="kendall_b")
    assert from_corpus.value == pytest.approx(scipy.stats.kendalltau(human, corpus).statistic, abs=1e-12)


def test_systems_without_human_score_are_left_out() -> None:
    result = system_level_correlation([0.1, None, 0.3, 0.2], corpus_scores=[1.0, 9.0, 3.0, 2.0])
    assert result.n == 3 and result.n_missing == 1
    assert result.value == pytest.approx(scipy.stats.pearsonr([0.1, 0.3, 0.2], [1, 3, 2]).statistic)


def test_exactly_one_metric_source() -> None:
    with pytest.raises(StatsInputError, match="exactly one"):
        system_level_correlation([1, 2], segment_scores=[[1], [2]], corpus_scores=[1, 2])
    with pytest.raises(StatsInputError, match="exactly one"):
        system_level_correlation([1, 2])
    with pytest.raises(StatsInputError, match="one per system"):
        system_level_correlation([1, 2, 3], corpus_scores=[1, 2])


def test_resampled_system_scores_equal_the_resampled_items() -> None:
    """Each replicate's system scores from resample counts equal the scores of the gathered items
    (oracle: numpy on ``matrix[:, rows]``; corpus score: summed sufficient statistics, here a ratio
    of two counts like BLEU's brevity term, ``corpus_score`` of the sums)."""
    from assay.stats.resampled import resample_counts
    from assay.stats.system_level import resampled_corpus_scores, resampled_system_scores

    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(5, 40))
    stats = rng.integers(0, 30, size=(5, 40, 2)).astype(float) + 1
    index = rng.integers(0, 40, size=(25, 40))
    counts = resample_counts(index, 40)
    np.testing.assert_allclose(resampled_system_scores(matrix, counts), [matrix[:, r].mean(axis=1) for r in index],
                               rtol=0, atol=1e-12)

    def ratio(totals: np.ndarray) -> float:
        return float(totals[0] / totals[1])

    expected = [[ratio(stats[s, r].sum(axis=0)) for s in range(5)] for r in index]
    np.testing.assert_array_equal(resampled_corpus_scores(stats, counts, ratio), expected)
