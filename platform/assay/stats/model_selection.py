"""Model selection with hybrid systems (BERTScore, Zhang et al. 2020, section 4 and appendix F.2).

*Hybrid super-sampling* (Graham and Liu 2016) makes many more systems than a shared task has: a
hybrid system takes, for every segment, the output of one real system picked uniformly at random.
Its human score is the mean of the human scores of the picked outputs and its metric score the
mean of their metric scores (the system score of a segment-averaged metric; corpus-level metrics
such as BLEU must be re-scored on the hybrid's outputs instead).

*Model selection* then asks whether a metric picks the best system: draw ``n_candidates`` of the
hybrids without replacement, let the metric pick its top one, and compare with the humans:

Hits@1
    share of draws where the metric's pick is a human-best system;
MRR
    mean of ``1 / rank``, the rank of the metric's pick in the human ranking (1 = best; systems
    with equal human scores share the better rank);
Diff
    mean of ``human(best) - human(metric's pick)``, the absolute human-score gap.

The paper uses 10K hybrids, 100 candidates and 100K draws (the defaults here). Both steps draw
from a seeded ``numpy.random.Generator`` and record the seed. When several candidates share the
metric's top score the pick is the first of them in the (random) draw order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assay.errors import StatsInputError
from assay.stats._groups import (
    FloatArray,
    Scores,
    as_float_vector,
    infer_num_systems,
    require_seed,
)

_HYBRID_CHUNK_ELEMENTS = 2_000_000  # picks drawn at once (hybrids x segments)
_TRIAL_CHUNK = 10_000  # model-selection draws evaluated at once


@dataclass(frozen=True, eq=False)
class HybridSystems:
    """Human and metric system scores of super-sampled hybrid systems."""

    human: FloatArray
    """One human score per hybrid: mean over its picked segments that have a human score."""
    metric: FloatArray
    """One metric score per hybrid: mean over all its picked segments."""
    num_real_systems: int
    num_items: int
    seed: int


@dataclass(frozen=True)
class ModelSelectionResult:
    hits_at_1: float
    mrr: float
    mean_abs_human_diff: float
    """Mean human-score gap between the human-best candidate and the metric's pick (>= 0)."""
    n_trials: int
    n_candidates: int
    seed: int


def _score_matrix(scores: Scores, name: str, num_systems: int, *, allow_missing: bool) -> FloatArray:
    vector = as_float_vector(scores, name, allow_missing=allow_missing)
    if num_systems < 2 or vector.size % num_systems:
        raise StatsInputError(
            f"{name}: {vector.size} scores do not form {num_systems} systems x items "
            "(hybrids need at least 2 real systems, scores system-major)"
        )
    return vector.reshape(num_systems, -1)


def sample_hybrid_systems(
    human: Scores,
    metric: Scores,
    *,
    num_systems: int | None = None,
    n_hybrid: int = 10_000,
    seed: int,
) -> HybridSystems:
    """Super-sample ``n_hybrid`` hybrid systems from segment-level scores.

    ``human`` and ``metric`` are ``(num_systems, num_items)`` matrices or flat system-major
    vectors with ``num_systems`` given. Human scores may be missing (``None``/``NaN``); a hybrid
    whose picks have no human score at all is an error (too sparse a matrix for this protocol).
    """
    seed = require_seed(seed)
    if n_hybrid < 1:
        raise StatsInputError(f"n_hybrid must be at least 1 (got {n_hybrid})")
    systems = infer_num_systems(human, num_systems)
    human_matrix = _score_matrix(human, "human scores", systems, allow_missing=True)
    metric_matrix = _score_matrix(metric, "metric scores", systems, allow_missing=False)
    if human_matrix.shape != metric_matrix.shape:
        raise StatsInputError(
            f"human scores {human_matrix.shape} and metric scores {metric_matrix.shape} are not parallel"
        )
    num_items = human_matrix.shape[1]
    items = np.arange(num_items)
    rng = np.random.default_rng(seed)
    hybrid_human = np.empty(n_hybrid)
    hybrid_metric = np.empty(n_hybrid)
    chunk = max(1, _HYBRID_CHUNK_ELEMENTS // num_items)
    for begin in range(0, n_hybrid, chunk):
        end = min(n_hybrid, begin + chunk)
        picks = rng.integers(0, systems, size=(end - begin, num_items))
        picked_human = human_matrix[picks, items]
        judged = ~np.isnan(picked_human)
        counts = judged.sum(axis=1)
        if (counts == 0).any():
            raise StatsInputError(
                "a hybrid system picked no segment with a human score; the human score matrix is too "
                "sparse for hybrid super-sampling"
            )
        hybrid_human[begin:end] = np.where(judged, picked_human, 0.0).sum(axis=1) / counts
        hybrid_metric[begin:end] = metric_matrix[picks, items].mean(axis=1)
    return HybridSystems(hybrid_human, hybrid_metric, systems, num_items, seed)


def model_selection(
    human_system_scores: Scores,
    metric_system_scores: Scores,
    *,
    n_candidates: int = 100,
    n_trials: int = 100_000,
    seed: int,
) -> ModelSelectionResult:
    """Hits@1, MRR and mean human-score gap of the metric's top pick over random candidate sets.

    The scores are one per system (e.g. ``HybridSystems.human`` and ``.metric``), all defined.
    """
    seed = require_seed(seed)
    human = as_float_vector(human_system_scores, "human system scores", allow_missing=False)
    metric = as_float_vector(metric_system_scores, "metric system scores", allow_missing=False)
    if human.shape != metric.shape:
        raise StatsInputError(f"{human.size} human vs {metric.size} metric system scores; expected one each")
    if not 1 <= n_candidates <= human.size:
        raise StatsInputError(f"n_candidates must lie in 1..{human.size} (the number of systems), got {n_candidates}")
    if n_trials < 1:
        raise StatsInputError(f"n_trials must be at least 1 (got {n_trials})")
    rng = np.random.default_rng(seed)
    hits = reciprocal_ranks = gaps = 0.0
    for begin in range(0, n_trials, _TRIAL_CHUNK):
        size = min(_TRIAL_CHUNK, n_trials - begin)
        candidates = np.stack([rng.choice(human.size, n_candidates, replace=False) for _ in range(size)])
        candidate_human = human[candidates]
        pick = np.argmax(metric[candidates], axis=1)
        picked_human = candidate_human[np.arange(size), pick]
        rank = 1 + (candidate_human > picked_human[:, np.newaxis]).sum(axis=1)
        hits += float(np.sum(rank == 1))
        reciprocal_ranks += float(np.sum(1.0 / rank))
        gaps += float(np.sum(candidate_human.max(axis=1) - picked_human))
    return ModelSelectionResult(
        hits_at_1=hits / n_trials,
        mrr=reciprocal_ranks / n_trials,
        mean_abs_human_diff=gaps / n_trials,
        n_trials=n_trials,
        n_candidates=n_candidates,
        seed=seed,
    )
