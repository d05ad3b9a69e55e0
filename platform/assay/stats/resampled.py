"""Statistics of many bootstrap resamples at once, from resample *counts* (numpy, no Python loop).

A bootstrap resample of ``n`` paired rows is a vector of counts ``c`` (how often each row was
drawn; ``c.sum() == n``). Every statistic evaluation reports is a function of the counts:

* Pearson's r is a count-weighted correlation.
* Pair statistics (Kendall's tau-b and tau-c, tau_23 and acc_23 of Deutsch et al. 2023, pairwise
  accuracy) count pair classes. For a symmetric pair function ``F`` (say, concordant or not), the
  sum over the resample's pairs ``i < j`` of ``F[r_i, r_j]`` is ``(c^T F c - sum_a c_a F[a, a]) / 2``:
  a row drawn twice forms a pair with itself, tied in both vectors. For all resamples at once
  that is one ``(R x n) @ (n x n)`` product per pair class.
* Spearman's rho is Pearson's r of mid-ranks, and the mid-rank of row ``a`` in a resample is
  ``sum_b c_b [x_b < x_a] + (sum_b c_b [x_b == x_a] + 1) / 2``, again a product with ``C``.

So a replicate is computed exactly as scipy computes the statistic on the resampled rows (the
tests check equality to 1e-12), in a few matrix products instead of a Python loop over resamples.
For very large groups (more than :data:`MAX_MATRIX_ROWS` rows, where ``n x n`` matrices would not
fit in memory) the statistic is evaluated resample by resample.

System level resamples items, not systems: there each replicate is a vector of system scores, and
:func:`rowwise` computes the statistic of every replicate against the fixed human system scores.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.stats._groups import StatsInputError
from assay.stats.pairwise import acc_23, tau_23

FloatArray = npt.NDArray[np.float64]

#: groups larger than this are resampled one replicate at a time (n x n float64 = 128 MB at 4,000)
MAX_MATRIX_ROWS = 4000
#: replicates per block of matrix products (bounds the R x n temporaries)
BLOCK = 250

RESAMPLED_STATISTICS = ("pearson", "spearman", "kendall", "kendall_c", "tau23", "acc23", "pairwise_accuracy")


def _scipy() -> Any:
    """scipy.stats, imported on first use (importing ``assay.stats`` stays light)."""
    from scipy import stats

    return stats


def _pearson(x: FloatArray, y: FloatArray) -> float:
    return float(np.corrcoef(x, y)[0, 1])


def _pairwise_accuracy(human: FloatArray, metric: FloatArray) -> float:
    """System-level pairwise accuracy (Kocmi et al. 2021): system pairs ordered (or tied) alike."""
    i, j = np.triu_indices(len(human), k=1)
    agree = np.sign(human[i] - human[j]) == np.sign(metric[i] - metric[j])
    return float(np.mean(agree)) if len(i) else float("nan")


SCALAR_STATISTICS: dict[str, Callable[[FloatArray, FloatArray], float]] = {
    "pearson": _pearson,
    "spearman": lambda x, y: float(_scipy().spearmanr(x, y).statistic),
    "kendall": lambda x, y: float(_scipy().kendalltau(x, y).statistic),
    "kendall_c": lambda x, y: float(_scipy().kendalltau(x, y, variant="c").statistic),
    "tau23": lambda x, y: float(tau_23(x, y).value),
    "acc23": lambda x, y: float(acc_23(x, y).value),
    "pairwise_accuracy": _pairwise_accuracy,
}


def scalar_statistic(statistic: str) -> Callable[[FloatArray, FloatArray], float]:
    """The statistic of one (human, metric) sample: scipy's correlations, the pair statistics of
    :mod:`assay.stats.pairwise`, pairwise accuracy. The point estimates evaluation reports."""
    if statistic not in SCALAR_STATISTICS:
        raise StatsInputError(f"unknown statistic {statistic!r} (expected one of {', '.join(SCALAR_STATISTICS)})")
    return SCALAR_STATISTICS[statistic]


def resample_counts(index: npt.NDArray[np.intp], size: int) -> FloatArray:
    """``(R, size)`` counts from an ``(R, size)`` matrix of drawn row indices."""
    rows = index.shape[0]
    flat = (index + (np.arange(rows) * size)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * size).reshape(rows, size).astype(np.float64)


def _pair_sum(counts: FloatArray, matrix: FloatArray) -> FloatArray:
    """For each resample: the sum of ``matrix[r_i, r_j]`` over its pairs ``i < j``.

    The product runs in float32: counts and matrix entries are small integers (or halves), and
    every partial sum stays far below 2**24, so it is exact, at twice float64's speed."""
    product = (counts.astype(np.float32) @ matrix.astype(np.float32)).astype(np.float64)
    return 0.5 * (np.einsum("ra,ra->r", product, counts) - counts @ np.diag(matrix))


