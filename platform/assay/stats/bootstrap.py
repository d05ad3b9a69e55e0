"""Bootstrap confidence intervals for any statistic of paired samples.

Resampling follows Efron's nonparametric bootstrap with percentile intervals, as used for
segment-level Kendall's tau by the WMT metrics tasks and the BERTScore paper (Graham and Baldwin
2014; Koehn 2004 for MT). Rows of the samples are drawn with replacement, the same rows from every
sample, so pairing (gold with metric, metric with metric) is kept. With ``clusters`` whole clusters
are drawn instead (e.g. every translation of a resampled source segment), which respects the
dependence between entries of one item.

The statistic is recomputed on each resample from the stored scores: nothing is re-scored. Each
result records the seed of the ``numpy.random.Generator`` that drew the resamples, so an interval
can be reproduced exactly.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assay.config import DEFAULT_RESAMPLES
from assay.stats._groups import Scores, StatsInputError, require_seed
from assay.stats.resampled import resampled_statistic, scalar_statistic


@dataclass(frozen=True)
class BootstrapResult:
    """A statistic with its bootstrap percentile confidence interval."""

    value: float
    """The statistic on the original samples."""
    ci_low: float
    ci_high: float
    confidence: float
    """Coverage of the interval, e.g. 0.95."""
    n_resamples: int
    n_valid: int
    """Resamples whose statistic was defined (not NaN); the interval uses only these."""
    seed: int
    method: str = "percentile"
    resampling_unit: str = "row"
    """``"row"``, or ``"cluster"`` when whole clusters were drawn."""


def _cluster_members(clusters: Scores, size: int) -> list[npt.NDArray[np.intp]]:
    labels = np.asarray(clusters)
    if labels.shape != (size,):
        raise StatsInputError(f"clusters has shape {labels.shape}; expected one label per row ({size})")
    _, inverse = np.unique(labels, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    boundaries = np.flatnonzero(np.diff(inverse[order])) + 1
    return np.split(order, boundaries)


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


def bootstrap_ci(
    statistic: Callable[..., float] | str,
    *samples: Scores,
    seed: int,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    clusters: Scores | None = None,
) -> BootstrapResult:
    """Percentile bootstrap interval of ``statistic(*samples)``.

    ``samples`` are arrays with the same number of rows (axis 0), e.g. ``gold, metric``;
    ``statistic`` receives the resampled arrays in the same order and returns a float, e.g.
    ``lambda g, m: scipy.stats.kendalltau(g, m).statistic``. A statistic named by a string
    (``"pearson"``, ``"kendall"``, ... see :mod:`assay.stats.resampled`) is computed for all
    resamples at once with numpy, from the same draws. ``clusters`` (one label per row)
    switches to drawing whole clusters with replacement. Deterministic given ``seed``.
    """
    seed = require_seed(seed)
    if not samples:
        raise StatsInputError("bootstrap_ci needs at least one sample to resample")
    if not 0 < confidence < 1:
        raise StatsInputError(f"confidence must lie strictly between 0 and 1 (got {confidence})")
    if n_resamples < 1:
        raise StatsInputError(f"n_resamples must be at least 1 (got {n_resamples})")
    arrays = [np.asarray(sample, dtype=np.float64) for sample in samples]
    size = arrays[0].shape[0] if arrays[0].ndim else 0
    if size == 0 or any(array.ndim == 0 or array.shape[0] != size for array in arrays):
        shapes = ", ".join(str(array.shape) for array in arrays)
        raise StatsInputError(f"samples must be non-empty arrays with the same number of rows (got {shapes})")
    members = None if clusters is None else _cluster_members(clusters, size)

    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a constant resample: the statistic is NaN, counted below
        if isinstance(statistic, str):
            if len(arrays) != 2 or members is not None:
                raise StatsInputError(f"the named statistic {statistic!r} takes (gold, metric) rows, not clusters")
            value = scalar_statistic(statistic)(arrays[0], arrays[1])
            index = rng.integers(0, size, size=(n_resamples, size))
            replicates = resampled_statistic(statistic, arrays[0], arrays[1], index)
        else:
            value = float(statistic(*arrays))
            replicates = np.empty(n_resamples)
            for k in range(n_resamples):
                if members is None:
                    rows = rng.integers(0, size, size=size)
                else:
                    drawn = rng.integers(0, len(members), size=len(members))
                    rows = np.concatenate([members[c] for c in drawn])
                replicates[k] = statistic(*(array[rows] for array in arrays))
    ci_low, ci_high = percentile_interval(replicates, confidence)
    return BootstrapResult(
        value=value,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        n_resamples=n_resamples,
        n_valid=int((~np.isnan(replicates)).sum()),
        seed=seed,
        resampling_unit="row" if members is None else "cluster",
    )
