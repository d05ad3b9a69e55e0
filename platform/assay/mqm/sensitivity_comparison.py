"""A checkpoint against its parent: did the child become more sensitive to the errors humans penalise?

Both metrics score the same rated outputs. For each error cell, the within-item fit of
:mod:`assay.mqm.sensitivity` gives each metric's standardised drop per error (in pooled
within-item standard deviations of that metric, so a rescaled child is not "improved"). The
difference child - parent gets a **paired** bootstrap interval: both metrics, and the human score,
are fitted on the same item resamples in one batched solve, so the item-to-item variation they
share cancels in the difference (Koehn 2004's paired bootstrap, over items).

Verdict per cell: ``improved`` when the interval of the difference lies above zero (the child drops
more per error), ``worse`` when it lies below, ``unchanged`` otherwise (a bound within
:data:`ROUNDING` of zero counts as zero). "More sensitive" is only an
improvement where the humans penalise the cell, so each row also carries the humans' standardised
drop and :attr:`CellComparison.human_penalises`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from assay.errors import UsageError
from assay.mqm.error_cells import ErrorCell, Level
from assay.mqm.rated_outputs import RatedOutputs
from assay.mqm.sensitivity import DEFAULT_STREAM, BootstrapPlan, Estimate, estimate, resampled_within_item_fit
from assay.stats.bootstrap import paired_bootstrap_p_value

Verdict = Literal["improved", "worse", "unchanged"]

#: differences within this many standardised units are rounding (identical metrics differ by ~1e-15
#: through the batched solve), not a change
ROUNDING = 1e-12


@dataclass(frozen=True)
class CellComparison:
    """One cell: the child's and the parent's standardised drop per error, and their paired difference."""

    cell: ErrorCell
    outputs: int
    items_varying: int
    child_drop_std: Estimate
    parent_drop_std: Estimate
    difference: Estimate  # child - parent, paired
    human_drop_std: Estimate
    p_value: float = 1.0
    """One-sided paired bootstrap p-value (Koehn 2004) that the metric with the larger point drop is
    not the more sensitive: the share of replicates in which its drop is not larger."""

    @property
    def name(self) -> str:
        return self.cell.name

    @property
    def verdict(self) -> Verdict:
        if self.difference.low > ROUNDING:
            return "improved"
        if self.difference.high < -ROUNDING:
            return "worse"
        return "unchanged"

    @property
    def human_penalises(self) -> bool:
        return self.human_drop_std.low > 0

    def as_dict(self) -> dict[str, Any]:
        return {**self.cell.as_dict(), "outputs": self.outputs, "items_varying": self.items_varying,
                "child_drop_std": self.child_drop_std.as_dict(), "parent_drop_std": self.parent_drop_std.as_dict(),
                "difference": self.difference.as_dict(), "human_drop_std": self.human_drop_std.as_dict(),
                "human_penalises": self.human_penalises, "verdict": self.verdict, "p_value": self.p_value}


@dataclass(frozen=True)
class SensitivityComparison:
    """Per cell, child against parent (module docstring)."""

    level: str
    min_outputs: int
    bootstrap: BootstrapPlan
    outputs: int
    items: int
    cells: tuple[CellComparison, ...]

    @property
    def signature(self) -> str:
        return f"mqm-sensitivity-diff|level:{self.level}|min:{self.min_outputs}|{self.bootstrap.signature}"

    def cell(self, name: str) -> CellComparison:
        for cell in self.cells:
            if cell.name == name:
                return cell
        raise UsageError(f"no error cell {name!r}; expected one of {', '.join(c.name for c in self.cells)}")

    def as_dict(self) -> dict[str, Any]:
        return {"signature": self.signature, "level": self.level, "min_outputs": self.min_outputs,
                "bootstrap": self.bootstrap.as_dict(), "outputs": self.outputs, "items": self.items,
                "cells": [c.as_dict() for c in self.cells]}


def compare_sensitivity(child: RatedOutputs, parent: RatedOutputs, *, level: Level = "category",
                        min_outputs: int = 20, n_resamples: int = 1000, seed: int = 0,
                        stream: str = DEFAULT_STREAM, confidence: float = 0.95) -> SensitivityComparison:
    """Child - parent standardised drop per error of each cell, with a paired bootstrap interval."""
    if not child.same_outputs(parent):
        raise UsageError("compare_sensitivity: the child and the parent must score the same rated outputs "
                         "(same items, systems, human scores, raters and errors, in the same order)")
    plan = BootstrapPlan(n_resamples, seed, stream, confidence)
    fit = resampled_within_item_fit(child, np.column_stack([child.human, child.metric, parent.metric]),
                                    level=level, min_outputs=min_outputs, bootstrap=plan)
    human, human_r = fit.standardised_drops(0)
    kid, kid_r = fit.standardised_drops(1)
    old, old_r = fit.standardised_drops(2)
    cells = tuple(
        CellComparison(cell, int(fit.features.outputs_with[c]), int(fit.items_varying[c]),
                       child_drop_std=estimate(kid[c], kid_r[:, c], confidence),
                       parent_drop_std=estimate(old[c], old_r[:, c], confidence),
                       difference=estimate(kid[c] - old[c], kid_r[:, c] - old_r[:, c], confidence),
                       human_drop_std=estimate(human[c], human_r[:, c], confidence),
                       p_value=(paired_bootstrap_p_value(kid_r[:, c], old_r[:, c]) if kid[c] >= old[c]
                                else paired_bootstrap_p_value(old_r[:, c], kid_r[:, c])))
        for c, cell in enumerate(fit.features.cells))
    return SensitivityComparison(level, min_outputs, plan, child.size, len(child.item_ids), cells)


__all__ = ["CellComparison", "SensitivityComparison", "Verdict", "compare_sensitivity"]
