"""The WMT24 metrics-task protocol (``assay evaluate --protocol wmt24``).

Since WMT24 the shared task ranks metrics on MQM judgments by two statistics per language pair,
averaged (google-research/mt-metrics-eval ``tasks.WMT24()``, uniform task weights):

* **system level, soft pairwise accuracy** (SPA; Thompson et al. 2024, "Improving Statistical
  Significance in Human Evaluation of Automatic Metrics via Soft Pairwise Accuracy"): for every pair
  of systems a paired permutation p-value that one is better, once from the human segment scores and
  once from the metric's, and ``1 - mean |p_human - p_metric|`` (mt-metrics-eval ``pce.py``,
  :mod:`assay.stats.spa`);
* **segment level, tie-calibrated pairwise accuracy grouped by item** (acc-t, acc_eq; Deutsch et
  al. 2023, "Ties Matter"): per source segment, the share of system pairs the metric orders (or ties)
  as the humans do, with one metric tie threshold calibrated to maximise the mean over items;
* their **mean** per language pair, and the mean over language pairs (group ``all``, stored even for
  one pair: it is the protocol's headline number).

Rows are stored as ``sys``/``spa``, ``seg``/``acc_t_item`` and ``avg``/``wmt24`` with protocol
``wmt24``. Both statistics need the complete (systems x items) matrix: items some candidate system
did not translate, or that lack a human score, are left out (their rated segments counted in
``n_excluded``). SPA's ``n`` counts systems, acc-t's items, the average's the rated segments of the
matrix. The gold is the MQM or ESA score (mt-metrics-eval's ``std_gold`` for WMT24): a version
whose judgments are neither (WMT DA) is refused with that reason.

Defaults are mt-metrics-eval's and are all in the rows' ``protocol_signature``: 1,000 permutations
drawn from seed 4 (``pce.compute_pairwise_p_values``), independent of the bootstrap seed, so a
default run prints mt-metrics-eval's SPA; acc23 calibrated over every pair (``sample_rate=1.0``),
grouped by item. acc-t stores its calibrated threshold (``epsilon``) and is marked degenerate when
that threshold ties every pair (:func:`assay.jobs.evaluation_cells.degenerate_reason`).

Confidence intervals and significance: one set of bootstrap resamples of the items per group is
shared by both statistics and every metric (:class:`assay.jobs.evaluation_cells.Resamples`), so the
average's replicates are the average of paired replicates and every pair of metrics gets the paired
bootstrap test (Koehn 2004) from which Assay's significance clusters are computed, as for every
statistic without a permutation test. mt-metrics-eval instead compares metrics with a permutation
test on resampled metric scores; that test is not reproduced here. An SPA replicate reuses the one
permutation sign matrix on the resampled items (:func:`assay.stats.spa.resampled_spa`).

This module reads nothing: :func:`assay.jobs.evaluation_inputs.load_wmt24` reads the version's
judgments and scores and arranges them with :func:`gold_aspects`, :func:`complete_grids` and
:func:`grid_scores`; :func:`wmt24_cells` is the kernel, on those arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.datasets.rater_scores import score_kind
from assay.errors import UsageError
from assay.jobs.evaluation_cells import (
    Cell,
    FloatArray,
    Resamples,
    degenerate_reason,
    group_means,
    item_set_digest,
    widest_spread,
)
from assay.results.segment_scores import ScoredMetric
from assay.stats.grouped_acc import per_group_pairwise, resampled_grouped_mean
from assay.stats.pairwise import tie_calibration
from assay.stats.spa import DEFAULT_PERMUTATIONS, DEFAULT_SEED, resampled_spa, spa

PROTOCOL = "wmt24"
SPA, ACC_T, AVERAGE = "spa", "acc_t_item", "wmt24"
#: the level each statistic of the protocol is stored under
LEVELS = {SPA: "sys", ACC_T: "seg", AVERAGE: "avg"}
STATISTICS = tuple(LEVELS)
DEFAULT_PERMUTATION_SEED = DEFAULT_SEED
"""mt-metrics-eval's seed of SPA's permutations (``pce.compute_pairwise_p_values(seed=4)``)."""
GOLD_KINDS = ("mqm", "esa")
"""The human scores WMT24 ranks metrics against (mt-metrics-eval ``meta_info.WMT24``/``WMT24_ESA``
``std_gold``): an aspect ``mqm[:...]`` or ``esa[:...]``."""


def signature(n_permutations: int, permutation_seed: int) -> str:
    """The protocol's settings as stored in every row's ``protocol_signature``."""
    return (f"spa:permutations={n_permutations},seed={permutation_seed}"
            "|acc_t_item:acc23,tie-calibrated,grouping=item,sample_rate=1.0"
            f"|avg:mean({SPA},{ACC_T})|gold:{'/'.join(GOLD_KINDS)}")


Slot = tuple[str, str]
"""(group, aspect): one human score of one language pair."""


def gold_aspects(aspects: Sequence[str], dataset: str = "this version") -> list[str]:
    """The segment-level ``aspects`` of a version that WMT24 ranks metrics against (:data:`GOLD_KINDS`);
    a :class:`~assay.errors.UsageError` naming what ``dataset`` has when there is none."""
    gold = [a for a in aspects if score_kind(a) in GOLD_KINDS]
    if not gold:
        found = f"its judgments are {', '.join(aspects)}" if aspects else "it has no segment-level judgments"
        raise UsageError(f"--protocol wmt24 ranks metrics against MQM or ESA segment scores (WMT24's human "
                         f"evaluation); {dataset} has none: {found}. Evaluate it with --level seg or --level sys "
                         "(its year's protocol), or ingest an MQM or ESA release")
    return gold


@dataclass(frozen=True)
class Grid:
    """The complete (systems x items) matrix of one group: the row of the segments table in each cell,
    the human scores, and the segment keys (system-major, as ``rows.ravel()``)."""

    systems: list[str]
    items: list[str]
    rows: npt.NDArray[np.intp]
    human: FloatArray
    n_excluded: int
    """Rated segments outside the matrix (items some system lacks)."""
    keys: list[str]


def complete_grids(seg: Mapping[str, Sequence[Any]], human: FloatArray, keys: Sequence[str]) -> dict[Slot, Grid]:
    """Each (group, aspect)'s complete (systems x items) matrix of rated segments, from the judgment
    rows' ``group``, ``aspect``, ``item_id`` and ``system`` columns, their human scores (NaN:
    unrated) and segment keys: the items every rated system has a human score on (a group with
    fewer than two systems or no such item has none)."""
    where: dict[Slot, dict[tuple[str, str], int]] = {}
    for i, (g, a, item, system) in enumerate(zip(seg["group"], seg["aspect"], seg["item_id"], seg["system"],
                                                 strict=True)):
        if not np.isnan(human[i]):
            where.setdefault((g, a), {})[(system, item)] = i
    grids = {}
    for slot, found in where.items():
        systems = sorted({s for s, _ in found})
        items = sorted({i for _, i in found}, key=lambda v: (0, int(v), v) if v.isdigit() else (1, 0, v))
        complete = [item for item in items if all((s, item) in found for s in systems)]
        if len(systems) < 2 or not complete:
            continue
        rows = np.array([[found[(s, item)] for item in complete] for s in systems], dtype=np.intp)
        grids[slot] = Grid(systems, complete, rows, human[rows], len(found) - rows.size,
                           [keys[int(i)] for i in rows.ravel()])
    return grids


def grid_scores(scored: ScoredMetric, values: FloatArray, grids: Mapping[Slot, Grid]
                ) -> tuple[dict[Slot, FloatArray], list[str]]:
    """A metric's (systems x items) matrix on each grid, from its ``values`` parallel to the judgment
    rows; a grid where one of its scores is undefined is left out, with the reason."""
    matrices: dict[Slot, FloatArray] = {}
    skipped: list[str] = []
    for (group, aspect), grid in grids.items():
        metric = values[grid.rows]
        if np.isnan(metric).any():
            skipped.append(f"{scored.signature} (undefined scores in {group})")
            continue
        matrices[(group, aspect)] = metric
    return matrices, skipped


def wmt24_cells(grids: Mapping[Slot, Grid], scores: Mapping[Slot, Sequence[tuple[ScoredMetric, FloatArray]]],
                resamples: Resamples, *, n_permutations: int = DEFAULT_PERMUTATIONS,
                seed: int = DEFAULT_PERMUTATION_SEED) -> list[Cell]:
    """SPA (permutations from ``seed``), item-grouped acc-t and their mean per (group, aspect) and
    over groups (``all``, even for one group) for every metric with a matrix on a group's grid:
    ``scores`` gives each (group, aspect) its metrics' (systems x items) matrices, parallel to the
    grid's ``human`` (:func:`grid_scores`)."""
    by_metric: dict[str, list[Cell]] = {}
    for (group, aspect), grid in sorted(grids.items()):
        scored_here = scores.get((group, aspect), [])
        if not scored_here:
            continue
        item_set = item_set_digest(grid.keys)
        counts = resamples.counts(f"{PROTOCOL}/{group}/{aspect}", grid.human.shape[1])
        # one call for every metric: the human p-values of each resample are computed once
        spa_replicates = np.atleast_2d(resampled_spa(grid.human, [m for _, m in scored_here], counts,
                                                     n_permutations=n_permutations, seed=seed))
        for (scored, metric), replicates in zip(scored_here, spa_replicates, strict=True):
            by_metric.setdefault(scored.signature, []).extend(
                _group_cells(group, aspect, scored, grid, metric, replicates, counts, item_set, n_permutations, seed))
    cells: list[Cell] = []
    for metric_cells in by_metric.values():
        cells += metric_cells + group_means(metric_cells, min_groups=1)
    return cells


