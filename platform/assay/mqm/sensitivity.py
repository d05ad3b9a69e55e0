"""Error sensitivity: how much a metric's score drops per MQM error of each category, against the humans'.

"What does this metric miss?" Method (a within-item linear model; Freitag et al. 2021, "Experts,
Errors, and Context", for the MQM data; Wooldridge 2010, ch. 10.5, for the within estimator):

1. **Features.** For each rated output and each error cell ``c`` (:mod:`assay.mqm.error_cells`:
   a category path, or a (category, severity) pair), ``x_c`` is the number of errors of the cell
   summed over raters, divided by the number of raters: a rater-averaged count, the averaging the
   human MQM score uses. Cells on fewer than ``min_outputs`` outputs are folded into ``Other`` or
   ``(rare)``.
2. **Within-item fit.** Score and features are demeaned within each item (the outputs of one
   source segment), then ``score_resid ~ sum_c beta_c x_c_resid`` by least squares
   (:mod:`assay.mqm.within_item_regression`). Comparing outputs of the same source removes the
   source's difficulty, which moves both the error counts and the metric.
3. **Drop per error.** The sensitivity of a cell is ``-beta_c``: how far the score falls per
   (rater-averaged) error of the cell, (a) in the score's own units and (b) **standardised**,
   divided by the pooled within-item standard deviation of that score
   (``sqrt(sum_i sum_o (y_o - mean_i)^2 / sum_i (n_i - 1))``), so metrics on different scales compare.
4. **Yardstick.** The same model fitted to the human MQM score gives the humans' standardised drop
   per error. The **blind-spot ratio** is metric standardised drop / human standardised drop: about
   1 where the metric reacts to the error as the humans do, about 0 where it ignores it.
5. **Uncertainty.** A nonparametric bootstrap over items (Efron and Tibshirani 1993): items are
   drawn with replacement, ``n_resamples`` times, from the named stream of
   :func:`assay.stats.bootstrap.resample_indices`; every quantity above is recomputed on each
   resample (from per-item sufficient statistics, one matrix product per resample batch) and the
   ``confidence`` percentile interval reported (:func:`assay.stats.bootstrap.percentile_interval`).
   Metric and human scores share the resamples, so the ratio's interval is paired. A replicate in
   which a cell varies within no drawn item is undefined and left out of that cell's interval.

:func:`blind_spots` ranks the cells the humans clearly penalise (their standardised drop's interval
lies above zero) by blind-spot ratio, smallest first: the cells the metric misses most, relative
to how much the humans mind them. A ratio is a finding only against a yardstick that is clearly
not zero: where the humans' interval includes zero (on WMT23 en-de, Minor punctuation: humans 0.01
[-0.03, 0.04] SDs per error, so chrF's ratio is 4.22 [-25.75, 30.07]) the ratio is any number and
the cell is **undetermined**, with the reason (:meth:`SensitivityReport.undetermined_reason`): the
humans' drop includes or lies below zero, the count never varies within an item, or the cell is the
``(rare)`` nuisance bucket under ``min_outputs`` outputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.errors import UsageError
from assay.mqm.error_cells import ErrorCell, ErrorFeatures, Level, error_features
from assay.mqm.rated_outputs import RatedOutputs
from assay.mqm.within_item_regression import WithinItemFit, fit_within_item, within_item_moments
from assay.stats.bootstrap import percentile_interval, resample_indices
from assay.stats.resampled import resample_counts

FloatArray = npt.NDArray[np.float64]

DEFAULT_STREAM = "mqm-sensitivity"


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its bootstrap percentile interval (NaN where undefined)."""

    value: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def as_dict(self) -> dict[str, float | None]:
        return {"value": _json(self.value), "low": _json(self.low), "high": _json(self.high)}


@dataclass(frozen=True)
class CellSensitivity:
    """The drop per error of one cell, for the metric and for the humans, and their ratio."""

    cell: ErrorCell
    outputs: int  # outputs carrying at least one error of the cell
    items_varying: int  # items whose outputs differ in the cell's count (the ones that inform the fit)
    metric_drop: Estimate  # -beta, in the metric's units per error
    metric_drop_std: Estimate  # metric_drop / pooled within-item SD of the metric
    human_drop: Estimate  # -beta, in MQM points per error
    human_drop_std: Estimate  # human_drop / pooled within-item SD of the human score
    ratio: Estimate  # metric_drop_std / human_drop_std: the blind-spot ratio

    @property
    def name(self) -> str:
        return self.cell.name

    @property
    def human_penalises(self) -> bool:
        """Whether the humans clearly penalise the cell: their interval lies above zero."""
        return self.human_drop_std.low > 0

    def as_dict(self) -> dict[str, Any]:
        return {**self.cell.as_dict(), "outputs": self.outputs, "items_varying": self.items_varying,
                "metric_drop": self.metric_drop.as_dict(), "metric_drop_std": self.metric_drop_std.as_dict(),
                "human_drop": self.human_drop.as_dict(), "human_drop_std": self.human_drop_std.as_dict(),
                "ratio": self.ratio.as_dict(), "human_penalises": self.human_penalises}


