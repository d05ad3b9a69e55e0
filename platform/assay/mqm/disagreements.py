"""The worst disagreements: pairs of outputs the humans clearly order one way and the metric the other.

Only outputs of the same item are compared (the same source, as in the within-item fit of
:mod:`assay.mqm.sensitivity` and the item-grouped pairwise accuracy of Deutsch et al. 2023). A pair
is a **clear human preference** when the human scores differ by at least ``min_human_gap`` points of
the human score; the metric **reverses** it when it scores the human-preferred output strictly lower
(a metric tie is not a reversal).

The gap is in the units of the human score, so its default depends on the kind of human score
(:func:`default_clear_gap`, :data:`CLEAR_GAPS`), each the cost of **one minor error** on its scale:

* MQM: 1 point, one Minor error (weight 1 in mt-metrics-eval's ``score_mqm.py`` weights), averaged over
  raters;
* ESA (Kocmi et al. 2024: a 0-100 score given after marking minor and major error spans): 10 points.
  The ESA guidelines anchor the scale at 0, 33, 66 and 100 (no, some, most meaning preserved,
  perfect), so 1 point is a slider's jitter: on WMT24's wave 2 a 1-point gap made 76,536 within-item
  pairs clear (10 points: 36,436). On that wave's 15,741 kept ratings (the ``esa`` version's
  ``rater_scores`` and ``errors``, computed for this choice) an output with exactly one minor error and
  no other scores 84.1 on average against 93.8 for an output without errors (medians 88 and 96), and a
  least-squares fit of the score on the numbers of errors gives -3.7 per minor and -10.2 per major
  error: one minor error is worth about 10 points where it is the only one, and 10 points exceed the
  spread of scores among error-free outputs (SD 8.0). One major error alone costs about 31 points.

A kind without a default (DA, SQM) needs the gap given.

Reversed pairs are ranked by ``human gap x standardised metric gap``: the points the humans put
between the outputs times how far the metric puts them the wrong way, in pooled within-item
standard deviations of the metric (so the ranking does not depend on the metric's scale). A pair
comes first when both the humans are sure and the metric is confidently wrong.

The worst disagreements are **distinct items**: each item is shown by its worst reversed pair, with
the number of pairs of that item the metric reverses. (On WMT23 en-de, listing every pair filled
half of chrF's top ten with item 13: its short NLLB output, which leaves out the second sentence,
against five longer ones; chrF reverses 17 of the item's 32 clear preferences.) Each side carries
its candidate, its raters and its error records (target and source side), and each pair its source
and references, so a report can show the spans the humans marked where they marked them
(:mod:`assay.mqm.span_marks`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from assay.errors import UsageError
from assay.mqm.rated_outputs import ErrorRecord, RatedOutputs
from assay.mqm.span_marks import span_marks, unspanned
from assay.mqm.within_item_regression import demean_within_items


@dataclass(frozen=True)
class ClearGap:
    """The smallest gap of the human score that makes a clear preference, and where it came from."""

    points: float
    basis: str

    def as_dict(self) -> dict[str, Any]:
        return {"min_human_gap": self.points, "min_human_gap_basis": self.basis}


#: the default clear gap per kind of human score (the aspect's kind: ``mqm:mtme`` -> ``mqm``), the
#: points of one minor error on its scale (module docstring)
CLEAR_GAPS = {
    "mqm": ClearGap(1.0, "MQM default: one Minor error (weight 1 in mt-metrics-eval's weights), averaged over "
                         "raters"),
    "esa": ClearGap(10.0, "ESA default: about one minor error on the 0-100 scale (WMT24 wave 2: 84.1 with one "
                          "minor error, 93.8 without errors)"),
}


def default_clear_gap(kinds: Iterable[str]) -> ClearGap:
    """The default clear gap of human scores of these kinds (:data:`CLEAR_GAPS`); a
    :class:`~assay.errors.UsageError` for a kind without one or kinds of different scales."""
    found = sorted(set(kinds))
    unknown = [kind for kind in found if kind not in CLEAR_GAPS]
    if unknown or not found:
        raise UsageError(f"no default gap for a clear human preference on human scores of kind "
                         f"{', '.join(unknown) or '(none)'}; defaults exist for {', '.join(sorted(CLEAR_GAPS))}: give "
                         "the gap in points of the human score (min_human_gap)")
    gaps = {CLEAR_GAPS[kind] for kind in found}
    if len(gaps) > 1:
        raise UsageError(f"the human scores mix kinds on different scales ({', '.join(found)}): give the gap for a "
                         "clear human preference in points (min_human_gap), or analyse one kind")
    return gaps.pop()


def given_gap(points: float) -> ClearGap:
    """A gap given by the caller (checked)."""
    _check_gap(points)
    return ClearGap(float(points), f"given: {points:g} point{'' if points == 1 else 's'} of the human score")


@dataclass(frozen=True)
class DisagreementSide:
    """One output of an item: its system, scores, text, raters and the errors they marked."""

    system: str
    human: float
    metric: float
    candidate: str
    errors: tuple[ErrorRecord, ...]
    raters: int = 1

    def as_dict(self, source: str = "") -> dict[str, Any]:
        """With the distinct marks on the output and on ``source`` (:mod:`assay.mqm.span_marks`)."""
        marks = {"target": [m.as_dict(self.candidate) for m in span_marks(self.errors, "target", len(self.candidate))],
                 "source": [m.as_dict(source) for m in span_marks(self.errors, "source", len(source))],
                 "unspanned": [e.as_dict() for e in unspanned(self.errors)]}
        return {"system": self.system, "human": self.human, "metric": self.metric, "raters": self.raters,
                "candidate": self.candidate, "errors": [e.as_dict() for e in self.errors], "marks": marks}


@dataclass(frozen=True)
class Disagreement:
    """A reversed pair: the humans prefer ``preferred``, the metric scores ``other`` higher."""

    item: str
    source: str
    preferred: DisagreementSide  # higher human score (by at least min_human_gap)
    other: DisagreementSide  # higher metric score
    human_gap: float  # preferred.human - other.human (points of the human score, > 0)
    metric_gap: float  # other.metric - preferred.metric (metric units, > 0)
    metric_gap_std: float  # metric_gap / pooled within-item SD of the metric
    references: tuple[str, ...] = ()
    reversed_in_item: int = 1  # reversed pairs of this item (this one is the worst)

    @property
    def severity(self) -> float:
        """The ranking key: human gap x standardised metric gap."""
        return self.human_gap * self.metric_gap_std

    def as_dict(self) -> dict[str, Any]:
        return {"item": self.item, "source": self.source, "references": list(self.references),
                "preferred": self.preferred.as_dict(self.source), "other": self.other.as_dict(self.source),
                "human_gap": self.human_gap, "metric_gap": self.metric_gap, "metric_gap_std": self.metric_gap_std,
                "severity": self.severity, "reversed_in_item": self.reversed_in_item}


@dataclass(frozen=True)
class WorstDisagreements:
    """How often the metric reverses a clear human preference, and the worst reversals."""

    min_human_gap: float
    top: int
    clear_pairs: int  # within-item pairs with a human gap >= min_human_gap
    reversed_pairs: int  # of those, the pairs the metric orders the other way
    metric_sd: float  # pooled within-item SD of the metric (the unit of metric_gap_std)
    pairs: tuple[Disagreement, ...]  # the worst reversal of each of the worst items, worst first (at most `top`)
    items_reversed: int = 0  # items with at least one reversed pair
    min_human_gap_basis: str = ""  # why the gap is what it is (ClearGap.basis)

    def as_dict(self) -> dict[str, Any]:
        return {"min_human_gap": self.min_human_gap, "min_human_gap_basis": self.min_human_gap_basis,
                "top": self.top, "clear_pairs": self.clear_pairs,
                "reversed_pairs": self.reversed_pairs, "items_reversed": self.items_reversed,
                "metric_sd": self.metric_sd if math.isfinite(self.metric_sd) else None,
                "pairs": [p.as_dict() for p in self.pairs]}


@dataclass(frozen=True)
class ItemDisagreements:
    """Every rated output of one item, the humans' best first, and the clear preferences the metric reverses."""

    item: str
    source: str
    references: tuple[str, ...]
    min_human_gap: float
    outputs: tuple[DisagreementSide, ...]  # by human score, best first (ties: metric score, then system)
    clear_pairs: int
    reversed: tuple[tuple[str, str], ...]  # (preferred system, the other system) of each reversed pair
    min_human_gap_basis: str = ""  # why the gap is what it is (ClearGap.basis)

    def as_dict(self) -> dict[str, Any]:
        human_rank = _ranks([o.human for o in self.outputs])
        metric_rank = _ranks([o.metric for o in self.outputs])
        return {"item": self.item, "source": self.source, "references": list(self.references),
                "min_human_gap": self.min_human_gap, "min_human_gap_basis": self.min_human_gap_basis,
                "clear_pairs": self.clear_pairs,
                "reversed_pairs": len(self.reversed),
                "reversed": [{"preferred": a, "other": b} for a, b in self.reversed],
                "outputs": [{**o.as_dict(self.source), "human_rank": h, "metric_rank": m}
                            for o, h, m in zip(self.outputs, human_rank, metric_rank, strict=True)]}


