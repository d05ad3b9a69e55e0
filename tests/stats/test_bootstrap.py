"""The bootstrap of the meta-evaluation: named resampling streams, percentile intervals, paired tests."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import scipy.stats

from assay.stats import StatsInputError, paired_bootstrap_p_value, percentile_interval, resample_indices
from assay.stats.resampled import ResampledPairs, resample_counts


def _data(n: int = 80) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    gold = rng.normal(size=n)
    return gold, gold + rng.normal(size=n)


def test_a_stream_is_reproducible_and_each_seed_and_stream_draws_its_own() -> None:
    first = resample_indices(17, "seg/de-en/da", 200, 80)
    assert first.shape == (200, 80) and first.min() >= 0 and first.max() < 80
    np.testing.assert_array_equal(first, resample_indices(17, "seg/de-en/da", 200, 80))
    assert not np.array_equal(first, resample_indices(18, "seg/de-en/da", 200, 80))
    assert not np.array_equal(first, resample_indices(17, "seg/fi-en/da", 200, 80))


def test_a_stream_is_seeded_with_the_seed_and_the_salt_of_its_name() -> None:
    # The stored intervals depend on this seeding: [seed, first 32 bits of sha256(stream)].
    salt = int(hashlib.sha256(b"sys/de-en/da").hexdigest()[:8], 16)
    expected = np.random.default_rng([5, salt]).integers(0, 30, size=(40, 30))
    np.testing.assert_array_equal(resample_indices(5, "sys/de-en/da", 40, 30), expected)


def test_a_negative_seed_is_refused() -> None:
    with pytest.raises(StatsInputError, match="seed"):
        resample_indices(-1, "seg/de-en/da", 10, 10)


def test_percentile_interval_of_the_defined_replicates() -> None:
    replicates = np.append(np.arange(101.0), [np.nan, np.nan])
    assert percentile_interval(replicates) == (2.5, 97.5)
    assert percentile_interval(replicates, confidence=0.5) == (25.0, 75.0)
    low, high = percentile_interval([np.nan, np.nan])
    assert np.isnan(low) and np.isnan(high)


def test_interval_of_a_statistic_brackets_the_estimate_and_is_the_row_by_row_bootstrap() -> None:
    gold, metric = _data()
    index = resample_indices(0, "seg/de-en/da", 150, gold.size)
    replicates = ResampledPairs(gold, metric, resample_counts(index, gold.size)).statistic("kendall")
    row_by_row = [scipy.stats.kendalltau(gold[rows], metric[rows]).statistic for rows in index]
    value = scipy.stats.kendalltau(gold, metric).statistic
    wide = percentile_interval(replicates, 0.95)
    narrow = percentile_interval(replicates, 0.5)
    assert wide[0] < value < wide[1]
    assert wide[0] <= narrow[0] <= narrow[1] <= wide[1]
    np.testing.assert_allclose(wide, percentile_interval(row_by_row, 0.95), rtol=0, atol=1e-12)


def test_paired_bootstrap_p_value_is_the_share_of_replicates_where_the_better_is_not_better() -> None:
    better = np.array([0.5, 0.6, 0.4, 0.7, np.nan])
    worse = np.array([0.4, 0.6, 0.5, 0.1, 0.2])
    # defined differences 0.1, 0.0, -0.1, 0.6: two of four are not positive
    assert paired_bootstrap_p_value(better, worse) == 0.5
    assert paired_bootstrap_p_value(better[[0, 3]], worse[[0, 3]]) == 0.0
    assert paired_bootstrap_p_value([np.nan], [0.1]) == 1.0
