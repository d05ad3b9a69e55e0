"""Is one metric's correlation with humans significantly higher than another's?

Two paired tests, both following google-research/mt-metrics-eval (``stats.py``):

``williams_test``
    Williams' (1959) test for the difference between two dependent correlations that share the
    gold variable, as advocated for MT metrics by Graham and Baldwin (2014). It needs only the
    three Pearson correlations and the sample size. The one-sided p-value is for "the metric with
    the higher correlation is better"; the statistic is symmetric in the two metrics.

``permutation_test``
    PERM-BOTH (Deutsch, Dror and Roth 2021, "A Statistical Analysis of Summarization Evaluation
    Metrics using Resampling Methods", arXiv:2104.00054). Each metric's scores are first z-scored
    (over the entries with a gold score) so that the two are exchangeable; each resample then
    swaps the two metrics' scores on every (system, item) entry independently with probability
    1/2 and recomputes the difference of the (grouped) statistic. The p-value is the share of
    resamples whose difference is at least the observed one (mt-metrics-eval's estimate, without
    the +1 correction) for the hypothesis "metric_a correlates better than metric_b". Unlike
    mt-metrics-eval it draws from a seeded ``numpy.random.Generator`` and never stops early.

The statistic of ``permutation_test`` is a name (``"pearson"``, ``"spearman"``, ``"kendall_b"``,
``"kendall_c"``, ``"tau_23"``, ``"acc_23"``) or any ``f(gold, metric) -> float``; it must not
change under a positive affine transform of the metric scores (correlations do not), because of
the z-scoring. Named statistics are computed for all resamples at once: Pearson with arrays;
without grouping, the rank statistics from one matrix product per chunk of permutations
(:mod:`assay.stats.permuted`); with grouping, Kendall tau-b / tau_23 / acc_23 over the within-group
pairs. A callable statistic (and Spearman or tau-c with grouping) is computed permutation by
permutation.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from assay.config import DEFAULT_RESAMPLES
from assay.errors import StatsInputError
from assay.stats._groups import (
    FloatArray,
    Grouping,
    Scores,
    as_float_vector,
    drop_missing,
    group_index_lists,
    infer_num_systems,
    paired_vectors,
    require_seed,
)
from assay.stats.correlation import CORRELATION_STATISTICS, correlation_kernel
from assay.stats.pairwise import count_pairs
from assay.stats.permuted import PERMUTED_STATISTICS, permuted_pairs

StatisticName: TypeAlias = Literal["pearson", "spearman", "kendall_b", "kendall_c", "tau_23", "acc_23"]
Statistic: TypeAlias = StatisticName | Callable[[FloatArray, FloatArray], float]

# A resampled difference counts as "at least the observed one" within this much, so that exact
# ties (e.g. identical metrics) are not lost to float noise in the sums.
_TIE_TOLERANCE = 1e-12
_CHUNK = 256  # resamples drawn together
_MAX_BATCH_ELEMENTS = 4_000_000  # largest temporary matrix of the vectorised paths, in elements
# Kendall-type statistics are vectorised over pairs when the groups hold at most this many pairs
# in all (e.g. grouping by item); beyond it scipy's O(n log n) kendalltau is faster per resample.
_MAX_VECTOR_PAIRS = 200_000
_PAIR_STATISTICS = ("kendall_b", "tau_23", "acc_23")


@dataclass(frozen=True)
class WilliamsResult:
    """Williams' test for two dependent Pearson correlations sharing the gold scores."""

    p_value: float
    r_a: float
    """Pearson r of metric_a with gold."""
    r_b: float
    """Pearson r of metric_b with gold."""
    r_ab: float
    """Pearson r between the two metrics."""
    n: int
    """Entries with a gold score."""
    one_sided: bool


@dataclass(frozen=True)
class PermutationResult:
    """A PERM-BOTH paired permutation test of "metric_a correlates better than metric_b"."""

    p_value: float
    delta: float
    """``value_a - value_b``."""
    value_a: float
    value_b: float
    statistic: str
    grouping: str
    n_resamples: int
    seed: int


