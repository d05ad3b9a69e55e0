"""The worst disagreements: pairs of outputs the humans clearly order one way and the metric the other.

Only outputs of the same item are compared (the same source, as in the within-item fit of
:mod:`assay.mqm.sensitivity` and the item-grouped pairwise accuracy of Deutsch et al. 2023). A pair
is a **clear human preference** when the human MQM scores differ by at least ``min_human_gap`` (1
MQM point by default: one Minor error, averaged over raters, in the ``mtme`` weights); the metric
**reverses** it when it scores the human-preferred output strictly lower (a metric tie is not a
reversal).

Reversed pairs are ranked by ``human gap x standardised metric gap``: the MQM points the humans put
between the outputs times how far the metric puts them the wrong way, in pooled within-item
standard deviations of the metric (so the ranking does not depend on the metric's scale). A pair
comes first when both the humans are sure and the metric is confidently wrong. Each side carries its
candidate and error records, so a report can show the spans the humans marked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from assay.errors import UsageError
from assay.mqm.rated_outputs import ErrorRecord, RatedOutputs
from assay.mqm.within_item_regression import demean_within_items


@dataclass(frozen=True)
class DisagreementSide:
    """One output of a pair: its system, scores, text and the errors its raters marked."""

    system: str
    human: float
    metric: float
    candidate: str
    errors: tuple[ErrorRecord, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"system": self.system, "human": self.human, "metric": self.metric, "candidate": self.candidate,
                "errors": [e.as_dict() for e in self.errors]}


@dataclass(frozen=True)
class Disagreement:
    """A reversed pair: the humans prefer ``preferred``, the metric scores ``other`` higher."""

    item: str
    source: str
    preferred: DisagreementSide  # higher human score (by at least min_human_gap)
    other: DisagreementSide  # higher metric score
    human_gap: float  # preferred.human - other.human (MQM points, > 0)
    metric_gap: float  # other.metric - preferred.metric (metric units, > 0)
    metric_gap_std: float  # metric_gap / pooled within-item SD of the metric

    @property
    def severity(self) -> float:
        """The ranking key: human gap x standardised metric gap."""
        return self.human_gap * self.metric_gap_std

    def as_dict(self) -> dict[str, Any]:
        return {"item": self.item, "source": self.source, "preferred": self.preferred.as_dict(),
                "other": self.other.as_dict(), "human_gap": self.human_gap, "metric_gap": self.metric_gap,
                "metric_gap_std": self.metric_gap_std, "severity": self.severity}


@dataclass(frozen=True)
class WorstDisagreements:
    """How often the metric reverses a clear human preference, and the worst reversals."""

    min_human_gap: float
    top: int
    clear_pairs: int  # within-item pairs with a human gap >= min_human_gap
    reversed_pairs: int  # of those, the pairs the metric orders the other way
    metric_sd: float  # pooled within-item SD of the metric (the unit of metric_gap_std)
    pairs: tuple[Disagreement, ...]  # the worst reversals, worst first (at most `top`)

    def as_dict(self) -> dict[str, Any]:
        return {"min_human_gap": self.min_human_gap, "top": self.top, "clear_pairs": self.clear_pairs,
                "reversed_pairs": self.reversed_pairs,
                "metric_sd": self.metric_sd if math.isfinite(self.metric_sd) else None,
                "pairs": [p.as_dict() for p in self.pairs]}


def worst_disagreements(outputs: RatedOutputs, *, min_human_gap: float = 1.0, top: int = 10) -> WorstDisagreements:
    """The ``top`` reversed pairs, worst first (module docstring); ties keep item and output order."""
    if not math.isfinite(min_human_gap) or min_human_gap <= 0:
        raise UsageError(f"min_human_gap is {min_human_gap!r}; expected a positive number of MQM points, e.g. 1.0")
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise UsageError(f"top is {top!r}; expected an integer >= 0")
    codes, n_items = outputs.item_codes, len(outputs.item_ids)
    metric_sd = _pooled_within_item_sd(outputs)
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=n_items))])
    better: list[np.ndarray] = []
    worse: list[np.ndarray] = []
    clear = 0
    for i in range(n_items):
        members = order[bounds[i]:bounds[i + 1]]
        h, m = outputs.human[members], outputs.metric[members]
        # a = the human-preferred output, b = the other
        a, b = np.nonzero(h[:, None] - h[None, :] >= min_human_gap)
        clear += a.size
        wrong = m[a] < m[b]
        better.append(members[a[wrong]])
        worse.append(members[b[wrong]])
    preferred, other = np.concatenate(better).astype(np.intp), np.concatenate(worse).astype(np.intp)
    human_gap = outputs.human[preferred] - outputs.human[other]
    metric_gap = outputs.metric[other] - outputs.metric[preferred]
    with np.errstate(invalid="ignore", divide="ignore"):
        metric_gap_std = metric_gap / metric_sd
    ranked = np.argsort(-(human_gap * metric_gap_std), kind="stable")[:top]
    pairs = tuple(
        Disagreement(outputs.item[preferred[p]], outputs.source[preferred[p]], _side(outputs, int(preferred[p])),
                     _side(outputs, int(other[p])), float(human_gap[p]), float(metric_gap[p]),
                     float(metric_gap_std[p]))
        for p in ranked)
    return WorstDisagreements(float(min_human_gap), top, clear, int(preferred.size), metric_sd, pairs)


def _pooled_within_item_sd(outputs: RatedOutputs) -> float:
    n_items = len(outputs.item_ids)
    residual = demean_within_items(outputs.metric[:, None], outputs.item_codes, n_items)[:, 0]
    dof = outputs.size - n_items
    return math.sqrt(float(residual @ residual) / dof) if dof > 0 else math.nan


def _side(outputs: RatedOutputs, o: int) -> DisagreementSide:
    return DisagreementSide(outputs.system[o], float(outputs.human[o]), float(outputs.metric[o]),
                            outputs.candidate[o], outputs.errors[o])


__all__ = ["Disagreement", "DisagreementSide", "WorstDisagreements", "worst_disagreements"]
