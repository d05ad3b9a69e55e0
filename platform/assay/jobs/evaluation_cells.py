"""The cells of an evaluation: one correlation with its bootstrap replicates, and the resamples
they share.

A :class:`Cell` is one (group, aspect, statistic, metric) number of :mod:`assay.jobs.evaluation`
(and of the protocols, :mod:`assay.jobs.protocol_wmt23`, :mod:`assay.jobs.protocol_wmt24`) with its
replicates, the unit its ``n`` counts, and whether it is degenerate (:func:`degenerate_reason`);
:class:`Resamples` draws the bootstrap resamples of a group once, so every metric and statistic of
the group is paired (the paired bootstrap test compares replicates drawn from the same resamples).
Nothing here reads or writes a store: the kernels that make cells (:mod:`assay.jobs.evaluation_levels`
and the protocols) take arrays that :mod:`assay.jobs.evaluation_inputs` loaded.
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

UNITS = ("segments", "items", "systems", "pairs")
"""What a correlation's ``n`` counts: rated segments (one system's output for one item), items
(source segments, each a group of systems' outputs), systems, or relative-ranking pairs (DARR)."""


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
    unit: str = "segments"
    """What ``n`` counts (:data:`UNITS`): the segments, items, systems or pairs the value is over."""
    epsilon: float | None = None
    """Tie-calibrated statistics (acc-t): the calibrated metric tie threshold; None otherwise."""
    degenerate: str | None = None
    """Why the value cannot separate metrics (:func:`degenerate_reason`); None when it can. A
    degenerate value is stored and shown, but not ranked, clustered or tested."""

    @property
    def ranked(self) -> bool:
        """The value is defined and not degenerate: it takes part in ranks, clusters and tests."""
        return self.value is not None and self.degenerate is None

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


def widest_spread(metric: FloatArray, human: FloatArray, *, by_item: bool = False) -> float | None:
    """The largest spread (max - min) of the metric's scores within a compared group, over the
    entries with a human score: the whole vector, or with ``by_item`` each column of a (systems x
    items) matrix; None when no group has two such entries."""
    m = np.where(np.isnan(human), np.nan, metric)
    columns = m if by_item else m.reshape(-1, 1)
    enough = (~np.isnan(columns)).sum(axis=0) >= 2
    if not enough.any():
        return None
    kept = columns[:, enough]
    return float(np.max(np.nanmax(kept, axis=0) - np.nanmin(kept, axis=0)))


def degenerate_reason(spread: float | None, *, within: str | None = None, epsilon: float | None = None
                      ) -> str | None:
    """Why a statistic cannot separate metrics, or None.

    ``spread`` is the largest difference between two metric scores the statistic compares
    (:func:`widest_spread`; None: nothing compared), ``within`` names the group a grouped statistic
    compares within ("item"; None for one vector). Two cases mean nothing:

    * the metric's scores are constant within every group: every pair the statistic compares is a
      metric tie, so the value is the same for any constant metric (a correlation is undefined; a
      pairwise accuracy with ties, acc_23, is the humans' tie rate);
    * a tie-calibrated statistic (acc-t, Deutsch et al. 2023) whose calibrated threshold
      ``epsilon`` is at least every compared metric difference: calibration turned every pair into
      a tie, the same case (on ``mqm-ted-ende`` it happens to sentBLEU and chrF alike, both at the
      humans' tie rate 0.4803, REFERENCE_NUMBERS.md "WMT24 protocol defaults").
    """
    if spread is None:
        return None
    where = f" within every {within}" if within else ""
    if spread == 0:
        return f"the metric's scores are constant{where}: every pair is a metric tie"
    if epsilon is not None and spread <= epsilon:
        return (f"the calibrated tie threshold epsilon={epsilon:.6g} makes every pair{where} a metric tie: "
                "the value is the humans' tie rate, the same for any metric")
    return None


def item_set_digest(values: Sequence[str]) -> str:
    """The ``item_set`` of a correlation, a digest of the items it was computed on: the first 16 hex
    digits of sha256 over the sorted values (order-free)."""
    return hashlib.sha256("\n".join(sorted(values)).encode()).hexdigest()[:16]


def group_means(cells: list[Cell], *, min_groups: int = 2) -> list[Cell]:
    """Group ``all``: the plain mean over groups (the "avg" of the WMT and BLEURT tables), its
    replicates the mean of the paired group replicates. Only (aspect, statistic, metric) slots
    with at least ``min_groups`` groups get one (a protocol whose headline is the mean over
    language pairs asks for it with one pair too); the mean keeps the cells' ``level`` and ``unit``
    (its ``n`` is the sum over groups), and is degenerate where any group's value is."""
    means = []
    keyed: dict[tuple[str, str, str], list[Cell]] = {}
    for c in cells:
        keyed.setdefault((c.aspect, c.statistic, c.scored.signature), []).append(c)
    for (aspect, statistic, _), group_cells in sorted(keyed.items()):
        values = [c.value for c in group_cells]
        if len(group_cells) < min_groups or any(v is None for v in values):
            continue
        degenerate = [c for c in group_cells if c.degenerate is not None]
        means.append(Cell(
            "all", aspect, statistic, group_cells[0].scored, float(np.mean([v for v in values if v is not None])),
            np.mean(np.vstack([c.replicates for c in group_cells]), axis=0), sum(c.n for c in group_cells),
            sum(c.n_excluded for c in group_cells), item_set_digest([c.item_set for c in group_cells]),
            level=group_cells[0].level, unit=group_cells[0].unit,
            degenerate=("degenerate in " + "; ".join(f"{c.group} ({c.degenerate})" for c in degenerate)
                        if degenerate else None)))
    return means