@dataclass(frozen=True)
class BootstrapPlan:
    """How the items are resampled: recorded with every result so it can be reproduced."""

    n_resamples: int = 1000
    seed: int = 0
    stream: str = DEFAULT_STREAM
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if isinstance(self.n_resamples, bool) or not isinstance(self.n_resamples, int) or self.n_resamples < 1:
            raise UsageError(f"n_resamples is {self.n_resamples!r}; expected an integer >= 1")
        if not 0 < self.confidence < 1:
            raise UsageError(f"confidence is {self.confidence!r}; expected a level between 0 and 1, e.g. 0.95")

    def counts(self, n_items: int) -> FloatArray:
        """``(n_resamples, n_items)``: how often each item is drawn in each resample."""
        return resample_counts(resample_indices(self.seed, self.stream, self.n_resamples, n_items), n_items)

    @property
    def signature(self) -> str:
        return f"boot:{self.n_resamples}|seed:{self.seed}|stream:{self.stream}|ci:{self.confidence:g}"

    def as_dict(self) -> dict[str, Any]:
        return {"n_resamples": self.n_resamples, "seed": self.seed, "stream": self.stream,
                "confidence": self.confidence}


@dataclass(frozen=True)
class SensitivityReport:
    """Per cell, the metric's and the humans' drop per error (module docstring), at one level."""

    level: str
    min_outputs: int
    bootstrap: BootstrapPlan
    outputs: int
    items: int
    human_sd: float  # pooled within-item SD of the human score
    metric_sd: float  # pooled within-item SD of the metric
    cells: tuple[CellSensitivity, ...]

    @property
    def signature(self) -> str:
        return f"mqm-sensitivity|level:{self.level}|min:{self.min_outputs}|{self.bootstrap.signature}"

    def cell(self, name: str) -> CellSensitivity:
        for cell in self.cells:
            if cell.name == name:
                return cell
        raise UsageError(f"no error cell {name!r}; expected one of {', '.join(c.name for c in self.cells)}")

    def blind_spots(self) -> tuple[CellSensitivity, ...]:
        return blind_spots(self)

    def undetermined_reason(self, cell: CellSensitivity) -> str | None:
        """Why ``cell``'s blind-spot ratio is not ranked (module docstring), or None where it is."""
        human = cell.human_drop_std
        level = f"{self.bootstrap.confidence:.0%}"
        if cell.outputs < self.min_outputs:
            return (f"only {cell.outputs} outputs carry it (under the {self.min_outputs} needed): a nuisance term "
                    "of the fit, not a finding")
        if cell.items_varying == 0 or not math.isfinite(human.value):
            return "its count varies within no item, so no drop per error can be estimated"
        if not (math.isfinite(human.low) and math.isfinite(human.high)):
            return "the humans' drop has no bootstrap interval (it varies within too few resampled items)"
        drop = f"the humans' drop, {human.value:.2f} [{human.low:.2f}, {human.high:.2f}] within-item SDs per error"
        if human.low <= 0 <= human.high:
            return f"{drop}, has a {level} interval that includes 0: no yardstick for a ratio"
        if human.high < 0:
            return f"{drop}, lies below 0 (the humans score outputs with it higher): no yardstick for a ratio"
        if not math.isfinite(cell.ratio.value):
            return "the ratio is undefined (the metric's drop could not be estimated)"
        return None

    def as_dict(self) -> dict[str, Any]:
        rank = {c.name: k for k, c in enumerate(self.blind_spots(), start=1)}
        cells = [{**c.as_dict(), "blind_spot_rank": rank.get(c.name), "undetermined": self.undetermined_reason(c)}
                 for c in self.cells]
        return {"signature": self.signature, "level": self.level, "min_outputs": self.min_outputs,
                "bootstrap": self.bootstrap.as_dict(), "outputs": self.outputs, "items": self.items,
                "human_sd": _json(self.human_sd), "metric_sd": _json(self.metric_sd), "cells": cells,
                "blind_spots": [c.name for c in self.blind_spots()],
                "undetermined": [{"name": c["name"], "reason": c["undetermined"]} for c in cells
                                 if c["undetermined"] is not None]}


