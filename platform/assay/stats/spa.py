"""Soft pairwise accuracy (SPA): agreement of a metric's and the humans' system-pair p-values.

Thompson, Mathur, Deutsch and Freitag (2024), "Improving Statistical Significance in Human Evaluation
of Automatic Metrics via Soft Pairwise Accuracy" (WMT24; the system-level statistic of the WMT24
metrics task). For every pair of systems (i, j) a one-sided paired permutation test gives the p-value
that system i is better than system j, once from the human segment scores and once from the
metric's; SPA is one minus the mean absolute difference of the two p-values over the pairs
(one minus the *pairwise confidence error*, PCE). A metric that is as sure as the humans, and no
surer, scores 1.

The arithmetic is that of google-research/mt-metrics-eval ``pce.py`` (``compute_pairwise_p_values``,
``compute_one_minus_pce``), so the numbers are pce.py's (tests/stats/test_spa.py checks them against
its output), except where pce.py's float32 rounding decides a tie (below):

* the scores are cast to float32, as pce.py casts them; a system's score is the **sum** of its
  segment scores;
* one sign matrix serves every system pair and every score matrix: ``numpy.random.default_rng(seed)``
  draws ``(n_permutations, n_segments)`` float32 uniforms, rounded to 0/1 and mapped to -1/+1
  (``2m - 1``). Permutation ``p`` swaps the two systems' scores on the segments where its sign is -1,
  so the null difference of a pair is ``signs[p] @ (x_i - x_j)``, computed as the difference of the
  products ``signs @ x_i`` and ``signs @ x_j`` (one matrix product for all systems);
* the p-value of "i better than j" is the share of permutations whose null difference is at least
  (``>=``) the observed one; it fills the upper triangle of an ``S x S`` matrix, NaN elsewhere.
* The comparison is exact. pce.py takes the product in float32, where a permutation that ties the
  observed difference (it swaps no segment on which the systems differ) counts or not depending on
  how the BLAS rounds, which depends on its thread count; here the product is float64 and every
  comparison within its rounding bound is decided again exactly (``_exceedances``).

Every score matrix must be complete (systems x segments, no missing value), as mt-metrics-eval
requires; a gap is a :class:`~assay.stats.StatsInputError` rather than a silent drop.

*Bootstrap replicates* (:func:`resampled_spa`) resample segments: a resample is a vector of counts
(how often each segment was drawn), and a replicate sums each segment's score times its count,
under the **same** sign matrix. A segment drawn twice therefore keeps one sign in a permutation
(both copies swap together), where a permutation test run on the resampled matrix would draw a sign
per copy. That is an approximation, stated here, that keeps every replicate a single matrix product
of the signs with count-weighted scores; with every count 1 a replicate is exactly :func:`spa`.
(Exactly, because the comparisons are exact, and each replicate's mean is taken as a 1-D mean, as
pce.py takes it.) 13 systems x 529 segments, 1000 permutations,
1000 resamples, human + 3 metrics: about 2.5 s on two cores (``benchmarks/spa_resamples.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from assay.errors import StatsInputError
from assay.stats._groups import FloatArray, require_seed

#: mt-metrics-eval's defaults (``pce.compute_pairwise_p_values``)
DEFAULT_PERMUTATIONS = 1000
DEFAULT_SEED = 4

#: the largest float32 block of null sums (systems x resamples x permutations) built at once:
#: 2**23 entries, 32 MB
MAX_BLOCK_ELEMENTS = 2**23

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SoftPairwiseAccuracy:
    """SPA of one metric, with the p-value matrices it compares."""

    value: float
    """``1 - mean |p_human - p_metric|`` over the system pairs (mt-metrics-eval's 1 - PCE)."""
    human_p_values: FloatArray
    """``(S, S)``: entry ``[i, j]``, ``i < j``, is the p-value that system i beats system j; NaN elsewhere."""
    metric_p_values: FloatArray
    n_permutations: int
    seed: int


def permutation_signs(n_segments: int, n_permutations: int = DEFAULT_PERMUTATIONS,
                      seed: int = DEFAULT_SEED) -> npt.NDArray[np.float32]:
    """``(n_permutations, n_segments)`` float32 signs, -1 or +1, drawn as mt-metrics-eval draws them."""
    uniform = np.random.default_rng(seed).random(size=(n_permutations, n_segments), dtype=np.float32)
    return np.rint(uniform) * np.float32(2.0) - np.float32(1.0)


def _score_matrix(scores: npt.ArrayLike, name: str) -> FloatArray:
    try:
        matrix = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(
            f"{name}: cannot read the scores as a (systems x segments) matrix of numbers ({exc}); "
            "every system needs a score on every segment"
        ) from exc
    if matrix.ndim != 2:
        raise StatsInputError(f"{name}: expected a (systems x segments) matrix, got an array of shape {matrix.shape}")
    if matrix.shape[0] < 2 or matrix.shape[1] < 1:
        raise StatsInputError(f"{name}: need at least 2 systems and 1 segment, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        missing = int((~np.isfinite(matrix)).sum())
        raise StatsInputError(
            f"{name}: {missing} missing or infinite score(s); soft pairwise accuracy needs a complete "
            "(systems x segments) matrix, as in mt-metrics-eval (keep only segments every system has "
            "a human score for)"
        )
    return matrix


def _check_permutations(n_permutations: int) -> int:
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, int | np.integer) or n_permutations < 1:
        raise StatsInputError(f"n_permutations must be a positive integer (got {n_permutations!r})")
    return int(n_permutations)


def _exceedances(signs: npt.NDArray[np.float32], weighted: npt.NDArray[np.float32]) -> IntArray:
    """``(B, pairs)``: per block row and system pair ``i < j`` (``triu_indices`` order), the number
    of permutations whose null difference is ``>=`` the observed difference, in exact arithmetic on
    the float32 scores.

    ``weighted`` is ``(S, B, L)`` float32 segment scores, system-major (count-weighted for a
    resample). The null sums are one product of the signs with the scores, as in pce.py, but in
    float64; laid out system-major, each system's null sums are a ``(P, B)`` slice of the product,
    so the pair loop runs over long contiguous rows.

    Why not pce.py's float32 product: a permutation that keeps every segment on which two systems
    differ *ties* the observed difference exactly, and counts. In float32 the two sides of that tie
    are rounded differently, and how depends on the BLAS's blocking, which depends on its thread
    count: on WMT24's TED en-de, sentBLEU's SPA was 0.668923 with two OpenBLAS threads and 0.668910
    with one (the human p-values of 9 of its 78 system pairs moved). Here every comparison closer than the
    float64 rounding bound is decided again exactly (:func:`_ties_decided_exactly`), so the count
    does not depend on the machine, and equals pce.py's wherever its rounding is not in play.
    """
    systems, blocks, segments = weighted.shape
    permutations = signs.shape[0]
    scores = weighted.astype(np.float64)
    totals = scores.sum(axis=2)  # (S, B)
    product = np.matmul(signs.astype(np.float64), scores.reshape(systems * blocks, segments).T)  # (P, S*B)
    # each system's null sum minus its observed sum: a pair's null minus observed difference is then
    # one subtraction, kept in float32 (its sign and its place against the bound survive the rounding)
    shifted = product.reshape(permutations, systems, blocks)
    np.subtract(shifted, totals[None], out=shifted)
    # |computed - exact| of a pair's difference is below (L + 2) eps (|x_i| + |x_j|) summed; 4x that
    magnitude = np.abs(scores).sum(axis=2)  # (S, B)
    slack = 4.0 * (segments + 2) * float(np.finfo(np.float64).eps)
    negative = signs < 0
    difference = np.empty((permutations, systems - 1, blocks), dtype=np.float32)
    above = np.empty((permutations, systems - 1, blocks), dtype=bool)
    counts = []
    for first in range(systems - 1):
        rest = systems - first - 1
        gap = difference[:, :rest]
        np.subtract(shifted[:, first : first + 1], shifted[:, first + 1 :], out=gap)
        bound = (slack * (magnitude[first][None, :] + magnitude[first + 1 :])).astype(np.float32)[None]
        np.greater_equal(gap, bound, out=above[:, :rest])
        clear = np.count_nonzero(above[:, :rest], axis=0)  # (rest, B): surely at least the observed
        np.greater_equal(gap, -bound, out=above[:, :rest])
        loose = np.count_nonzero(above[:, :rest], axis=0)  # ... and those too close to call
        for j, block in zip(*np.nonzero(loose != clear), strict=True):
            column = gap[:, j, block]
            near = np.flatnonzero((column >= -bound[0, j, block]) & (column < bound[0, j, block]))
            clear[j, block] += _ties_decided_exactly(negative[near], weighted[first, block],
                                                     weighted[first + 1 + j, block])
        counts.append(clear.astype(np.int64))
    return np.concatenate(counts, axis=0).T


def _ties_decided_exactly(swaps: npt.NDArray[np.bool_], first: npt.NDArray[np.float32],
                          second: npt.NDArray[np.float32]) -> int:
    """How many of these permutations (rows of ``swaps``: the segments each swaps) give a null
    difference at least the observed one, decided exactly.

    A permutation's null difference minus the observed one is ``-2`` times the sum of the score
    differences ``d = first - second`` over the segments it swaps, so it counts exactly when that
    sum is ``<= 0``. The difference of two float32 numbers is exact in float64, and the sum runs
    only over the segments where the two differ (none: an exact tie)."""
    d = first.astype(np.float64) - second.astype(np.float64)
    differing = np.flatnonzero(d)
    swapped = swaps[:, differing].astype(np.float64) @ d[differing]
    return int(np.count_nonzero(swapped <= 0.0))


def _p_values(signs: npt.NDArray[np.float32], weighted: npt.NDArray[np.float32]) -> FloatArray:
    """``(B, pairs)`` p-values: exceedances over the number of permutations (pce.py's division)."""
    return _exceedances(signs, weighted) / signs.shape[0]


def _p_matrix(upper: FloatArray, systems: int) -> FloatArray:
    matrix = np.full((systems, systems), np.nan)
    matrix[np.triu_indices(systems, 1)] = upper
    return matrix


def _metric_matrices(metrics: npt.ArrayLike | Sequence[npt.ArrayLike]) -> tuple[list[npt.ArrayLike], bool]:
    """The metric matrices, and whether one matrix (not a sequence of them) was given."""
    if isinstance(metrics, np.ndarray):
        return (list(metrics), False) if metrics.ndim == 3 else ([metrics], True)
    if isinstance(metrics, Sequence) and len(metrics) > 0:
        try:
            first_is_matrix = np.ndim(metrics[0]) == 2
        except ValueError:  # a ragged matrix: reported by _score_matrix
            first_is_matrix = False
        if first_is_matrix:
            return list(metrics), False
    return [cast(npt.ArrayLike, metrics)], True


def _one_minus_pce(human_p: FloatArray, metric_p: FloatArray) -> FloatArray:
    """Row-wise ``1 - mean |p_h - p_m|`` of ``(B, pairs)`` p-values.

    One 1-D mean per row, as pce.py takes it: numpy's reduction along an axis of a 2-D array may
    sum in another order (and round differently in the last bit) depending on the row count.
    """
    return np.array([1.0 - np.mean(row) for row in np.abs(human_p - metric_p)])


def pairwise_p_values(seg_scores: npt.ArrayLike, n_permutations: int = DEFAULT_PERMUTATIONS,
                      seed: int = DEFAULT_SEED) -> FloatArray:
    """``(S, S)`` p-values of the paired permutation test "system i beats system j" (upper triangle).

    ``seg_scores`` is a complete ``(systems, segments)`` matrix. Entry ``[i, j]``, ``i < j``, is the
    share of the ``n_permutations`` sign flips whose summed score difference is at least the observed
    one (mt-metrics-eval ``pce.compute_pairwise_p_values``); the diagonal and lower triangle are NaN.
    """
    matrix = _score_matrix(seg_scores, "segment scores")
    permutations = _check_permutations(n_permutations)
    signs = permutation_signs(matrix.shape[1], permutations, require_seed(seed))
    return _p_matrix(_p_values(signs, matrix.astype(np.float32)[:, None])[0], matrix.shape[0])


def spa(human_seg_scores: npt.ArrayLike, metric_seg_scores: npt.ArrayLike,
        n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED) -> SoftPairwiseAccuracy:
    """Soft pairwise accuracy of a metric (Thompson et al. 2024): ``1 - mean |p_human - p_metric|``.

    Both matrices are complete ``(systems, segments)`` and parallel; the same sign matrix (one
    ``seed``) tests both, as mt-metrics-eval does.
    """
    human = _score_matrix(human_seg_scores, "human scores")
    metric = _score_matrix(metric_seg_scores, "metric scores")
    if human.shape != metric.shape:
        raise StatsInputError(f"human scores {human.shape} and metric scores {metric.shape} must have the same "
                              "(systems x segments) shape")
    permutations = _check_permutations(n_permutations)
    chosen_seed = require_seed(seed)
    signs = permutation_signs(human.shape[1], permutations, chosen_seed)
    human_p = _p_values(signs, human.astype(np.float32)[:, None])
    metric_p = _p_values(signs, metric.astype(np.float32)[:, None])
    systems = human.shape[0]
    return SoftPairwiseAccuracy(
        value=float(_one_minus_pce(human_p, metric_p)[0]),
        human_p_values=_p_matrix(human_p[0], systems),
        metric_p_values=_p_matrix(metric_p[0], systems),
        n_permutations=permutations,
        seed=chosen_seed,
    )


def resampled_spa(human_seg_scores: npt.ArrayLike,
                  metric_seg_scores: npt.ArrayLike | Sequence[npt.ArrayLike],
                  counts: npt.ArrayLike,
                  n_permutations: int = DEFAULT_PERMUTATIONS,
                  seed: int = DEFAULT_SEED) -> FloatArray:
    """SPA of every bootstrap resample of the segments, from resample counts.

    ``counts`` is ``(R, segments)``: how often each segment was drawn (e.g.
    :func:`assay.stats.resampled.resample_counts`). A replicate weights each segment's scores by its
    count and reuses the full-sample sign matrix (module docstring: a segment drawn twice keeps one
    sign, a stated approximation). One metric matrix gives ``(R,)`` replicates; a sequence of
    matrices (or a 3-D array) gives ``(M, R)``, one row per metric, sharing the human p-values.
    Resamples run in blocks of at most :data:`MAX_BLOCK_ELEMENTS` null sums per score matrix.
    """
    human = _score_matrix(human_seg_scores, "human scores")
    raw_metrics, single = _metric_matrices(metric_seg_scores)
    metrics = [_score_matrix(m, f"metric scores #{k}") for k, m in enumerate(raw_metrics)]
    for k, metric in enumerate(metrics):
        if metric.shape != human.shape:
            raise StatsInputError(f"metric scores #{k} {metric.shape} and human scores {human.shape} must have the "
                                  "same (systems x segments) shape")
    weights = np.asarray(counts, dtype=np.float64)
    systems, segments = human.shape
    if weights.ndim != 2 or weights.shape[1] != segments:
        raise StatsInputError(f"counts must be (resamples x {segments} segments), got shape {weights.shape}")
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise StatsInputError("counts must be finite and non-negative (how often each segment was drawn)")
    permutations = _check_permutations(n_permutations)
    signs = permutation_signs(segments, permutations, require_seed(seed))

    weights32 = weights.astype(np.float32)
    matrices = [human.astype(np.float32), *(m.astype(np.float32) for m in metrics)]
    replicates = np.empty((len(metrics), weights.shape[0]))
    step = max(1, MAX_BLOCK_ELEMENTS // (systems * permutations))
    for begin in range(0, weights.shape[0], step):
        block = slice(begin, min(weights.shape[0], begin + step))
        column = weights32[block][None, :, :]
        human_p = _p_values(signs, matrices[0][:, None, :] * column)
        for k, metric32 in enumerate(matrices[1:]):
            metric_p = _p_values(signs, metric32[:, None, :] * column)
            replicates[k, block] = _one_minus_pce(human_p, metric_p)
    return replicates[0] if single else replicates
