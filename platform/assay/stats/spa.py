"""Soft pairwise accuracy (SPA): agreement of a metric's and the humans' system-pair p-values.

Thompson, Mathur, Deutsch and Freitag (2024), "Improving Statistical Significance in Human Evaluation
of Automatic Metrics via Soft Pairwise Accuracy" (WMT24; the system-level statistic of the WMT24
metrics task). For every pair of systems (i, j) a one-sided paired permutation test gives the p-value
that system i is better than system j, once from the human segment scores and once from the
metric's; SPA is one minus the mean absolute difference of the two p-values over the pairs
(one minus the *pairwise confidence error*, PCE). A metric that is as sure as the humans, and no
surer, scores 1.

The arithmetic is that of google-research/mt-metrics-eval ``pce.py`` (``compute_pairwise_p_values``,
``compute_one_minus_pce``), so the numbers are the same to the bit (tests/stats/test_spa.py checks
them against its output):

* a system's score is the **sum** of its segment scores, in float32;
* one sign matrix serves every system pair and every score matrix: ``numpy.random.default_rng(seed)``
  draws ``(n_permutations, n_segments)`` float32 uniforms, rounded to 0/1 and mapped to -1/+1
  (``2m - 1``). Permutation ``p`` swaps the two systems' scores on the segments where its sign is -1,
  so the null difference of a pair is ``signs[p] @ (x_i - x_j)``, computed as the difference of the
  products ``signs @ x_i`` and ``signs @ x_j`` (one float32 matrix product for all systems);
* the p-value of "i better than j" is the share of permutations whose null difference is at least
  (``>=``) the observed one; it fills the upper triangle of an ``S x S`` matrix, NaN elsewhere.

Every score matrix must be complete (systems x segments, no missing value), as mt-metrics-eval
requires; a gap is a :class:`~assay.stats.StatsInputError` rather than a silent drop.

*Bootstrap replicates* (:func:`resampled_spa`) resample segments: a resample is a vector of counts
(how often each segment was drawn), and a replicate sums each segment's score times its count,
under the **same** sign matrix. A segment drawn twice therefore keeps one sign in a permutation
(both copies swap together), where a permutation test run on the resampled matrix would draw a sign
per copy. That is an approximation, stated here, that keeps every replicate a single matrix product
of the signs with count-weighted scores; with every count 1 a replicate is exactly :func:`spa`.
(Exactly, because the float32 product of one system's column does not depend on how many other
columns share the BLAS call, which the tests check on this machine's OpenBLAS, and each replicate's
mean is taken as a 1-D mean, as pce.py takes it.) 13 systems x 529 segments, 1000 permutations,
1000 resamples, human + 3 metrics: about 1 s on two cores.
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
    of permutations whose null difference is ``>=`` the observed difference.

    ``weighted`` is ``(S, B, L)`` float32 segment scores, system-major (count-weighted for a
    resample). The product and the sums are mt-metrics-eval's float32 operations, in the same
    orientation; laid out system-major, each system's null sums are a ``(P, B)`` slice of the
    product, so the pair loop runs over long contiguous rows.
    """
    systems, blocks, segments = weighted.shape
    permutations = signs.shape[0]
    totals = weighted.sum(axis=2)  # (S, B) float32, as pce.py's np.sum(seg_scores, axis=1)
    product = np.matmul(signs, weighted.reshape(systems * blocks, segments).T)  # pce.py's matmul, (P, S*B)
    null = product.reshape(permutations, systems, blocks)
    buffer = np.empty((permutations, systems - 1, blocks), dtype=np.float32)
    above = np.empty((permutations, systems - 1, blocks), dtype=bool)
    counts = []
    for first in range(systems - 1):
        rest = systems - first - 1
        np.subtract(null[:, first : first + 1], null[:, first + 1 :], out=buffer[:, :rest])
        observed = totals[first][None, :] - totals[first + 1 :]  # (rest, B) float32
        np.greater_equal(buffer[:, :rest], observed[None], out=above[:, :rest])
        counts.append(above[:, :rest].sum(axis=0, dtype=np.int64))  # (rest, B)
    return np.concatenate(counts, axis=0).T


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
