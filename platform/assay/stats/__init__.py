"""Meta-evaluation statistics: correlations with humans, significance, clusters (pure; scipy).

Scores come as parallel gold (human) and metric vectors. Segment-level scores are laid out as in
google-research/mt-metrics-eval: a flat *system-major* vector (entry ``s * num_items + i`` is
system ``s`` on item ``i``) with ``num_systems`` given, or a ``(num_systems, num_items)`` matrix.
A missing gold score (``None``/``NaN``) drops its entry; metric scores must be defined (except in
``coverage_report``, whose estimators may abstain). ``grouping`` says which vectors a statistic
is computed on: ``"none"`` (all entries), ``"item"`` (per item across systems, then averaged) or
``"system"`` (per system across items, then averaged).

Modules, one concept each: ``correlation`` (Pearson, Spearman, Kendall b/c), ``kendall_like``
(WMT DARR), ``pairwise`` (tau_23, acc_23, tie calibration, pairwise accuracy), ``significance``
(Williams, PERM-BOTH permutation), ``bootstrap`` (resampling streams, percentile intervals, the
paired bootstrap test), ``resampled`` (every replicate at once from resample counts), ``clusters``
(significance clusters), ``model_selection`` (hybrid systems, Hits@1/MRR), ``coverage``
(abstaining estimators), ``system_level`` (system scores and their correlation), ``spa`` (soft
pairwise accuracy, WMT24), ``grouped_acc`` (per-item acc_23 at one threshold and its bootstrap),
``agreement`` (inter-rater agreement: pairwise Kendall tau, Krippendorff's alpha), ``permuted``
(rank statistics of every PERM-BOTH permutation at once), ``levels`` (the statistics each level
accepts).

``__all__`` names the package's public modules and the names re-exported here.
"""

from assay.errors import StatsInputError
from assay.stats._groups import Grouping
from assay.stats.agreement import (
    KrippendorffAlpha,
    RaterKendallResult,
    RaterPairKendall,
    krippendorff_alpha_interval,
    pairwise_rater_kendall,
)
from assay.stats.bootstrap import paired_bootstrap_p_value, percentile_interval, resample_indices
from assay.stats.clusters import (
    RankedMetric,
    SignificanceClusters,
    assign_clusters,
    rank_metrics,
    ranking_order,
    shared_ranks,
    significance_clusters,
)
from assay.stats.correlation import (
    Correlation,
    CorrelationResult,
    correlate,
    kendall_tau,
    pearson,
    spearman,
)
from assay.stats.coverage import CoverageResult, coverage_report
from assay.stats.grouped_acc import GroupedPairwise, per_group_pairwise, resampled_grouped_mean
from assay.stats.kendall_like import (
    KendallLikeResult,
    MetricTies,
    kendall_like,
    kendall_like_from_pairs,
    metric_ties_for_wmt_year,
)
from assay.stats.model_selection import (
    HybridSystems,
    ModelSelectionResult,
    model_selection,
    sample_hybrid_systems,
)
from assay.stats.pairwise import (
    PairCounts,
    PairwiseResult,
    TieCalibrationResult,
    acc_23,
    pair_counts,
    pairwise_accuracy,
    tau_23,
    tie_calibration,
)
from assay.stats.significance import (
    PermutationResult,
    WilliamsResult,
    grouped_statistic,
    permutation_test,
    permutation_tests,
    williams_p_value,
    williams_test,
)
from assay.stats.spa import SoftPairwiseAccuracy, pairwise_p_values, resampled_spa, spa
from assay.stats.system_level import system_level_correlation, system_scores

__all__ = [
    "Correlation",
    "CorrelationResult",
    "CoverageResult",
    "GroupedPairwise",
    "Grouping",
    "HybridSystems",
    "KendallLikeResult",
    "KrippendorffAlpha",
    "MetricTies",
    "ModelSelectionResult",
    "PairCounts",
    "PairwiseResult",
    "PermutationResult",
    "RankedMetric",
    "RaterKendallResult",
    "RaterPairKendall",
    "SignificanceClusters",
    "SoftPairwiseAccuracy",
    "StatsInputError",
    "TieCalibrationResult",
    "WilliamsResult",
    "acc_23",
    "agreement",
    "assign_clusters",
    "bootstrap",
    "clusters",
    "correlate",
    "correlation",
    "coverage",
    "coverage_report",
    "grouped_acc",
    "grouped_statistic",
    "kendall_like",
    "kendall_like_from_pairs",
    "kendall_tau",
    "krippendorff_alpha_interval",
    "levels",
    "metric_ties_for_wmt_year",
    "model_selection",
    "pair_counts",
    "paired_bootstrap_p_value",
    "pairwise",
    "pairwise_accuracy",
    "pairwise_p_values",
    "pairwise_rater_kendall",
    "pearson",
    "per_group_pairwise",
    "percentile_interval",
    "permutation_test",
    "permutation_tests",
    "permuted",
    "rank_metrics",
    "ranking_order",
    "resample_indices",
    "resampled",
    "resampled_grouped_mean",
    "resampled_spa",
    "sample_hybrid_systems",
    "shared_ranks",
    "significance",
    "significance_clusters",
    "spa",
    "spearman",
    "system_level",
    "system_level_correlation",
    "system_scores",
    "tau_23",
    "tie_calibration",
    "williams_p_value",
    "williams_test",
]
