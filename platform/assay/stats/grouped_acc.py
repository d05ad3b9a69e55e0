"""Per-group tau_23 / acc_23 at one metric tie threshold, and bootstrap replicates of their mean.

The WMT24 segment-level statistic is acc-t grouped by item: Deutsch, Foster and Freitag (2023),
"Ties Matter" (arXiv:2305.14324), acc_23 computed per item (across the systems' outputs for one
source segment), averaged over items, at the one metric tie threshold ``epsilon`` that maximises
that average (google-research/mt-metrics-eval ``stats.KendallWithTiesOpt(variant='acc23',
average_by='item', sample_rate=1.0)``; :func:`assay.stats.tie_calibration` finds the threshold).

With the threshold fixed, the grouped value is a plain mean of per-group values, so a bootstrap
that resamples items (groups) needs no recomputation: a replicate is the count-weighted mean of the
per-group values (:func:`resampled_grouped_mean`). The threshold stays the full-sample one in every
replicate, as in :mod:`assay.stats.resampled` (re-calibrating per replicate would be another
statistic). A group with fewer than two scored entries has no pair and no value (NaN); it drops out
of the full-sample mean, as in mt-metrics-eval, and likewise out of every replicate (its draws
count for nothing), so that with every count 1 a replicate is the full-sample value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assay.errors import StatsInputError
from assay.stats._groups import (
    FloatArray,
    Grouping,
    Scores,
    drop_missing,
    group_index_lists,
    infer_num_systems,
    paired_vectors,
)
from assay.stats.pairwise import PairwiseStatistic, count_pairs

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class GroupedPairwise:
    """tau_23 or acc_23 of every group at one metric tie threshold."""

    statistic: str
    epsilon: float
    """Metric tie threshold: pairs whose metric scores differ by at most this are ties."""
    grouping: str
    values: FloatArray
    """One value per group, in group order (items for ``"item"``, systems for ``"system"``); NaN
    where the group has no pair (fewer than two entries with a gold score)."""
    n_pairs: IntArray
    """Pairs per group (0 where the value is NaN)."""

    @property
    def value(self) -> float:
        """The grouped statistic: the mean over the groups that have a value (NaN if none has)."""
        defined = self.values[~np.isnan(self.values)]
        return float(np.mean(defined)) if defined.size else float("nan")

    @property
    def n_groups(self) -> int:
        """Groups with a value."""
        return int((~np.isnan(self.values)).sum())


def per_group_pairwise(
    gold: Scores,
    metric: Scores,
    *,
    epsilon: float,
    statistic: PairwiseStatistic = "acc_23",
    num_systems: int | None = None,
    grouping: Grouping = "item",
) -> GroupedPairwise:
    """Per-group tau_23 / acc_23 (Deutsch et al. 2023) with metric ties ``|difference| <= epsilon``.

    Scores are system-major as everywhere in :mod:`assay.stats`; missing gold scores drop their
    entry. At the ``epsilon`` of :func:`assay.stats.tie_calibration` (same grouping), ``.value`` is
    the tie-calibrated value.
    """
    if statistic not in ("tau_23", "acc_23"):
        raise StatsInputError(f"unknown pairwise statistic {statistic!r} (expected 'tau_23' or 'acc_23')")
    if not epsilon >= 0:
        raise StatsInputError(f"epsilon must be non-negative (got {epsilon})")
    systems = infer_num_systems(gold, num_systems)
    gold_vec, metric_vec = paired_vectors(gold, metric)
    indices = group_index_lists(gold_vec.size, systems, grouping)
    values = np.full(len(indices), np.nan)
    n_pairs = np.zeros(len(indices), dtype=np.int64)
    for group, index in enumerate(indices):
        group_gold, group_metric = drop_missing(gold_vec[index], metric_vec[index])
        if group_gold.size >= 2:
            counts = count_pairs(group_gold, group_metric, epsilon)
            values[group] = counts.value(statistic)
            n_pairs[group] = counts.n_pairs
    return GroupedPairwise(statistic, float(epsilon), grouping, values, n_pairs)


def resampled_grouped_mean(per_group_values: npt.ArrayLike, counts: npt.ArrayLike) -> FloatArray:
    """``(R,)`` bootstrap replicates of the mean over groups, resampling groups.

    ``counts`` is ``(R, groups)``: how often each group (item) was drawn. A replicate is
    ``sum_g c_g v_g / sum_g c_g`` over the groups with a value (NaN values drop out, as in the
    full-sample mean); a replicate that drew no group with a value is NaN.
    """
    values = np.asarray(per_group_values, dtype=np.float64)
    weights = np.asarray(counts, dtype=np.float64)
    if values.ndim != 1:
        raise StatsInputError(f"per-group values must be a vector, got shape {values.shape}")
    if weights.ndim != 2 or weights.shape[1] != values.size:
        raise StatsInputError(f"counts must be (resamples x {values.size} groups), got shape {weights.shape}")
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise StatsInputError("counts must be finite and non-negative (how often each group was drawn)")
    defined = ~np.isnan(values)
    kept = weights[:, defined]
    total = kept.sum(axis=1)
    weighted = kept @ values[defined]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, weighted / total, np.nan)
