"""Mask placement of BLEURT's mask filling (appendix A.1): random words or one contiguous run of
words, up to 15 masks counted in the filler's tokens, the number drawn uniformly."""

from __future__ import annotations

import numpy as np
import pytest

from assay.errors import UsageError
from assay.synthetic.masking import MAX_MASKS, sample_mask


def test_random_and_contiguous_masks_respect_the_budget() -> None:
    rng = np.random.default_rng(0)
    counts = {"random": [], "contiguous": []}
    for _ in range(4000):
        costs = rng.integers(1, 4, size=int(rng.integers(1, 40)))
        strategy, positions = sample_mask(costs, rng)
        assert positions.size >= 1
        assert np.all(np.diff(positions) > 0)
        assert int(costs[positions].sum()) <= MAX_MASKS
        if strategy == "contiguous":
            assert np.all(np.diff(positions) == 1)
        counts[strategy].append(int(costs[positions].sum()))
    # both strategies are used about equally (contiguous_share 0.5)
    assert abs(len(counts["random"]) - len(counts["contiguous"])) < 300


def test_mask_counts_are_uniform_with_unit_costs() -> None:
    """One token per word (the n-gram filler): m ~ U{1..min(15, n)} exactly, for both strategies."""
    rng = np.random.default_rng(1)
    for share in (0.0, 1.0):
        sizes = [sample_mask(np.ones(30, dtype=int), rng, contiguous_share=share)[1].size for _ in range(15000)]
        freq = np.bincount(sizes, minlength=16)[1:] / len(sizes)
        np.testing.assert_allclose(freq, 1 / 15, atol=0.012)
    # a contiguous run of m words starts anywhere in 0..n-m, uniformly
    starts = [p[0] for p in (sample_mask(np.ones(10, dtype=int), rng, max_masks=3, contiguous_share=1.0)[1]
                             for _ in range(9000)) if p.size == 3]
    assert set(starts) == set(range(8))


def test_degenerate_sentences() -> None:
    rng = np.random.default_rng(2)
    assert sample_mask([], rng)[1].size == 0
    assert sample_mask([16, 20], rng)[1].size == 0  # no word fits in 15 masks
    _, positions = sample_mask([16, 2, 30], rng)
    assert positions.tolist() == [1]
    with pytest.raises(UsageError, match="max_masks"):
        sample_mask([1], rng, max_masks=0)
    with pytest.raises(UsageError, match="contiguous_share"):
        sample_mask([1], rng, contiguous_share=1.5)