@dataclass(frozen=True, eq=False)
class ResampledFit:
    """The within-item fit of several score columns, on the full sample and on each item resample."""

    features: ErrorFeatures
    items_varying: npt.NDArray[np.intp]  # (cells,)
    point: WithinItemFit  # R = 1: the full sample
    replicates: WithinItemFit  # R = n_resamples

    def drops(self, score: int) -> tuple[FloatArray, FloatArray]:
        """``(cells,)`` and ``(R, cells)``: -beta of score column ``score``."""
        return -self.point.beta[0, :, score], -self.replicates.beta[:, :, score]

    def standardised_drops(self, score: int) -> tuple[FloatArray, FloatArray]:
        """The drops divided by the pooled within-item SD of the score, per resample."""
        point, replicates = self.drops(score)
        with np.errstate(invalid="ignore", divide="ignore"):
            return point / self.point.sd[0, score], replicates / self.replicates.sd[:, score, None]


def resampled_within_item_fit(outputs: RatedOutputs, scores: FloatArray, *, level: Level, min_outputs: int,
                              bootstrap: BootstrapPlan) -> ResampledFit:
    """Fit every column of ``scores`` (outputs x scores) on the full sample and on every item resample."""
    features = error_features(outputs, level, min_outputs=min_outputs)
    n_items = len(outputs.item_ids)
    moments = within_item_moments(features.counts, scores, outputs.item_codes, n_items)
    point = fit_within_item(moments, np.ones((1, n_items)))
    replicates = fit_within_item(moments, bootstrap.counts(n_items))
    return ResampledFit(features, moments.varies.sum(axis=0), point, replicates)


def error_sensitivity(outputs: RatedOutputs, *, level: Level = "category", min_outputs: int = 20,
                      n_resamples: int = 1000, seed: int = 0, stream: str = DEFAULT_STREAM,
                      confidence: float = 0.95) -> SensitivityReport:
    """The metric's and the humans' drop per error of each cell, with bootstrap intervals over items.

    The same ``seed`` and ``stream`` give every metric the same resamples (paired intervals).
    """
    plan = BootstrapPlan(n_resamples, seed, stream, confidence)
    fit = resampled_within_item_fit(outputs, np.column_stack([outputs.human, outputs.metric]), level=level,
                                    min_outputs=min_outputs, bootstrap=plan)
    human, human_r = fit.drops(0)
    metric, metric_r = fit.drops(1)
    human_std, human_std_r = fit.standardised_drops(0)
    metric_std, metric_std_r = fit.standardised_drops(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio, ratio_r = metric_std / human_std, metric_std_r / human_std_r
    cells = tuple(
        CellSensitivity(
            cell, int(fit.features.outputs_with[c]), int(fit.items_varying[c]),
            metric_drop=estimate(metric[c], metric_r[:, c], plan.confidence),
            metric_drop_std=estimate(metric_std[c], metric_std_r[:, c], plan.confidence),
            human_drop=estimate(human[c], human_r[:, c], plan.confidence),
            human_drop_std=estimate(human_std[c], human_std_r[:, c], plan.confidence),
            ratio=estimate(ratio[c], ratio_r[:, c], plan.confidence))
        for c, cell in enumerate(fit.features.cells))
    return SensitivityReport(level, min_outputs, plan, outputs.size, len(outputs.item_ids),
                             float(fit.point.sd[0, 0]), float(fit.point.sd[0, 1]), cells)


def blind_spots(report: SensitivityReport) -> tuple[CellSensitivity, ...]:
    """The cells the humans clearly penalise, smallest blind-spot ratio first (the metric's worst).

    Only cells with a determined ratio are ranked (:meth:`SensitivityReport.undetermined_reason`):
    a ``(rare)`` bucket still under ``min_outputs`` outputs is a nuisance term of the fit, and a
    ratio over a human drop whose interval includes zero is any number.
    """
    ranked = [cell for cell in report.cells if report.undetermined_reason(cell) is None]
    return tuple(sorted(ranked, key=lambda cell: (cell.ratio.value, cell.name)))


def estimate(value: float, replicates: FloatArray, confidence: float) -> Estimate:
    low, high = percentile_interval(replicates, confidence)
    return Estimate(float(value), low, high)


def _json(value: float) -> float | None:
    """A float for JSON: NaN and infinities (undefined) become None."""
    return float(value) if math.isfinite(value) else None


__all__ = ["DEFAULT_STREAM", "BootstrapPlan", "CellSensitivity", "Estimate", "ResampledFit", "SensitivityReport",
           "blind_spots", "error_sensitivity", "estimate", "resampled_within_item_fit"]