def _sign_matrix(x: FloatArray) -> FloatArray:
    return np.sign(x[:, None] - x[None, :])


def _weighted_pearson(counts: FloatArray, x: FloatArray, y: FloatArray) -> FloatArray:
    """Pearson's r of each resample; ``x`` and ``y`` are (n,) or (R, n) (per-resample values)."""
    n = counts.sum(axis=1)
    mean_x = (counts * x).sum(axis=1) / n
    mean_y = (counts * y).sum(axis=1) / n
    dx = x - mean_x[:, None]
    dy = y - mean_y[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts * dx * dy).sum(axis=1) / np.sqrt((counts * dx * dx).sum(axis=1) * (counts * dy * dy).sum(axis=1))


def _mid_ranks(counts: FloatArray, x: FloatArray) -> FloatArray:
    below = (x[None, :] < x[:, None]).astype(np.float64)  # below[a, b] = x_b < x_a
    equal = (x[None, :] == x[:, None]).astype(np.float64)
    return counts @ below.T + (counts @ equal.T + 1.0) / 2.0


def _distinct_values(counts: FloatArray, x: FloatArray) -> FloatArray:
    _, inverse = np.unique(x, return_inverse=True)
    members = np.zeros((x.size, int(inverse.max()) + 1))
    members[np.arange(x.size), inverse] = 1.0
    return ((counts @ members) > 0).sum(axis=1).astype(np.float64)


def _statistic_of_counts(statistic: str, human: FloatArray, metric: FloatArray, epsilon: float
                         ) -> Callable[[FloatArray], FloatArray]:
    """The statistic as a function of a block of resample counts; the n x n pair matrices are
    built once per (statistic, group), not once per block."""
    n = float(human.size)
    if statistic == "pearson":
        return lambda counts: _weighted_pearson(counts, human, metric)
    if statistic == "spearman":
        return lambda counts: _weighted_pearson(counts, _mid_ranks(counts, human), _mid_ranks(counts, metric))
    pairs = n * (n - 1) / 2
    human_sign = _sign_matrix(human)
    if statistic in ("kendall", "kendall_c"):
        metric_sign = _sign_matrix(metric)
        concordance = human_sign * metric_sign
        if statistic == "kendall_c":
            def tau_c(counts: FloatArray) -> FloatArray:
                classes = np.minimum(_distinct_values(counts, human), _distinct_values(counts, metric))
                with np.errstate(invalid="ignore", divide="ignore"):
                    return 2 * _pair_sum(counts, concordance) / (n**2 * (classes - 1) / classes)

            return tau_c
        human_tied = (human_sign == 0).astype(np.float64)
        metric_tied = (metric_sign == 0).astype(np.float64)

        def tau_b(counts: FloatArray) -> FloatArray:
            with np.errstate(invalid="ignore", divide="ignore"):
                return _pair_sum(counts, concordance) / np.sqrt(
                    (pairs - _pair_sum(counts, human_tied)) * (pairs - _pair_sum(counts, metric_tied)))

        return tau_b
    if statistic in ("tau23", "acc23", "pairwise_accuracy"):
        difference = metric[:, None] - metric[None, :]
        metric_tie = np.abs(difference) <= epsilon
        human_tie = human_sign == 0
        agree = ((human_tie & metric_tie) | (~human_tie & ~metric_tie & (human_sign == np.sign(difference))))
        agree_matrix = agree.astype(np.float64)

        def accuracy(counts: FloatArray) -> FloatArray:
            with np.errstate(invalid="ignore", divide="ignore"):
                share = _pair_sum(counts, agree_matrix) / pairs
            return 2 * share - 1 if statistic == "tau23" else share

        return accuracy
    raise StatsInputError(f"no resampled form of {statistic!r} (expected one of {', '.join(RESAMPLED_STATISTICS)})")


