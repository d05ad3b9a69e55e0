"""System-level correlation: one score per system, human against metric.

A system's metric score is either the mean of its segment scores (how BERTScore and BLEURT are
turned into system scores, Zhang et al. 2020 section 4) or a corpus-level score the metric computes
itself (corpus BLEU is not the mean of sentence BLEU, nor corpus chrF the mean of segment chrF).
The system scores are then correlated with the human system scores (WMT DA z-score means) over
systems, Pearson's r by default, the official WMT17-19 system-level statistic. The sign is kept:
the BERTScore paper prints absolute values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from assay.errors import StatsInputError
from assay.stats._groups import (
    FloatArray,
    Scores,
    as_array_like,
    as_float_vector,
    infer_num_systems,
)
from assay.stats.correlation import CorrelationResult, CorrelationStatistic, correlate


def system_scores(segment_scores: Scores, *, num_systems: int | None = None) -> FloatArray:
    """Mean segment score of each system from a ``(num_systems, num_items)`` matrix.

    A flat system-major vector needs ``num_systems``. Every segment score must be defined.
    """
    systems = infer_num_systems(segment_scores, num_systems)
    vector = as_float_vector(segment_scores, "segment scores", allow_missing=False)
    if vector.size == 0 or vector.size % systems:
        raise StatsInputError(f"{vector.size} segment scores do not form {systems} systems x items (system-major)")
    return vector.reshape(systems, -1).mean(axis=1)


def system_level_correlation(
    human_system_scores: Scores,
    *,
    segment_scores: Scores | None = None,
    corpus_scores: Scores | None = None,
    statistic: CorrelationStatistic = "pearson",
) -> CorrelationResult:
    """Correlate human system scores with the metric's system scores.

    Give exactly one of ``segment_scores`` (a ``(num_systems, num_items)`` matrix whose row means
    are the system scores) or ``corpus_scores`` (one score per system). Systems without a human
    score (``None``/``NaN``) are left out.
    """
    human = as_float_vector(human_system_scores, "human system scores", allow_missing=True)
    if segment_scores is not None and corpus_scores is None:
        if np.ndim(as_array_like(segment_scores)) != 2:
            raise StatsInputError("segment_scores must be a (num_systems, num_items) matrix")
        metric = system_scores(segment_scores)
    elif corpus_scores is not None and segment_scores is None:
        metric = as_float_vector(corpus_scores, "corpus scores", allow_missing=False)
    else:
        raise StatsInputError("give exactly one of segment_scores (systems x items) or corpus_scores (per system)")
    if metric.shape != human.shape:
        raise StatsInputError(f"{human.size} human vs {metric.size} metric system scores; expected one per system")
    return correlate(human, metric, statistic)


def resampled_system_scores(segment_scores: Scores, counts: FloatArray) -> FloatArray:
    """Mean segment score of each system in each bootstrap resample of the items.

    ``segment_scores`` is ``(num_systems, num_items)``; ``counts`` is ``(resamples, num_items)``,
    how often each item was drawn (:func:`assay.stats.resampled.resample_counts`). Returns
    ``(resamples, num_systems)``. Resampling items, not systems, keeps the systems that are ranked
    fixed while their scores vary with the test set, as WMT's system-level bootstrap does.
    """
    matrix = np.asarray(segment_scores, dtype=np.float64)
    if matrix.ndim != 2 or counts.ndim != 2 or counts.shape[1] != matrix.shape[1]:
        raise StatsInputError(f"segment scores {matrix.shape} and counts {counts.shape} must share the item axis")
    return counts @ matrix.T / counts.sum(axis=1, keepdims=True)


def resampled_corpus_scores(statistics: Scores, counts: FloatArray,
                            corpus_score: Callable[[FloatArray], float]) -> FloatArray:
    """Corpus score of each system in each bootstrap resample of the items, from per-segment
    sufficient statistics ``(num_systems, num_items, k)`` summed with the resample's counts
    (sacrebleu's design: score once, aggregate many times; corpus BLEU, Papineni et al. 2002, and
    corpus chrF, Popović 2015, are not means of segment scores). ``corpus_score`` is the metric's own
    (:meth:`assay.metrics.base.Metric.corpus_scorer`). Returns ``(resamples, num_systems)``."""
    stats = np.asarray(statistics, dtype=np.float64)
    if stats.ndim != 3 or counts.ndim != 2 or counts.shape[1] != stats.shape[1]:
        raise StatsInputError(f"statistics {stats.shape} and counts {counts.shape} must share the item axis")
    systems, items, k = stats.shape
    # (R x items) @ (items x systems*k): one matrix product; the sums are of integer counts, exact
    summed = (counts @ stats.transpose(1, 0, 2).reshape(items, systems * k)).reshape(-1, systems, k)
    return np.array([[corpus_score(cell) for cell in row] for row in summed])
