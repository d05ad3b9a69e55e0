"""The bootstrap of the meta-evaluation: named resampling streams, percentile intervals, paired tests.

Resampling follows Efron's nonparametric bootstrap with percentile intervals, as used for
segment-level correlations by the WMT metrics tasks and the BERTScore paper (Graham and Baldwin
2014; Koehn 2004 for MT). Rows are drawn with replacement, the same rows for every metric, so the
pairing (gold with metric, metric with metric) is kept. The draws of one group come from one named
stream (:func:`resample_indices`: ``numpy.random.default_rng([seed, salt])``, the salt from the
stream's name), so every metric and statistic of the group sees the same resamples and each group
its own, reproducibly from the recorded seed.

The statistic is recomputed on each resample from the stored scores, nothing is re-scored: every
replicate at once from the resample counts (:class:`assay.stats.resampled.ResampledPairs`,
:func:`assay.stats.resampled.resample_counts`). :func:`percentile_interval` turns replicates into
an interval and :func:`paired_bootstrap_p_value` compares two metrics' paired replicates. This is
the one bootstrap: :mod:`assay.jobs.evaluation` composes exactly these functions.
"""

from __future__ import annotations

import hashlib

import numpy as np
import numpy.typing as npt

from assay.stats._groups import require_seed


def percentile_interval(replicates: npt.ArrayLike, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the defined (non-NaN) replicates; NaN, NaN when none is defined."""
    values = np.asarray(replicates, dtype=np.float64)
    valid = values[~np.isnan(values)]
    if not valid.size:
        return float("nan"), float("nan")
    tail = round(50 * (1 - confidence), 10)  # 2.5 exactly for 95%, not 2.5000000000000022
    low, high = np.percentile(valid, [tail, 100 - tail])
    return float(low), float(high)


def paired_bootstrap_p_value(better: npt.ArrayLike, worse: npt.ArrayLike) -> float:
    """One-sided paired bootstrap test (Koehn 2004): the share of paired replicates in which the
    metric with the higher point estimate is not better. Replicates must come from the same
    resamples (the same index matrix) for both metrics."""
    diff = np.asarray(better, dtype=np.float64) - np.asarray(worse, dtype=np.float64)
    diff = diff[~np.isnan(diff)]
    return float(np.mean(diff <= 0)) if diff.size else 1.0


def resample_indices(seed: int, stream: str, n_resamples: int, size: int) -> npt.NDArray[np.intp]:
    """The ``(n_resamples, size)`` row indices of one named resampling stream.

    The generator is seeded with ``[seed, salt]``, the salt taken from ``stream`` (e.g. the group
    and aspect), so every metric evaluated on a group sees the same resamples (paired replicates)
    and each group its own, reproducibly.
    """
    salt = int(hashlib.sha256(stream.encode()).hexdigest()[:8], 16)
    return np.random.default_rng([require_seed(seed), salt]).integers(0, size, size=(n_resamples, size))
