"""Rank statistics of every PERM-BOTH permutation at once, with matrix products.

The PERM-BOTH test (Deutsch et al. 2021, as in mt-metrics-eval) swaps, independently for each
entry, the two metrics' (z-scored) scores, and recomputes both correlations. A permutation is a
0/1 vector ``s`` (1: swapped). Entry ``i`` of side A then holds ``m^{s_i}_i`` (``m^0 = a``,
``m^1 = b``) and side B holds ``m^{1 - s_i}_i``.

A sum over pairs ``i < j`` of a pair function of the two entries' values, ``F(m^u_i, m^v_j)``,
becomes ``sum_{u,v} U_u^T triu(F_uv) U_v`` with ``U_1 = s`` and ``U_0 = 1 - s``: for all
permutations at once, one ``(R x n) @ (n x 4n)`` product (``U_0 @ M = colsum(M) - U_1 @ M``).
Kendall's tau-b needs the concordance and the metric ties; Spearman's rho the mid-ranks, which
are such sums too; Kendall's tau-c the concordance and the number of distinct values (a sort).
The products are exact in float32 (sums of at most ``n^2 / 2`` terms of -1, 0 or 1), so the
statistics equal scipy's on each permuted vector (the tests check it).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from assay.stats.resampled import MAX_MATRIX_ROWS, _weighted_pearson

FloatArray = npt.NDArray[np.float64]
PERMUTED_STATISTICS = ("kendall_b", "kendall_c", "spearman")


def _blocks(a: FloatArray, b: FloatArray, function: str) -> list[FloatArray]:
    """``F_uv[i, j]`` for (u, v) in 00, 01, 10, 11: ``F(m^u_i, m^v_j)``."""
    values = (a, b)
    out = []
    for u in (0, 1):
        for v in (0, 1):
            difference = values[u][:, None] - values[v][None, :]
            if function == "sign":
                out.append(np.sign(difference))
            elif function == "tie":
                out.append((difference == 0).astype(np.float64))
            else:  # "below": [m^v_j < m^u_i] + [m^v_j == m^u_i] / 2, an entry never compared with itself
                below = (difference > 0) + 0.5 * (difference == 0)
                np.fill_diagonal(below, 0.0)
                out.append(below.T.astype(np.float64))  # transposed: rows of U @ it index i
    return out


def _swapped_sums(swap: npt.NDArray[np.bool_], blocks: list[FloatArray], *, quadratic: bool
                  ) -> tuple[list[FloatArray], list[FloatArray]]:
    """For each block (u, v): side A's and side B's per-permutation values.

    ``quadratic``: the pair sum ``U_u^T M U_v`` (one number per permutation); otherwise the vector
    ``U_v @ M`` weighted by ``U_u`` (one value per permutation and entry, for the ranks).
    """
    u1 = swap.astype(np.float32)
    n = swap.shape[1]
    stacked = np.empty((n, len(blocks) * n), dtype=np.float32)
    for k, block in enumerate(blocks):
        stacked[:, k * n:(k + 1) * n] = block
    product = (u1 @ stacked).astype(np.float64)  # exact: integer (or half-integer) sums far below 2**24
    ones = (1.0 - u1).astype(np.float64), u1.astype(np.float64)
    side_a, side_b = [], []
    for k, (u, v) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
        block = blocks[k]
        with_u1 = product[:, k * n:(k + 1) * n]  # U_1 @ M
        with_u0 = block.sum(axis=0)[None, :] - with_u1  # U_0 @ M
        by = (with_u0, with_u1)
        if quadratic:
            side_a.append(np.einsum("ri,ri->r", by[u], ones[v]))
            side_b.append(np.einsum("ri,ri->r", by[1 - u], ones[1 - v]))
        else:
            side_a.append(by[v] * ones[u])
            side_b.append(by[1 - v] * ones[1 - u])
    return side_a, side_b


def permuted_statistics(statistic: str, gold: FloatArray, a: FloatArray, b: FloatArray,
                        swap: npt.NDArray[np.bool_]) -> tuple[FloatArray, FloatArray] | None:
    """(side A, side B) statistic of each permutation row of ``swap``, or None where this module
    has no matrix form (other statistics, or more than :data:`MAX_MATRIX_ROWS` entries)."""
    n = gold.size
    if statistic not in PERMUTED_STATISTICS or n > MAX_MATRIX_ROWS or n < 2:
        return None
    upper = np.triu(np.ones((n, n)), k=1)
    pairs = n * (n - 1) / 2
    gold_sign = np.sign(gold[:, None] - gold[None, :])
    if statistic == "spearman":
        a_parts, b_parts = _swapped_sums(swap, _blocks(a, b, "below"), quadratic=False)
        rank_a = 1.0 + np.sum(a_parts, axis=0)
        rank_b = 1.0 + np.sum(b_parts, axis=0)
        from scipy.stats import rankdata

        gold_rank = np.broadcast_to(rankdata(gold), rank_a.shape)
        weights = np.ones_like(rank_a)
        return _weighted_pearson(weights, gold_rank, rank_a), _weighted_pearson(weights, gold_rank, rank_b)
    concordance = [gold_sign * block * upper for block in _blocks(a, b, "sign")]
    if statistic == "kendall_c":
        a_sums, b_sums = _swapped_sums(swap, concordance, quadratic=True)
        gold_classes = np.unique(gold).size
        results = []
        for side, values in ((sum(a_sums), np.where(swap, b, a)), (sum(b_sums), np.where(swap, a, b))):
            ordered = np.sort(values, axis=1)
            classes = np.minimum(gold_classes, 1 + (np.diff(ordered, axis=1) != 0).sum(axis=1))
            with np.errstate(invalid="ignore", divide="ignore"):
                results.append(2 * side / (n**2 * (classes - 1) / classes))
        return results[0], results[1]
    ties = [block * upper for block in _blocks(a, b, "tie")]
    sums_a, sums_b = _swapped_sums(swap, concordance, quadratic=True)
    ties_a, ties_b = _swapped_sums(swap, ties, quadratic=True)
    gold_ties = float(((gold_sign == 0) * upper).sum())
    results = []
    for numerator, metric_ties in ((sum(sums_a), sum(ties_a)), (sum(sums_b), sum(ties_b))):
        with np.errstate(invalid="ignore", divide="ignore"):
            value = numerator / np.sqrt((pairs - metric_ties) * (pairs - gold_ties))
        value[(metric_ties == pairs) | (gold_ties == pairs)] = np.nan
        results.append(value)
    return results[0], results[1]
