"""Rank statistics of every PERM-BOTH permutation at once.

The PERM-BOTH test (Deutsch et al. 2021, as in mt-metrics-eval) swaps, independently for each
entry, the two metrics' (z-scored) scores, and recomputes both correlations. A permutation is a
0/1 vector ``s`` (1: swapped). Entry ``i`` of side A then holds ``m^{s_i}_i`` (``m^0 = a``,
``m^1 = b``) and side B holds ``m^{1 - s_i}_i``.

The one quantity that needs all pairs is the concordance with the gold scores,
``S = sum_{i<j} sign(g_i - g_j) sign(A_i - A_j)``. With ``K_uv[i, j] = sign(g_i - g_j)
sign(m^u_i - m^v_j)`` it is ``(1/2) sum_{u,v} U_u^T K_uv U_v`` over the indicator vectors
``U_1 = s`` and ``U_0 = 1 - s``; substituting ``U_0 = 1 - U_1`` leaves one quadratic term,
``U_1^T Q U_1`` with ``Q = K_00 - K_01 - K_10 + K_11``, a linear term and a constant. Side B is the
same with ``1 - s`` in place of ``s``, and the same ``Q``. So the concordance of both sides of
every permutation is one ``(R x n) @ (n x n)`` product, exact in float32 (entries of ``s @ Q`` are
integers of at most ``4 n``); ``Q`` is built once per test.

Everything else is a property of which of the ``2 n`` candidate values ``{a_i, b_i}`` a side
holds. With the distinct candidate values labelled in sorted order once, a side's count per
distinct value is a count of the labels its entries hold, and from these counts ``g_u``: its tied pairs
(``sum_u g_u (g_u - 1) / 2``), its distinct values, and its mid-ranks (cumulative counts), the
same for (gold, value) couples (pairs tied in both). From these: Kendall's tau-b and tau-c (as
scipy computes them), Spearman's rho (Pearson's r of mid-ranks), and tau_23 / acc_23 (Deutsch et
al. 2023). The tests check every permutation's statistic against scipy (and
:mod:`assay.stats.pairwise`) on the permuted vectors.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import numpy.typing as npt

from assay.stats.resampled import MAX_BLOCK_ELEMENTS, kendall_tau_b, kendall_tau_c

FloatArray = npt.NDArray[np.float64]
PERMUTED_STATISTICS = ("kendall_b", "kendall_c", "spearman", "tau_23", "acc_23")


class _Candidates:
    """Classes (distinct values, sorted) of the ``2 n`` candidate values ``[a, b]``."""

    def __init__(self, values: FloatArray) -> None:
        self.labels = np.unique(values, return_inverse=True)[1].ravel()
        self.size = int(self.labels.max()) + 1
        self.n = values.size // 2

    def side_labels(self, holds_b: npt.NDArray[np.bool_]) -> npt.NDArray[np.intp]:
        """``(R, n)``: the class of the value each entry of a side holds (``b_i`` where ``holds_b``)."""
        return np.where(holds_b, self.labels[self.n:], self.labels[:self.n])

    def counts(self, labels: npt.NDArray[np.intp]) -> FloatArray:
        """``(R, classes)``: how many entries of each row of ``labels`` fall in each class."""
        rows = labels.shape[0]
        flat = (labels + (np.arange(rows) * self.size)[:, None]).ravel()
        return np.bincount(flat, minlength=rows * self.size).reshape(rows, self.size).astype(np.float64)


def _tied_pairs(per_class: FloatArray) -> FloatArray:
    return 0.5 * (per_class * (per_class - 1)).sum(axis=1)


class PermutedPairs:
    """Statistics of both sides of PERM-BOTH permutations of metrics ``a`` and ``b`` against ``gold``."""

    def __init__(self, gold: FloatArray, a: FloatArray, b: FloatArray) -> None:
        self.gold, self.a, self.b = gold, a, b
        self.n = gold.size
        self.pairs = self.n * (self.n - 1) / 2
        gold_labels = np.unique(gold, return_inverse=True)[1].ravel()
        self.gold_ties = float(_tied_pairs(np.bincount(gold_labels)[None, :].astype(np.float64))[0])
        self.gold_classes = float(gold_labels.max() + 1)
        self.values = _Candidates(np.r_[a, b])
        couples = np.r_[gold_labels, gold_labels] * (int(self.values.labels.max()) + 1) + self.values.labels
        self.couples = _Candidates(couples.astype(np.float64))
        self._latest: tuple[npt.NDArray[np.bool_], tuple[FloatArray, FloatArray]] | None = None

    @cached_property
    def _quadratic(self) -> tuple[npt.NDArray[np.float32], FloatArray, FloatArray, float]:
        """(Q, column sums of Q, linear term, constant) of the concordance (module docstring)."""
        n, gold, a, b = self.n, self.gold, self.a, self.b
        q_matrix = np.empty((n, n), dtype=np.float32)
        linear = np.empty(n)
        constant = 0.0
        step = max(1, MAX_BLOCK_ELEMENTS // (4 * n))  # six float64 temporaries of n x step: at most 96 MB
        for begin in range(0, n, step):
            block = slice(begin, min(n, begin + step))
            gold_sign = np.sign(gold[:, None] - gold[None, block])
            k00 = gold_sign * np.sign(a[:, None] - a[None, block])
            k01 = gold_sign * np.sign(a[:, None] - b[None, block])
            k10 = gold_sign * np.sign(b[:, None] - a[None, block])
            k11 = gold_sign * np.sign(b[:, None] - b[None, block])
            q_matrix[:, block] = k00 - k01 - k10 + k11
            # linear term: 2 (colsum(K_01) - colsum(K_00)), since K_uv^T = K_vu (K_00 is symmetric)
            linear[block] = 2 * (k01 - k00).sum(axis=0)
            constant += float(k00.sum())
        return q_matrix, q_matrix.sum(axis=0, dtype=np.float64), linear, constant

    def concordances(self, swap: npt.NDArray[np.bool_]) -> tuple[FloatArray, FloatArray]:
        """``S`` of side A and side B of every permutation (kept for the latest ``swap``, which
        every Kendall-type statistic of a chunk of permutations shares)."""
        if self._latest is not None and self._latest[0] is swap:
            return self._latest[1]
        q_matrix, column_sums, linear, constant = self._quadratic
        x = swap.astype(np.float64)
        y = 1.0 - x
        product = (swap.astype(np.float32) @ q_matrix).astype(np.float64)
        side_a = 0.5 * (constant + x @ linear + np.einsum("ri,ri->r", product, x))
        side_b = 0.5 * (constant + y @ linear + np.einsum("ri,ri->r", column_sums[None, :] - product, y))
        self._latest = (swap, (side_a, side_b))
        return side_a, side_b

    def _mid_ranks(self, labels: npt.NDArray[np.intp]) -> FloatArray:
        per_class = self.values.counts(labels)
        ranks = np.cumsum(per_class, axis=1) - per_class + (per_class + 1.0) / 2.0
        return np.take_along_axis(ranks, labels, axis=1)

    def statistics(self, statistic: str, swap: npt.NDArray[np.bool_]) -> tuple[FloatArray, FloatArray]:
        """(side A, side B) value of ``statistic`` for each permutation row of ``swap``."""
        sides = self.values.side_labels(swap), self.values.side_labels(~swap)  # side A holds b_i where swapped
        if statistic == "spearman":
            from scipy.stats import rankdata

            gold_rank = rankdata(self.gold)
            side_a, side_b = (_pearson_rows(gold_rank, self._mid_ranks(labels)) for labels in sides)
            return side_a, side_b
        results = []
        for holds_b, labels, concordance in zip((swap, ~swap), sides, self.concordances(swap), strict=True):
            per_class = self.values.counts(labels)
            ties = _tied_pairs(per_class)
            with np.errstate(invalid="ignore", divide="ignore"):
                if statistic == "kendall_b":
                    value = kendall_tau_b(concordance, self.pairs, self.gold_ties, ties)
                elif statistic == "kendall_c":
                    k = np.minimum(self.gold_classes, (per_class > 0).sum(axis=1))
                    value = kendall_tau_c(concordance, self.n, k, self.pairs, self.gold_ties, ties)
                else:  # acc_23, tau_23: pairs ordered alike or tied in both
                    both = _tied_pairs(self.couples.counts(self.couples.side_labels(holds_b)))
                    agree = (concordance + self.pairs - self.gold_ties - ties + both) / 2 + both  # C + T_both
                    # as assay.stats.pairwise.PairCounts computes them
                    value = (2 * agree - self.pairs) / self.pairs if statistic == "tau_23" else agree / self.pairs
            results.append(value)
        return results[0], results[1]


def _pearson_rows(x: FloatArray, rows: FloatArray) -> FloatArray:
    dx = x - x.mean()
    dy = rows - rows.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (dy * dx).sum(axis=1) / np.sqrt((dx * dx).sum() * (dy * dy).sum(axis=1))


def permuted_pairs(statistic: str, gold: FloatArray, a: FloatArray, b: FloatArray) -> PermutedPairs | None:
    """The matrix form for ``statistic``, or None where this module has none (other statistics;
    fewer than two entries)."""
    if statistic not in PERMUTED_STATISTICS or gold.size < 2:
        return None
    return PermutedPairs(gold, a, b)


def permuted_statistics(statistic: str, gold: FloatArray, a: FloatArray, b: FloatArray,
                        swap: npt.NDArray[np.bool_]) -> tuple[FloatArray, FloatArray] | None:
    """(side A, side B) statistic of each permutation row of ``swap``, or None where this module
    has no form."""
    pairs = permuted_pairs(statistic, gold, a, b)
    return None if pairs is None else pairs.statistics(statistic, swap)
