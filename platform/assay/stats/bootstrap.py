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

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assay.stats._groups import Scores, StatsInputError, require_seed


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


def bootstrap_ci(
    statistic: Callable[..., float],
    *samples: Scores,
    seed: int,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    clusters: Scores | None = None,
) -> BootstrapResult:
    """Percentile bootstrap interval of ``statistic(*samples)``.

    ``samples`` are arrays with the same number of rows (axis 0), e.g. ``gold, metric``;
    ``statistic`` receives the resampled arrays in the same order and returns a float, e.g.
    ``lambda g, m: scipy.stats.kendalltau(g, m).statistic``. ``clusters`` (one label per row)
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
    replicates = np.empty(n_resamples)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a constant resample: the statistic is NaN, counted below
        value = float(statistic(*arrays))
        for k in range(n_resamples):
            if members is None:
                rows = rng.integers(0, size, size=size)
            else:
                drawn = rng.integers(0, len(members), size=len(members))
                rows = np.concatenate([members[c] for c in drawn])
            replicates[k] = statistic(*(array[rows] for array in arrays))
    valid = replicates[~np.isnan(replicates)]
    if valid.size:
        tail = (1 - confidence) / 2 * 100
        ci_low, ci_high = (float(v) for v in np.percentile(valid, [tail, 100 - tail]))
    else:
        ci_low = ci_high = float("nan")
    return BootstrapResult(
        value=value,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        n_resamples=n_resamples,
        n_valid=int(valid.size),
        seed=seed,
        resampling_unit="row" if members is None else "cluster",
    )
