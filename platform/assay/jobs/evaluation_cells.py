"""The cells of an evaluation: one correlation with its bootstrap replicates, and the resamples
they share.

A :class:`Cell` is one (group, aspect, statistic, metric) number of :mod:`assay.jobs.evaluation`
with its replicates; :class:`Resamples` draws the bootstrap resamples of a group once, so every
metric and statistic of the group is paired (the paired bootstrap test compares replicates drawn
from the same resamples).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assay.results.segment_scores import ScoredMetric
from assay.stats.bootstrap import percentile_interval, resample_indices
from assay.stats.resampled import resample_counts

FloatArray = npt.NDArray[np.float64]


@dataclass
class Cell:
    """One (group, aspect, statistic, metric) correlation with its replicates."""

    group: str
    aspect: str
    statistic: str
    scored: ScoredMetric
    value: float | None
    replicates: FloatArray
    n: int
    n_excluded: int
    item_set: str
    human: FloatArray | None = None
    """The human scores correlated (None for the ``all`` mean and DARR pairs)."""
    metric_values: FloatArray | None = None
    """The metric scores correlated, parallel to ``human``."""
    systems: list[str] | None = None
    """System level: the system of each entry of ``human``/``metric_values`` (the stored points)."""
    level: str | None = None
    """The level the cell is stored under when it is not the evaluation's (a protocol such as
    ``wmt24`` computes system- and segment-level statistics and their average in one run)."""
    paired_test: bool = True
    """Whether ``human``/``metric_values`` may feed a permutation or Williams test (False where they
    are only the points to draw, not what the statistic was computed from)."""

    def interval(self, confidence: float = 0.95) -> tuple[float | None, float | None]:
        """The percentile bootstrap interval; (None, None) when no replicate is defined."""
        low, high = percentile_interval(self.replicates, confidence)
        return (None, None) if np.isnan(low) else (low, high)

    def paired_with(self, other: Cell) -> bool:
        """Both cells correlate the same human scores on the same items (a paired test applies)."""
        return (self.paired_test and other.paired_test and self.human is not None and other.human is not None
                and self.item_set == other.item_set)


class Resamples:
    """The bootstrap resamples of each group: indices and counts, drawn once, shared by every
    metric of the group so that replicates are paired."""

    def __init__(self, seed: int, n_resamples: int) -> None:
        self.seed, self.n_resamples = seed, n_resamples
        self._indices: dict[tuple[str, int], npt.NDArray[np.intp]] = {}
        self._counts: dict[tuple[str, int], FloatArray] = {}

    def indices(self, stream: str, size: int) -> npt.NDArray[np.intp]:
        """``(n_resamples, size)`` drawn row indices of ``stream``."""
        key = (stream, size)
        if key not in self._indices:
            self._indices[key] = resample_indices(self.seed, stream, self.n_resamples, size)
        return self._indices[key]

    def counts(self, stream: str, size: int) -> FloatArray:
        """``(n_resamples, size)``: how often each row is drawn in each resample of ``stream``."""
        key = (stream, size)
        if key not in self._counts:
            self._counts[key] = resample_counts(self.indices(stream, size), size)
        return self._counts[key]


def item_set_digest(values: Sequence[str]) -> str:
    """The ``item_set`` of a correlation, a digest of the items it was computed on: the first 16 hex
    digits of sha256 over the sorted values (order-free)."""
    return hashlib.sha256("\n".join(sorted(values)).encode()).hexdigest()[:16]


def group_means(cells: list[Cell], *, min_groups: int = 2) -> list[Cell]:
    """Group ``all``: the plain mean over groups (the "avg" of the WMT and BLEURT tables), its
    replicates the mean of the paired group replicates. Only (aspect, statistic, metric) slots
    with at least ``min_groups`` groups get one (a protocol whose headline is the mean over
    language pairs asks for it with one pair too); the mean keeps the cells' ``level``."""
    means = []
    keyed: dict[tuple[str, str, str], list[Cell]] = {}
    for c in cells:
        keyed.setdefault((c.aspect, c.statistic, c.scored.signature), []).append(c)
    for (aspect, statistic, _), group_cells in sorted(keyed.items()):
        values = [c.value for c in group_cells]
        if len(group_cells) < min_groups or any(v is None for v in values):
            continue
        means.append(Cell(
            "all", aspect, statistic, group_cells[0].scored, float(np.mean([v for v in values if v is not None])),
            np.mean(np.vstack([c.replicates for c in group_cells]), axis=0), sum(c.n for c in group_cells),
            sum(c.n_excluded for c in group_cells), item_set_digest([c.item_set for c in group_cells]),
            level=group_cells[0].level))
    return means