def williams_p_value(r_a: float, r_b: float, r_ab: float, n: int, *, one_sided: bool = True) -> float:
    """Williams' test p-value from r(gold, a), r(gold, b), r(a, b) and the sample size ``n``.

    The t statistic has ``n - 3`` degrees of freedom (mt-metrics-eval ``WilliamsTest``).
    """
    import scipy.stats  # here, not at module level: it is slow to import

    if n <= 3:
        raise StatsInputError(f"Williams' test needs more than 3 scored entries (got {n})")
    k = 1 - r_a**2 - r_b**2 - r_ab**2 + 2 * r_a * r_b * r_ab
    r_mean = (r_a + r_b) / 2
    numerator = (r_a - r_b) * np.sqrt((n - 1) * (1 + r_ab))
    denominator = np.sqrt(2 * (n - 1) / (n - 3) * k + r_mean**2 * (1 - r_ab) ** 3)
    p_value = float(scipy.stats.t.sf(np.abs(numerator / denominator), n - 3))
    return p_value if one_sided else min(1.0, 2 * p_value)


def williams_test(gold: Scores, metric_a: Scores, metric_b: Scores, *, one_sided: bool = True) -> WilliamsResult:
    """Williams' test on ungrouped Pearson correlations; entries without a gold score are dropped."""
    gold_vec, a_vec = paired_vectors(gold, metric_a)
    b_vec = as_float_vector(metric_b, "metric_b scores", allow_missing=False)
    if b_vec.shape != gold_vec.shape:
        raise StatsInputError(f"metric_b has {b_vec.size} scores, gold has {gold_vec.size}; they must be parallel")
    gold_vec, a_vec, b_vec = drop_missing(gold_vec, a_vec, b_vec)
    pearson = correlation_kernel("pearson")
    r_a, r_b, r_ab = pearson(gold_vec, a_vec), pearson(gold_vec, b_vec), pearson(a_vec, b_vec)
    n = int(gold_vec.size)
    return WilliamsResult(williams_p_value(r_a, r_b, r_ab, n, one_sided=one_sided), r_a, r_b, r_ab, n, one_sided)


def _pairwise_kernel(statistic: str) -> Callable[[FloatArray, FloatArray], float]:
    return lambda gold, metric: count_pairs(gold, metric).value(statistic)


def statistic_function(statistic: Statistic) -> Callable[[FloatArray, FloatArray], float]:
    """``f(gold, metric) -> float`` for a statistic name, or the callable itself."""
    if callable(statistic):
        return statistic
    if statistic in CORRELATION_STATISTICS:
        return correlation_kernel(statistic)
    if statistic in ("tau_23", "acc_23"):
        return _pairwise_kernel(statistic)
    raise StatsInputError(
        f"unknown statistic {statistic!r} (expected one of pearson, spearman, kendall_b, kendall_c, "
        "tau_23, acc_23, or a callable f(gold, metric) -> float)"
    )


def _statistic_label(statistic: Statistic) -> str:
    return statistic if isinstance(statistic, str) else getattr(statistic, "__name__", repr(statistic))


class _GroupedData:
    """Gold and metric vectors flattened in group order, missing gold entries removed."""

    def __init__(self, gold: FloatArray, metrics: list[FloatArray], num_systems: int, grouping: str) -> None:
        indices, lengths = [], []
        for index in group_index_lists(gold.size, num_systems, grouping):
            kept = index[~np.isnan(gold[index])]
            if kept.size >= 2:
                indices.append(kept)
                lengths.append(kept.size)
        if not indices:
            raise StatsInputError("no group has two or more entries with a gold score; nothing to compare")
        order = np.concatenate(indices)
        self.gold = gold[order]
        self.metrics = [metric[order] for metric in metrics]
        self.lengths = np.asarray(lengths)
        self.starts = np.r_[0, np.cumsum(self.lengths)[:-1]]
        self.bounds = list(zip(self.starts, self.starts + self.lengths, strict=True))