def item_disagreements(outputs: RatedOutputs, item: str, *, min_human_gap: float | ClearGap = CLEAR_GAPS["mqm"]
                       ) -> ItemDisagreements:
    """One item's outputs and the clear human preferences among them that the metric reverses
    (``min_human_gap``: points of the human score, or a :class:`ClearGap`; MQM's by default)."""
    gap = _clear_gap(min_human_gap)
    members = [o for o in range(outputs.size) if outputs.item[o] == item]
    if not members:
        known = outputs.item_ids
        raise UsageError(f"no rated outputs of item {item!r}; expected one of the {len(known):,} items, e.g. "
                         + ", ".join(repr(i) for i in known[:5]))
    members.sort(key=lambda o: (-outputs.human[o], -outputs.metric[o], outputs.system[o]))
    sides = tuple(_side(outputs, o) for o in members)
    clear = [(a, b) for a in sides for b in sides if a.human - b.human >= gap.points]
    reversed_ = tuple((a.system, b.system) for a, b in clear if a.metric < b.metric)
    first = members[0]
    return ItemDisagreements(item, outputs.source[first], outputs.references[first], gap.points, sides,
                             len(clear), reversed_, gap.basis)


def worst_disagreements(outputs: RatedOutputs, *, min_human_gap: float | ClearGap = CLEAR_GAPS["mqm"],
                        top: int = 10) -> WorstDisagreements:
    """The worst reversed pair of each of the ``top`` worst items, worst first (module docstring); ties
    keep item and output order. ``min_human_gap``: points of the human score, or a :class:`ClearGap`
    (MQM's by default; :func:`default_clear_gap` for other kinds)."""
    gap = _clear_gap(min_human_gap)
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
        a, b = np.nonzero(h[:, None] - h[None, :] >= gap.points)
        clear += a.size
        wrong = m[a] < m[b]
        better.append(members[a[wrong]])
        worse.append(members[b[wrong]])
    preferred, other = np.concatenate(better).astype(np.intp), np.concatenate(worse).astype(np.intp)
    human_gap = outputs.human[preferred] - outputs.human[other]
    metric_gap = outputs.metric[other] - outputs.metric[preferred]
    with np.errstate(invalid="ignore", divide="ignore"):
        metric_gap_std = metric_gap / metric_sd
    ranked = np.argsort(-(human_gap * metric_gap_std), kind="stable")
    per_item = np.bincount(codes[preferred], minlength=n_items)
    worst_of_item: list[int] = []
    seen: set[int] = set()
    for p in ranked:
        code = int(codes[preferred[p]])
        if len(worst_of_item) == top:
            break
        if code not in seen:
            seen.add(code)
            worst_of_item.append(int(p))
    pairs = tuple(
        Disagreement(outputs.item[preferred[p]], outputs.source[preferred[p]], _side(outputs, int(preferred[p])),
                     _side(outputs, int(other[p])), float(human_gap[p]), float(metric_gap[p]),
                     float(metric_gap_std[p]), outputs.references[preferred[p]],
                     int(per_item[codes[preferred[p]]]))
        for p in worst_of_item)
    return WorstDisagreements(gap.points, top, clear, int(preferred.size), metric_sd, pairs,
                              int(np.count_nonzero(per_item)), gap.basis)


