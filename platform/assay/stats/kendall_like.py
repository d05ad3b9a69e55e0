"""WMT's DARR "Kendall's tau-like" segment-level correlation.

From WMT17 on, the WMT Metrics shared task turns direct-assessment (DA) scores into relative
rankings (DARR): two translations of the same source segment form a pair when their raw human
scores differ by at least ``threshold`` points (25 on the 0-100 DA scale), and the better one is
the one humans scored higher. A metric agrees with a pair (Concordant) when it scores the better
translation strictly higher, disagrees (Discordant) when it scores it lower, and

    tau_like = (|Concordant| - |Discordant|) / (|Concordant| + |Discordant|).

Pairs on which the *metric* ties were handled differently over the years (BLEURT, Sellam et al.
2020, appendix; WMT17/WMT18 metrics task reports): in 2017 a metric tie counted as neither
Concordant nor Discordant (it drops out of the denominator, ``metric_ties="ignore"``); from 2018
on it counts as Discordant (``metric_ties="discordant"``). ``metric_ties_for_wmt_year`` picks the
policy from the year.

The threshold test is inclusive, ``|human_a - human_b| >= threshold``, following
google-research/mt-metrics-eval's ``KendallLike`` (whose comment says it emulates WMT's scripts).
Counts are pooled over all pairs of all groups (items by default), which equals mt-metrics-eval's
pair-weighted average of per-item values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np

from assay.errors import StatsInputError
from assay.stats._groups import (
    FloatArray,
    Grouping,
    Scores,
    as_float_vector,
    infer_num_systems,
    paired_vectors,
    split_groups,
)

MetricTies: TypeAlias = Literal["ignore", "discordant"]
"""What a pair tied by the metric counts as: nothing (WMT17) or Discordant (WMT18 and later)."""

FIRST_DARR_YEAR = 2017


@dataclass(frozen=True)
class KendallLikeResult:
    """A DARR Kendall-like value with its pair counts."""

    value: float
    """``(C - D) / (C + D)``; ``NaN`` when no pair qualifies (mt-metrics-eval returns 0 there)."""
    concordant: int
    discordant: int
    """Includes the metric ties under ``metric_ties="discordant"``."""
    metric_ties: int
    """Qualifying pairs on which the metric scores were equal (however they were counted)."""
    metric_ties_policy: str
    threshold: float | None
    """Minimum human-score difference for a pair; ``None`` when explicit pairs were given."""
    n_groups: int
    """Groups (items, by default) with at least one pair past the threshold."""

    @property
    def n_pairs(self) -> int:
        """Pairs in the denominator, ``concordant + discordant``."""
        return self.concordant + self.discordant


def metric_ties_for_wmt_year(year: int) -> MetricTies:
    """The metric-tie policy of the WMT Metrics task of ``year``: 2017 ignores, 2018+ penalises.

    DARR did not exist before WMT17 (earlier years used relative-ranking judgments and other
    formulations), so earlier years are an error rather than a guess.
    """
    if year < FIRST_DARR_YEAR:
        raise StatsInputError(f"WMT {year} has no DARR protocol (it starts with WMT17); pass metric_ties explicitly")
    return "ignore" if year == FIRST_DARR_YEAR else "discordant"


def _check_policy(metric_ties: str) -> None:
    if metric_ties not in ("ignore", "discordant"):
        raise StatsInputError(f"unknown metric_ties {metric_ties!r} (expected 'ignore' or 'discordant')")


def _count_pairs(gold: FloatArray, metric: FloatArray, threshold: float) -> tuple[int, int, int]:
    """Concordant, strictly discordant and metric-tied pairs among the qualifying pairs of one group."""
    first, second = np.triu_indices(gold.size, k=1)
    gold_diff = gold[first] - gold[second]
    qualifies = np.abs(gold_diff) >= threshold
    gold_sign = np.sign(gold_diff[qualifies])
    metric_sign = np.sign(metric[first[qualifies]] - metric[second[qualifies]])
    tied = metric_sign == 0
    concordant = int((gold_sign == metric_sign).sum())
    ties = int(tied.sum())
    return concordant, int(qualifies.sum()) - concordant - ties, ties


def _result(
    concordant: int, discordant: int, ties: int, metric_ties: str, threshold: float | None, n_groups: int
) -> KendallLikeResult:
    if metric_ties == "discordant":
        discordant += ties
    total = concordant + discordant
    value = (concordant - discordant) / total if total else float("nan")
    return KendallLikeResult(value, concordant, discordant, ties, metric_ties, threshold, n_groups)


def kendall_like(
    gold: Scores,
    metric: Scores,
    *,
    threshold: float = 25.0,
    metric_ties: MetricTies = "discordant",
    num_systems: int | None = None,
    grouping: Grouping = "item",
) -> KendallLikeResult:
    """WMT DARR Kendall-like correlation from raw human scores.

    ``gold`` holds raw (not standardised) human scores, ``None``/``NaN`` where a translation was not
    judged; ``metric`` the metric's scores, parallel to it (system-major, see ``assay.stats``).
    Pairs are formed within each group: by default each item (translations of the same source
    segment by different systems), as WMT does. ``grouping="none"`` pairs every entry with every
    other.
    """
    _check_policy(metric_ties)
    if not threshold > 0:
        raise StatsInputError(f"threshold must be positive (got {threshold}); WMT uses 25 on the 0-100 scale")
    systems = infer_num_systems(gold, num_systems)
    gold_vec, metric_vec = paired_vectors(gold, metric)
    concordant = discordant = ties = n_groups = 0
    for group_gold, group_metric in split_groups(gold_vec, [metric_vec], num_systems=systems, grouping=grouping):
        c, d, t = _count_pairs(group_gold, group_metric, threshold)
        concordant, discordant, ties = concordant + c, discordant + d, ties + t
        n_groups += (c + d + t) > 0
    return _result(concordant, discordant, ties, metric_ties, float(threshold), n_groups)


def kendall_like_from_pairs(
    better_metric_scores: Scores,
    worse_metric_scores: Scores,
    *,
    metric_ties: MetricTies = "discordant",
) -> KendallLikeResult:
    """Kendall-like correlation from explicit DARR pairs (as listed in WMT's ``RR-seglevel.csv``).

    Entry ``k`` of the two vectors holds the metric's score of the translation humans judged better
    and of the one they judged worse in pair ``k``; the threshold was applied when the pairs were
    made. Each pair is its own group, so ``n_groups`` counts pairs.
    """
    _check_policy(metric_ties)
    better = as_float_vector(better_metric_scores, "better-translation metric scores", allow_missing=False)
    worse = as_float_vector(worse_metric_scores, "worse-translation metric scores", allow_missing=False)
    if better.shape != worse.shape:
        raise StatsInputError(
            f"{better.size} better vs {worse.size} worse metric scores; expected one of each per pair"
        )
    concordant = int((better > worse).sum())
    ties = int((better == worse).sum())
    discordant = better.size - concordant - ties
    return _result(concordant, discordant, ties, metric_ties, None, better.size)