def _group_cells(group: str, aspect: str, scored: ScoredMetric, grid: Grid, metric: FloatArray,
                 spa_replicates: FloatArray, counts: FloatArray, item_set: str, n_permutations: int, seed: int
                 ) -> list[Cell]:
    n_systems, n_items = grid.human.shape
    spa_value = spa(grid.human, metric, n_permutations=n_permutations, seed=seed).value
    # system-major vectors: entry s * n_items + i is system s on item i
    calibrated = tie_calibration(grid.human.ravel(), metric.ravel(), statistic="acc_23", num_systems=n_systems,
                                 grouping="item")
    per_item = per_group_pairwise(grid.human.ravel(), metric.ravel(), epsilon=calibrated.epsilon,
                                  num_systems=n_systems, grouping="item")
    acc_replicates = resampled_grouped_mean(per_item.values, counts)
    acc_value = float(calibrated.value)
    spread = widest_spread(metric, grid.human, by_item=True)
    excluded = grid.n_excluded
    return [
        Cell(group, aspect, SPA, scored, spa_value, spa_replicates, n_systems, excluded, item_set,
             human=grid.human.mean(axis=1), metric_values=metric.mean(axis=1), systems=list(grid.systems),
             level=LEVELS[SPA], paired_test=False, unit="systems", degenerate=degenerate_reason(spread, within="item")),
        Cell(group, aspect, ACC_T, scored, acc_value, acc_replicates, per_item.n_groups, excluded, item_set,
             level=LEVELS[ACC_T], unit="items", epsilon=calibrated.epsilon,
             degenerate=degenerate_reason(spread, within="item", epsilon=calibrated.epsilon)),
        Cell(group, aspect, AVERAGE, scored, (spa_value + acc_value) / 2, (spa_replicates + acc_replicates) / 2,
             n_systems * n_items, excluded, item_set, level=LEVELS[AVERAGE], unit="segments"),
    ]