def resampled_statistic(statistic: str, human: npt.ArrayLike, metric: npt.ArrayLike, index: npt.NDArray[np.intp],
                        *, epsilon: float = 0.0, scalar: Callable[[FloatArray, FloatArray], float] | None = None
                        ) -> FloatArray:
    """``statistic(human[rows], metric[rows])`` for every row vector ``rows`` of ``index`` (R x n).

    ``epsilon`` is the metric tie threshold of tau23/acc23 (tie calibration keeps the threshold of
    the full sample). ``scalar`` computes the statistic of one resample; it is used only for groups
    larger than :data:`MAX_MATRIX_ROWS`, and required for them.
    """
    h = np.asarray(human, dtype=np.float64)
    m = np.asarray(metric, dtype=np.float64)
    if h.shape != m.shape or h.ndim != 1:
        raise StatsInputError(f"human and metric must be parallel vectors (got {h.shape} and {m.shape})")
    replicates = np.full(index.shape[0], np.nan)
    if h.size < 2:
        return replicates
    if h.size > MAX_MATRIX_ROWS:
        if scalar is None:
            raise StatsInputError(f"{h.size} rows are too many for the matrix form of {statistic}; give `scalar`")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.array([scalar(h[rows], m[rows]) for rows in index])
    of_counts = _statistic_of_counts(statistic, h, m, epsilon)
    for begin in range(0, index.shape[0], BLOCK):
        replicates[begin:begin + BLOCK] = of_counts(resample_counts(index[begin:begin + BLOCK], h.size))
    return replicates


def resampled_pair_share(better: npt.ArrayLike, worse: npt.ArrayLike, index: npt.NDArray[np.intp],
                         *, ties_are_discordant: bool) -> FloatArray:
    """WMT DARR Kendall-like of every resample of the pairs (see :mod:`assay.stats.kendall_like`):
    ``(concordant - discordant) / (concordant + discordant)``, metric ties discordant or dropped."""
    b = np.asarray(better, dtype=np.float64)
    w = np.asarray(worse, dtype=np.float64)
    concordant_pairs = (b > w).astype(np.float64)
    tied_pairs = (b == w).astype(np.float64)
    counts = resample_counts(index, b.size)
    concordant = counts @ concordant_pairs
    ties = counts @ tied_pairs
    discordant = b.size - concordant - ties
    if ties_are_discordant:
        discordant = discordant + ties
    total = concordant + discordant
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (concordant - discordant) / total, np.nan)


def rowwise(statistic: str, human: npt.ArrayLike, metric_rows: npt.ArrayLike) -> FloatArray:
    """``statistic(human, row)`` for each row of ``metric_rows`` (R x S): system-level replicates,
    where the systems stay fixed and each replicate has its own system scores."""
    h = np.asarray(human, dtype=np.float64)
    rows = np.asarray(metric_rows, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[1] != h.size:
        raise StatsInputError(f"metric rows must be (replicates x {h.size}), got {rows.shape}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if statistic == "pearson":
            return _weighted_pearson(np.ones_like(rows), np.broadcast_to(h, rows.shape), rows)
        if statistic == "spearman":
            ranked_h = _scipy().rankdata(h)
            return _weighted_pearson(np.ones_like(rows), np.broadcast_to(ranked_h, rows.shape),
                                     _scipy().rankdata(rows, axis=1))
        human_sign = _sign_matrix(h)
        upper = np.triu(np.ones_like(human_sign, dtype=bool), k=1)
        metric_sign = np.sign(rows[:, :, None] - rows[:, None, :])
        pairs = float(upper.sum())
        if statistic == "kendall":
            product = (human_sign[None] * metric_sign)[:, upper].sum(axis=1)
            human_ties = float((human_sign[upper] == 0).sum())
            metric_ties = (metric_sign[:, upper] == 0).sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                return product / np.sqrt((pairs - human_ties) * (pairs - metric_ties))
        if statistic == "pairwise_accuracy":
            agree = human_sign[None] == metric_sign  # ordered alike, or tied in both
            return agree[:, upper].sum(axis=1) / pairs if pairs else np.full(rows.shape[0], np.nan)
    raise StatsInputError(f"no system-level replicate form of {statistic!r}")
