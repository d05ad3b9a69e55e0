"""MQM (Multidimensional Quality Metrics) human judgments: error spans, weights, segment scores.

Pure Python (numpy and pyarrow at most), so an ingest format can build on it:

* :mod:`assay.mqm.spans`: ``<v>...</v>`` error spans marked inline in the rated text;
* :mod:`assay.mqm.weights`: :class:`WeightingScheme`, the most-specific-match rule of
  mt-metrics-eval ``converters/score_mqm.py`` and its default weights (``mtme``);
* :mod:`assay.mqm.scores`: segment MQM, per rater and averaged over raters, negated.

Error analysis ("what does this metric miss?"), pure computation on arrays the caller hands in:

* :mod:`assay.mqm.rated_outputs`: :class:`RatedOutputs`, the input (outputs, scores, error records);
* :mod:`assay.mqm.error_cells`: the cells (category, or category and severity), rare ones folded;
* :mod:`assay.mqm.within_item_regression`: the within-item least-squares fit from per-item statistics;
* :mod:`assay.mqm.sensitivity`: the drop per error of each cell, metric against humans, and the
  ranked blind spots;
* :mod:`assay.mqm.sensitivity_comparison`: a checkpoint's drops against its parent's, paired;
* :mod:`assay.mqm.disagreements`: the pairs humans clearly order one way and the metric the other;
* :mod:`assay.mqm.span_marks`: the raters' spans as properly nested marks on a text.

``__all__`` names the package's public modules and the names re-exported here.
"""

from assay.mqm.disagreements import (
    Disagreement,
    DisagreementSide,
    ItemDisagreements,
    WorstDisagreements,
    item_disagreements,
    worst_disagreements,
)
from assay.mqm.error_cells import ErrorCell, ErrorFeatures, error_features
from assay.mqm.rated_outputs import ErrorRecord, RatedOutputs
from assay.mqm.scores import ErrorRow, SegmentScores, segment_scores
from assay.mqm.sensitivity import (
    BootstrapPlan,
    CellSensitivity,
    Estimate,
    SensitivityReport,
    blind_spots,
    error_sensitivity,
)
from assay.mqm.sensitivity_comparison import CellComparison, SensitivityComparison, compare_sensitivity
from assay.mqm.span_marks import SpanMark, mark_events, span_marks
from assay.mqm.spans import MarkedText, parse_span
from assay.mqm.weights import MTME, WeightingScheme, named, scheme

__all__ = [
    "MTME", "BootstrapPlan", "CellComparison", "CellSensitivity", "Disagreement", "DisagreementSide", "ErrorCell",
    "ErrorFeatures", "ErrorRecord", "ErrorRow", "Estimate", "ItemDisagreements", "MarkedText", "RatedOutputs",
    "SegmentScores", "SensitivityComparison", "SensitivityReport", "SpanMark", "WeightingScheme", "WorstDisagreements",
    "blind_spots", "compare_sensitivity", "disagreements", "error_cells", "error_features", "error_sensitivity",
    "item_disagreements", "mark_events", "named", "parse_span", "rated_outputs", "scheme", "scores", "segment_scores",
    "sensitivity", "sensitivity_comparison", "span_marks", "spans", "weights", "within_item_regression",
    "worst_disagreements",
]
