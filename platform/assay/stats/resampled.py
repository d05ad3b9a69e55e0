"""Statistics of many bootstrap resamples at once, from resample *counts* (numpy, no Python loop).

A bootstrap resample of ``n`` paired rows is a vector of counts ``c`` (how often each row was
drawn; ``c.sum() == n``), and every statistic evaluation reports is a function of the counts:

* Pearson's r is a count-weighted correlation.
* Spearman's rho is Pearson's r of mid-ranks, and the mid-rank of row ``a`` in a resample is
  ``sum_b c_b [x_b < x_a] + (sum_b c_b [x_b == x_a] + 1) / 2``: with the distinct values of ``x``
  sorted once, a cumulative sum of the counts per distinct value.
* Pair statistics (Kendall's tau-b and tau-c; tau_23 and acc_23 of Deutsch et al. 2023; pairwise
  accuracy) count pair classes. For a symmetric pair function ``F`` the sum over the resample's
  pairs ``i < j`` of ``F[r_i, r_j]`` is ``(c^T F c - sum_a c_a F[a, a]) / 2`` (a row drawn twice
  forms a pair with itself, tied in both vectors), one ``(R x n) @ (n x n)`` product for all
  resamples. Only one such product is needed per (human, metric) pair: the concordance
  ``S = C - D`` with ``F = sign(h_a - h_b) sign(m_a - m_b)``. Tied pairs need none: with ``g_u``
  the number of drawn rows holding the distinct value ``u``, ``sum_u g_u (g_u - 1) / 2`` pairs
  are tied, and the same over distinct (human, metric) couples counts the pairs tied in both.
  Then ``C + D = N - T_human - T_metric + T_both`` and every statistic follows:
  ``tau_b = S / sqrt((N - T_human) (N - T_metric))`` (scipy's tau-b),
  ``tau_c = 2 S / (n^2 (k - 1) / k)`` with ``k`` the smaller number of distinct values (scipy's
  tau-c), ``acc_23 = (C + T_both) / N`` and ``tau_23 = (2 (C + T_both) - N) / N``. With a metric tie
  threshold ``epsilon > 0`` (tie-calibrated acc_23) metric ties are no longer classes of equal
  values, and the agreement matrix is summed directly (one more product).

So a replicate is computed exactly as scipy (or :mod:`assay.stats.pairwise`) computes the statistic
on the resampled rows; the tests check equality to 1e-12 row by row on the same index matrix, on
real WMT17 scores and on tie-heavy ratings. The ``n x n`` matrices are built and multiplied in
column blocks of at most :data:`MAX_BLOCK_ELEMENTS` entries, and the counts in row blocks of the
same size, so memory stays bounded for any group size.

System level resamples items, not systems: there each replicate is a vector of system scores, and
:func:`rowwise` computes the statistic of every replicate against the fixed human system scores.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.errors import StatsInputError
from assay.stats.correlation import correlation_kernel
from assay.stats.pairwise import acc_23, pairwise_accuracy, tau_23

FloatArray = npt.NDArray[np.float64]

#: the largest ``n x block`` pair matrix (and ``rows x n`` block of counts) built at once:
#: 2**23 entries, 32 MB in float32 (the float64 temporaries that build it, 64 MB)
MAX_BLOCK_ELEMENTS = 2**23

RESAMPLED_STATISTICS = ("pearson", "spearman", "kendall", "kendall_c", "tau23", "acc23", "pairwise_accuracy")


def _scipy() -> Any:
    """scipy.stats, imported on first use (importing ``assay.stats`` stays light)."""
    from scipy import stats

    return stats


SCALAR_STATISTICS: dict[str, Callable[[FloatArray, FloatArray], float]] = {
    "pearson": correlation_kernel("pearson"),
    "spearman": correlation_kernel("spearman"),
    "kendall": correlation_kernel("kendall_b"),
    "kendall_c": correlation_kernel("kendall_c"),
    "tau23": lambda x, y: float(tau_23(x, y).value),
    "acc23": lambda x, y: float(acc_23(x, y).value),
    "pairwise_accuracy": lambda x, y: float(pairwise_accuracy(x, y).value),
}


def scalar_statistic(statistic: str) -> Callable[[FloatArray, FloatArray], float]:
    """The statistic of one (human, metric) sample: the correlations of :mod:`assay.stats.correlation`
    (scipy's), the pair statistics and pairwise accuracy of :mod:`assay.stats.pairwise`. The point
    estimates evaluation reports."""
    if statistic not in SCALAR_STATISTICS:
        raise StatsInputError(f"unknown statistic {statistic!r} (expected one of {', '.join(SCALAR_STATISTICS)})")
    return SCALAR_STATISTICS[statistic]


def resample_counts(index: npt.NDArray[np.intp], size: int) -> FloatArray:
    """``(R, size)`` counts from an ``(R, size)`` matrix of drawn row indices."""
    rows = index.shape[0]
    flat = (index + (np.arange(rows) * size)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * size).reshape(rows, size).astype(np.float64)


def _blocks(total: int, width: int) -> list[slice]:
    step = max(1, MAX_BLOCK_ELEMENTS // max(1, width))
    return [slice(begin, min(total, begin + step)) for begin in range(0, total, step)]


def quadratic_form(counts: FloatArray, columns: Callable[[slice], FloatArray]) -> FloatArray:
    """``c^T F c`` for every row ``c`` of ``counts`` (R x n), with ``F[:, block]`` built on demand.

    The products run in float32: counts are small integers and the entries of ``F`` integers or
    halves, so every partial sum of ``c @ F`` stays far below 2**24 and is exact; the final sums
    over ``a`` run in float64.
    """
    rows, n = counts.shape
    total = np.zeros(rows)
    counts32 = counts.astype(np.float32)
    for block in _blocks(n, n):
        matrix = columns(block).astype(np.float32)
        for part in _blocks(rows, n):
            product = (counts32[part] @ matrix).astype(np.float64)
            total[part] += np.einsum("ra,ra->r", product, counts[part, block])
    return total


def _class_counts(counts: FloatArray, labels: npt.NDArray[np.intp]) -> FloatArray:
    """``(R, k)``: how many drawn rows hold each of the ``k`` distinct labels (0..k-1, sorted)."""
    rows, size = counts.shape[0], int(labels.max()) + 1
    flat = (labels[None, :] + (np.arange(rows) * size)[:, None]).ravel()
    per_class = np.bincount(flat, weights=counts.ravel(), minlength=rows * size)  # float64: weighted
    return np.asarray(per_class, dtype=np.float64).reshape(rows, size)


def _tied_pairs(per_class: FloatArray) -> FloatArray:
    """Pairs of drawn rows that share a class: ``sum_u g_u (g_u - 1) / 2``."""
    return 0.5 * (per_class * (per_class - 1)).sum(axis=1)


def _weighted_pearson(counts: FloatArray, x: FloatArray, y: FloatArray) -> FloatArray:
    """Pearson's r of each resample; ``x`` and ``y`` are (n,) or (R, n) (per-resample values)."""
    n = counts.sum(axis=1)
    mean_x = (counts * x).sum(axis=1) / n
    mean_y = (counts * y).sum(axis=1) / n
    dx = x - mean_x[:, None]
    dy = y - mean_y[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts * dx * dy).sum(axis=1) / np.sqrt((counts * dx * dx).sum(axis=1) * (counts * dy * dy).sum(axis=1))


def kendall_tau_b(concordance: FloatArray, pairs: float, ties_x: FloatArray | float, ties_y: FloatArray | float
                  ) -> FloatArray:
    """Kendall's tau-b from ``C - D`` and tied-pair counts, with scipy's operations (so equal
    counts give the same bits): ``(C - D) / sqrt(N - T_x) / sqrt(N - T_y)``, clipped to [-1, 1],
    NaN when either vector is constant."""
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.clip(concordance / np.sqrt(pairs - ties_x) / np.sqrt(pairs - ties_y), -1.0, 1.0)
    return np.where((np.asarray(ties_x) == pairs) | (np.asarray(ties_y) == pairs), np.nan, tau)


def kendall_tau_c(concordance: FloatArray, n: float, classes: FloatArray | float, pairs: float,
                  ties_x: FloatArray | float, ties_y: FloatArray | float) -> FloatArray:
    """Stuart's tau-c with scipy's operations: ``2 (C - D) / (n^2 (k - 1) / k)``, ``k`` the smaller
    number of distinct values, clipped to [-1, 1], NaN when either vector is constant."""
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.clip(2 * concordance / (n**2 * (classes - 1) / classes), -1.0, 1.0)
    return np.where((np.asarray(ties_x) == pairs) | (np.asarray(ties_y) == pairs), np.nan, tau)


class ResampledPairs:
    """Every statistic of every bootstrap resample of paired (human, metric) rows.

    ``counts`` is ``(R, n)`` (:func:`resample_counts`). The pieces statistics share (the
    concordance product, tie counts, mid-ranks) are computed once, on first use, so asking for
    Kendall's tau-b, tau-c, tau_23 and acc_23 of the same rows costs one matrix product.
    """

    def __init__(self, human: npt.ArrayLike, metric: npt.ArrayLike, counts: FloatArray) -> None:
        self.human = np.asarray(human, dtype=np.float64)
        self.metric = np.asarray(metric, dtype=np.float64)
        if self.human.shape != self.metric.shape or self.human.ndim != 1:
            raise StatsInputError(f"human and metric must be parallel vectors (got {self.human.shape} "
                                  f"and {self.metric.shape})")
        if counts.ndim != 2 or counts.shape[1] != self.human.size:
            raise StatsInputError(f"counts must be (resamples x {self.human.size}), got {counts.shape}")
        self.counts = counts
        self.n = float(self.human.size)
        self.pairs = self.n * (self.n - 1) / 2

    # -- shared pieces -------------------------------------------------------------------------

    @cached_property
    def _human_labels(self) -> npt.NDArray[np.intp]:
        return np.unique(self.human, return_inverse=True)[1].ravel()

    @cached_property
    def _metric_labels(self) -> npt.NDArray[np.intp]:
        return np.unique(self.metric, return_inverse=True)[1].ravel()

    @cached_property
    def _human_classes(self) -> FloatArray:
        return _class_counts(self.counts, self._human_labels)

    @cached_property
    def _metric_classes(self) -> FloatArray:
        return _class_counts(self.counts, self._metric_labels)

    @cached_property
    def concordance(self) -> FloatArray:
        """``C - D`` of each resample (pairs of drawn rows ordered alike minus ordered oppositely)."""
        h, m = self.human, self.metric
        return 0.5 * quadratic_form(self.counts, lambda block: np.sign(h[:, None] - h[None, block])
                                    * np.sign(m[:, None] - m[None, block]))

    @cached_property
    def human_ties(self) -> FloatArray:
        return _tied_pairs(self._human_classes)

    @cached_property
    def metric_ties(self) -> FloatArray:
        return _tied_pairs(self._metric_classes)

    @cached_property
    def both_ties(self) -> FloatArray:
        joint = self._human_labels * (int(self._metric_labels.max()) + 1) + self._metric_labels
        return _tied_pairs(_class_counts(self.counts, np.unique(joint, return_inverse=True)[1].ravel()))

    def _mid_ranks(self, labels: npt.NDArray[np.intp], per_class: FloatArray) -> FloatArray:
        below = np.cumsum(per_class, axis=1) - per_class
        return (below + (per_class + 1.0) / 2.0)[:, labels]

    # -- statistics ----------------------------------------------------------------------------

    def pearson(self) -> FloatArray:
        return _weighted_pearson(self.counts, self.human, self.metric)

    def spearman(self) -> FloatArray:
        return _weighted_pearson(self.counts, self._mid_ranks(self._human_labels, self._human_classes),
                                 self._mid_ranks(self._metric_labels, self._metric_classes))

    def kendall(self) -> FloatArray:
        """Kendall's tau-b, in scipy's arithmetic (``kendalltau``)."""
        return kendall_tau_b(self.concordance, self.pairs, self.human_ties, self.metric_ties)

    def kendall_c(self) -> FloatArray:
        """Stuart's tau-c, in scipy's arithmetic (``kendalltau(variant="c")``)."""
        classes = np.minimum((self._human_classes > 0).sum(axis=1), (self._metric_classes > 0).sum(axis=1))
        return kendall_tau_c(self.concordance, self.n, classes, self.pairs, self.human_ties, self.metric_ties)

    def agreements(self, epsilon: float = 0.0) -> FloatArray:
        """Pairs ordered alike or tied in both (``C + T_both``; metric ties: ``|diff| <= epsilon``)."""
        if epsilon > 0:
            return self._agreement(epsilon)
        untied = self.pairs - self.human_ties - self.metric_ties + self.both_ties  # C + D
        return (self.concordance + untied) / 2 + self.both_ties

    def acc23(self, epsilon: float = 0.0) -> FloatArray:
        """acc_23: the share of pairs ordered alike or tied in both."""
        return self.agreements(epsilon) / self.pairs

    def tau23(self, epsilon: float = 0.0) -> FloatArray:
        """tau_23 = (C + T_both - D - T_human only - T_metric only) / N, computed as
        :class:`assay.stats.pairwise.PairCounts` computes it: ``(2 agree - N) / N``."""
        return (2 * self.agreements(epsilon) - self.pairs) / self.pairs

    def _agreement(self, epsilon: float) -> FloatArray:
        h, m = self.human, self.metric

        def agree(block: slice) -> FloatArray:
            human_sign = np.sign(h[:, None] - h[None, block])
            difference = m[:, None] - m[None, block]
            metric_tie = np.abs(difference) <= epsilon
            human_tie = human_sign == 0
            return ((human_tie & metric_tie) | (~human_tie & ~metric_tie & (human_sign == np.sign(difference)))
                    ).astype(np.float64)

        # the diagonal agrees (a row is tied with itself in both vectors): subtract sum_a c_a = n
        return 0.5 * (quadratic_form(self.counts, agree) - self.counts.sum(axis=1))

    def statistic(self, name: str, *, epsilon: float = 0.0) -> FloatArray:
        """One named statistic (:data:`RESAMPLED_STATISTICS`) of every resample."""
        if self.n < 2:
            return np.full(self.counts.shape[0], np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            if name == "pearson":
                return self.pearson()
            if name == "spearman":
                return self.spearman()
            if name == "kendall":
                return self.kendall()
            if name == "kendall_c":
                return self.kendall_c()
            if name in ("acc23", "pairwise_accuracy"):
                return self.acc23(epsilon)
            if name == "tau23":
                return self.tau23(epsilon)
        raise StatsInputError(f"no resampled form of {name!r} (expected one of {', '.join(RESAMPLED_STATISTICS)})")

    def statistics(self, names: Sequence[str], *, epsilon: float = 0.0) -> dict[str, FloatArray]:
        return {name: self.statistic(name, epsilon=epsilon) for name in names}


def resampled_statistic(statistic: str, human: npt.ArrayLike, metric: npt.ArrayLike, index: npt.NDArray[np.intp],
                        *, epsilon: float = 0.0) -> FloatArray:
    """``statistic(human[rows], metric[rows])`` for every row vector ``rows`` of ``index`` (R x n).

    ``epsilon`` is the metric tie threshold of tau23/acc23 (tie calibration keeps the threshold of
    the full sample)."""
    h = np.asarray(human, dtype=np.float64)
    return ResampledPairs(h, metric, resample_counts(index, h.size)).statistic(statistic, epsilon=epsilon)


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


def resampled_grouped_pearson(x: npt.ArrayLike, y: npt.ArrayLike, groups: npt.ArrayLike, group_counts: FloatArray
                              ) -> FloatArray:
    """``(R,)`` Pearson's r of each resample that draws whole groups: entry ``k`` belongs to group
    ``groups[k]``, and ``group_counts`` is ``(R, G)``, how often each group was drawn (a segment-level
    correlation over every (system, item) cell whose bootstrap resamples items). Equal to
    :meth:`ResampledPairs.pearson` with each entry's count its group's, computed from the groups'
    moments (``(R x G) @ (G x 6)``) instead of ``R x n`` weighted sums; the values are centred
    first, so the moments do not cancel."""
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    index = np.asarray(groups, dtype=np.intp)
    if xs.shape != ys.shape or xs.shape != index.shape or xs.ndim != 1:
        raise StatsInputError(f"x, y and groups must be parallel vectors (got {xs.shape}, {ys.shape}, {index.shape})")
    if group_counts.ndim != 2 or (index.size and index.max() >= group_counts.shape[1]):
        raise StatsInputError(f"group_counts must be (resamples x groups), got {group_counts.shape}")
    xs, ys = xs - xs.mean(), ys - ys.mean()
    width = group_counts.shape[1]
    moments = np.stack([np.bincount(index, weights=w, minlength=width)
                        for w in (np.ones_like(xs), xs, ys, xs * xs, ys * ys, xs * ys)], axis=1)
    n, sx, sy, sxx, syy, sxy = (group_counts @ moments).T
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sxy - sx * sy / n) / np.sqrt((sxx - sx * sx / n) * (syy - sy * sy / n))


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


def _sign_matrix(x: FloatArray) -> FloatArray:
    return np.sign(x[:, None] - x[None, :])
