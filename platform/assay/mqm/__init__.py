"""MQM (Multidimensional Quality Metrics) human judgments: error spans, weights, segment scores.

Pure Python (numpy and pyarrow at most), so an ingest format can build on it:

* :mod:`assay.mqm.spans`: ``<v>...</v>`` error spans marked inline in the rated text;
* :mod:`assay.mqm.weights`: :class:`WeightingScheme`, the most-specific-match rule of
  mt-metrics-eval ``converters/score_mqm.py`` and its default weights (``mtme``);
* :mod:`assay.mqm.scores`: segment MQM, per rater and averaged over raters, negated.
"""

from assay.mqm.scores import ErrorRow, SegmentScores, segment_scores
from assay.mqm.spans import MarkedText, parse_span
from assay.mqm.weights import MTME, WeightingScheme, named, scheme

__all__ = ["MTME", "ErrorRow", "MarkedText", "SegmentScores", "WeightingScheme", "named",
           "parse_span", "scheme", "segment_scores"]