def _clear_gap(value: float | ClearGap) -> ClearGap:
    if isinstance(value, ClearGap):
        _check_gap(value.points)
        return value
    return given_gap(value)


def _check_gap(min_human_gap: float) -> None:
    if isinstance(min_human_gap, bool) or not isinstance(min_human_gap, int | float) \
            or not math.isfinite(min_human_gap) or min_human_gap <= 0:
        raise UsageError(f"min_human_gap is {min_human_gap!r}; expected a positive number of points of the human "
                         "score, e.g. 1.0 (one Minor MQM error) or 10 (one minor error on ESA's 0-100 scale)")


def _ranks(values: list[float]) -> list[int]:
    """Competition ranks, highest value first (equal values share the better rank)."""
    return [1 + sum(other > value for other in values) for value in values]


def _pooled_within_item_sd(outputs: RatedOutputs) -> float:
    n_items = len(outputs.item_ids)
    residual = demean_within_items(outputs.metric[:, None], outputs.item_codes, n_items)[:, 0]
    dof = outputs.size - n_items
    return math.sqrt(float(residual @ residual) / dof) if dof > 0 else math.nan


def _side(outputs: RatedOutputs, o: int) -> DisagreementSide:
    return DisagreementSide(outputs.system[o], float(outputs.human[o]), float(outputs.metric[o]),
                            outputs.candidate[o], outputs.errors[o], outputs.raters[o])


__all__ = ["CLEAR_GAPS", "ClearGap", "Disagreement", "DisagreementSide", "ItemDisagreements", "WorstDisagreements",
           "default_clear_gap", "given_gap", "item_disagreements", "worst_disagreements"]