def _mean_over_groups(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    # Groups whose statistic is undefined (NaN) are left out of the mean, as in mt-metrics-eval.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=-1)


def _constant_groups(values: npt.NDArray[np.float64], starts: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
    # Exact test (as scipy does), not a variance threshold: float noise must not make a constant
    # group look correlated.
    axis = values.ndim - 1
    return np.maximum.reduceat(values, starts, axis=axis) == np.minimum.reduceat(values, starts, axis=axis)


def _grouped_pearson(data: _GroupedData, metric_rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Mean over groups of Pearson r(gold, row) for every row of a (resamples, entries) matrix."""
    lengths, starts = data.lengths, data.starts
    gold_centred = data.gold - np.repeat(np.add.reduceat(data.gold, starts) / lengths, lengths)
    gold_ss = np.add.reduceat(gold_centred**2, starts)
    means = np.add.reduceat(metric_rows, starts, axis=1) / lengths
    centred = metric_rows - np.repeat(means, lengths, axis=1)
    covariance = np.add.reduceat(centred * gold_centred, starts, axis=1)
    metric_ss = np.add.reduceat(centred**2, starts, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(covariance / np.sqrt(metric_ss * gold_ss), -1.0, 1.0)
    r[_constant_groups(metric_rows, starts) | _constant_groups(data.gold, starts)] = np.nan
    return _mean_over_groups(r)


class _Pairs:
    """Every within-group pair of entries (i < j), for vectorised Kendall-type statistics."""

    def __init__(self, data: _GroupedData) -> None:
        firsts, seconds, counts = [], [], []
        for begin, end in data.bounds:
            first, second = np.triu_indices(int(end - begin), k=1)
            firsts.append(first + begin)
            seconds.append(second + begin)
            counts.append(first.size)
        self.first = np.concatenate(firsts)
        self.second = np.concatenate(seconds)
        self.counts = np.asarray(counts, dtype=np.float64)
        self.starts = np.r_[0, np.cumsum(counts)[:-1]]
        self.gold_sign = np.sign(data.gold[self.first] - data.gold[self.second])
        self.gold_ties = np.add.reduceat((self.gold_sign == 0).astype(np.float64), self.starts)

    def mean_statistic(self, statistic: str, metric_rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        metric_sign = np.sign(metric_rows[:, self.first] - metric_rows[:, self.second])
        if statistic == "kendall_b":
            # tau-b = (C - D) / sqrt((N - ties_gold) (N - ties_metric)), ties counted in total.
            c_minus_d = np.add.reduceat(metric_sign * self.gold_sign, self.starts, axis=1)
            metric_ties = np.add.reduceat((metric_sign == 0).astype(np.float64), self.starts, axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                values = c_minus_d / np.sqrt((self.counts - metric_ties) * (self.counts - self.gold_ties))
            values[(metric_ties == self.counts) | (self.gold_ties == self.counts)] = np.nan
            return _mean_over_groups(values)
        agree = np.add.reduceat((metric_sign == self.gold_sign).astype(np.float64), self.starts, axis=1)
        accuracy = agree / self.counts
        return _mean_over_groups(accuracy if statistic == "acc_23" else 2 * accuracy - 1)


def _grouped_generic(
    data: _GroupedData, metric_rows: npt.NDArray[np.float64], function: Callable[[FloatArray, FloatArray], float]
) -> npt.NDArray[np.float64]:
    values = np.empty((metric_rows.shape[0], len(data.bounds)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row, metric in enumerate(metric_rows):
            for column, (begin, end) in enumerate(data.bounds):
                values[row, column] = function(data.gold[begin:end], metric[begin:end])
    return _mean_over_groups(values)


def _in_row_batches(
    evaluate: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]], width: int
) -> Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]:
    # Bounds the temporary (rows x width) arrays of the vectorised paths.
    batch = max(1, _MAX_BATCH_ELEMENTS // max(1, width))

    def batched(rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return np.concatenate([evaluate(rows[i : i + batch]) for i in range(0, rows.shape[0], batch)])

    return batched


def _evaluator(
    statistic: Statistic, data: _GroupedData
) -> Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]:
    """Mean-over-groups statistic for each row of a (resamples, entries) matrix of metric scores."""
    if isinstance(statistic, str) and statistic == "pearson":
        return _in_row_batches(lambda rows: _grouped_pearson(data, rows), data.gold.size)
    n_pairs = int((data.lengths * (data.lengths - 1) // 2).sum())
    if isinstance(statistic, str) and statistic in _PAIR_STATISTICS and n_pairs <= _MAX_VECTOR_PAIRS:
        pairs = _Pairs(data)
        name = statistic
        return _in_row_batches(lambda rows: pairs.mean_statistic(name, rows), n_pairs)
    function = statistic_function(statistic)
    return lambda rows: _grouped_generic(data, rows, function)


def grouped_statistic(
    gold: Scores,
    metric: Scores,
    statistic: Statistic = "pearson",
    *,
    num_systems: int | None = None,
    grouping: Grouping = "none",
) -> float:
    """The statistic as the permutation test sees it: the mean over groups of ``f(gold, metric)``."""
    systems = infer_num_systems(gold, num_systems)
    gold_vec, metric_vec = paired_vectors(gold, metric)
    data = _GroupedData(gold_vec, [metric_vec], systems, grouping)
    return float(_evaluator(statistic, data)(data.metrics[0][np.newaxis, :])[0])


def permutation_test(
    gold: Scores,
    metric_a: Scores,
    metric_b: Scores,
    *,
    statistic: Statistic = "pearson",
    num_systems: int | None = None,
    grouping: Grouping = "none",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int,
) -> PermutationResult:
    """PERM-BOTH paired permutation test that ``metric_a`` correlates better than ``metric_b``.

    ``gold``, ``metric_a`` and ``metric_b`` are parallel (system-major, see ``assay.stats``);
    ``statistic`` and ``grouping`` say what is compared (``grouping="item"`` with ``"kendall_b"``
    compares item-averaged Kendall taus). Small p-values favour ``metric_a``; a p-value near 1
    means ``metric_b`` is at least as good. Deterministic given ``seed``.
    """
    return permutation_tests(gold, metric_a, metric_b, statistics=[statistic], num_systems=num_systems,
                             grouping=grouping, n_resamples=n_resamples, seed=seed)[0][0]


def permutation_tests(
    gold: Scores,
    metric_a: Scores,
    metric_b: Scores,
    *,
    statistics: Sequence[Statistic],
    num_systems: int | None = None,
    grouping: Grouping = "none",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int,
) -> list[tuple[PermutationResult, PermutationResult]]:
    """:func:`permutation_test` for several statistics on the same permutations, both ways.

    For each statistic, ``(a over b, b over a)``: each equals :func:`permutation_test` with the
    metrics in that order and the same seed (the permutations are the same draws, and swapping the
    metrics negates every permuted difference), so one set of permutations serves every statistic
    and both directions.
    """
    seed = require_seed(seed)
    if n_resamples < 1:
        raise StatsInputError(f"n_resamples must be at least 1 (got {n_resamples})")
    systems = infer_num_systems(gold, num_systems)
    gold_vec, a_vec = paired_vectors(gold, metric_a)
    b_vec = as_float_vector(metric_b, "metric_b scores", allow_missing=False)
    if b_vec.shape != gold_vec.shape:
        raise StatsInputError(f"metric_b has {b_vec.size} scores, gold has {gold_vec.size}; they must be parallel")
    data = _GroupedData(gold_vec, [a_vec, b_vec], systems, grouping)
    a_z, b_z = (_zscore(scores, name) for scores, name in zip(data.metrics, ("metric_a", "metric_b"), strict=True))
    evaluators = [_evaluator(statistic, data) for statistic in statistics]
    values = [evaluate(np.vstack([a_z, b_z])) for evaluate in evaluators]
    deltas = [float(value_a - value_b) for value_a, value_b in values]
    # rank statistics of all permutations from one matrix product per chunk (assay.stats.permuted)
    named = [s for s in statistics if isinstance(s, str)]
    permuted = permuted_pairs(named[0], data.gold, a_z, b_z) if named and grouping == "none" else None
    forward = np.zeros(len(statistics), dtype=np.int64)
    backward = np.zeros(len(statistics), dtype=np.int64)
    rng = np.random.default_rng(seed)
    for begin in range(0, n_resamples, _CHUNK):
        swap = rng.random((min(_CHUNK, n_resamples - begin), a_z.size)) < 0.5
        for k, (statistic, evaluate) in enumerate(zip(statistics, evaluators, strict=True)):
            if permuted is not None and isinstance(statistic, str) and statistic in PERMUTED_STATISTICS:
                resampled_a, resampled_b = permuted.statistics(statistic, swap)
            else:
                resampled_a = evaluate(np.where(swap, b_z, a_z))
                resampled_b = evaluate(np.where(swap, a_z, b_z))
            difference = resampled_a - resampled_b
            forward[k] += int(np.sum(difference >= deltas[k] - _TIE_TOLERANCE))
            backward[k] += int(np.sum(-difference >= -deltas[k] - _TIE_TOLERANCE))
    results = []
    for k, statistic in enumerate(statistics):
        (value_a, value_b), label = values[k], _statistic_label(statistic)
        results.append((
            PermutationResult(float(forward[k]) / n_resamples, deltas[k], float(value_a), float(value_b), label,
                              grouping, n_resamples, seed),
            PermutationResult(float(backward[k]) / n_resamples, -deltas[k], float(value_b), float(value_a), label,
                              grouping, n_resamples, seed)))
    return results


def _zscore(scores: FloatArray, name: str) -> FloatArray:
    spread = scores.std()
    if not spread > 0:
        raise StatsInputError(f"{name}: all scores are equal; a constant metric cannot be compared")
    return (scores - scores.mean()) / spread
