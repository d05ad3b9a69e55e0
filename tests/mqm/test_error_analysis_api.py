"""The public names of MQM error analysis, and the modules stay numpy-only (no pandas, scipy, torch)."""

from __future__ import annotations

import ast
from pathlib import Path

import assay.mqm

ERROR_ANALYSIS = {
    "BootstrapPlan", "CellComparison", "CellSensitivity", "Disagreement", "DisagreementSide", "ErrorCell",
    "ErrorFeatures", "ErrorRecord", "Estimate", "ItemDisagreements", "RatedOutputs", "SensitivityComparison",
    "SensitivityReport", "SpanMark", "WorstDisagreements", "blind_spots", "compare_sensitivity", "error_features",
    "error_sensitivity", "item_disagreements", "mark_events", "span_marks", "worst_disagreements",
}  # fmt: skip
MODULES = ("rated_outputs", "error_cells", "within_item_regression", "sensitivity", "sensitivity_comparison",
           "disagreements", "span_marks")


def test_error_analysis_names_are_public() -> None:
    assert set(assay.mqm.__all__) >= ERROR_ANALYSIS
    for name in assay.mqm.__all__:
        assert getattr(assay.mqm, name) is not None


def test_error_analysis_imports_numpy_and_assay_only() -> None:
    allowed = {"__future__", "collections", "dataclasses", "typing", "math", "numpy", "assay"}
    package = Path(assay.mqm.__file__).parent
    for module in MODULES:
        for node in ast.walk(ast.parse((package / f"{module}.py").read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{module}: {roots - allowed}"
