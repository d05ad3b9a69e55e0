"""The public names of assay.stats are exactly those listed in __all__."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import assay.stats

EXPECTED = {
    "Correlation", "CorrelationResult", "CoverageResult", "GroupedPairwise", "Grouping", "HybridSystems",
    "KendallLikeResult", "KrippendorffAlpha", "MetricTies", "ModelSelectionResult", "PairCounts", "PairwiseResult",
    "RaterKendallResult", "RaterPairKendall", "krippendorff_alpha_interval", "pairwise_rater_kendall",
    "PermutationResult", "RankedMetric", "SignificanceClusters", "SoftPairwiseAccuracy", "StatsInputError",
    "TieCalibrationResult", "pairwise_p_values", "per_group_pairwise", "resampled_grouped_mean", "resampled_spa", "spa",
    "WilliamsResult", "acc_23", "assign_clusters", "correlate", "coverage_report",
    "grouped_statistic", "kendall_like", "kendall_like_from_pairs", "kendall_tau", "metric_ties_for_wmt_year",
    "model_selection", "pair_counts", "paired_bootstrap_p_value", "pairwise_accuracy", "pearson",
    "percentile_interval", "permutation_test", "permutation_tests", "rank_metrics", "ranking_order",
    "resample_indices", "sample_hybrid_systems", "shared_ranks", "significance_clusters", "spearman",
    "system_level_correlation",
    "system_scores", "tau_23", "tie_calibration", "williams_p_value", "williams_test",
}  # fmt: skip
#: ``__all__`` names the public modules too (tests/test_exported_members.py)
MODULES = {p.stem for p in Path(assay.stats.__file__).parent.glob("*.py") if not p.name.startswith("_")}


def test_all_lists_the_public_api() -> None:
    assert set(assay.stats.__all__) == EXPECTED | MODULES
    assert list(assay.stats.__all__) == sorted(assay.stats.__all__)
    for name in EXPECTED:
        assert getattr(assay.stats, name) is not None


def test_stats_is_pure_numpy_and_scipy() -> None:
    # Nothing heavier than numpy/scipy (and assay.errors) is imported by the statistics modules.
    allowed = {"__future__", "collections", "dataclasses", "functools", "typing", "warnings", "math", "hashlib",
               "numpy", "scipy", "assay"}
    package = Path(assay.stats.__file__).parent
    for module in package.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{module.name} imports {roots - allowed}"


def test_importing_stats_does_not_import_scipy() -> None:
    # scipy.stats takes most of a second to import; it is imported where it is used so that
    # importing assay.stats (e.g. from the CLI) stays fast.
    code = "import sys, assay.stats; print('scipy.stats' in sys.modules)"
    package_root = Path(assay.stats.__file__).parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": str(package_root)}
    )
    assert result.stdout.strip() == "False"
