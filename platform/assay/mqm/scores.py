"""Segment MQM scores from error rows.

An MQM release has one row per error a rater marked (and one ``No-error`` row where a rater found
none). The score of a (system, segment) follows mt-metrics-eval ``converters/score_mqm.py``:

1. per rater, the **penalty** is the sum of the weights of that rater's errors on the segment
   (:mod:`assay.mqm.weights`); every row of the rater, ``No-error`` and attention checks included,
   marks the segment as rated by them, even when it weighs 0;
2. the segment's MQM is the mean penalty over the raters who rated it, **negated**: higher is
   better and 0 means no rater found an error. Segments nobody rated have no score (not 0).

Penalties are summed in row order and averaged as mt-metrics-eval does, so on the published
``avg_seg_scores`` files the results agree to the last bit or so (see tests/mqm). The per-rater
penalties stay available (:attr:`SegmentScores.penalties`), e.g. for inter-rater agreement.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from assay.mqm.weights import WeightingScheme, scheme

# (system, segment): a segment is named as its file names it (e.g. TED's seg_id).
Key = tuple[str, str]


@dataclass(frozen=True)
class ErrorRow:
    """One row of an MQM release: an error, or ``No-error``, that one rater gave one segment."""

    system: str
    segment: str
    rater: str
    severity: str
    category: str = ""
    # The physical line in the file, for messages (1-based); None when not from a file.
    line: int | None = None


@dataclass(frozen=True)
class SegmentScores:
    """Per (system, segment): each rater's penalty and the segment MQM, under one scheme."""

    # (system, segment) -> rater -> penalty (sum of error weights, >= 0), in first-seen order.
    penalties: dict[Key, dict[str, float]]
    signature: str

    def mqm(self, system: str, segment: str) -> float:
        """The segment MQM: minus the mean penalty over the raters who rated it."""
        return _mqm(self.penalties[(system, segment)])

    def scores(self) -> dict[Key, float]:
        return {key: _mqm(raters) for key, raters in self.penalties.items()}

    def system_scores(self) -> dict[str, float]:
        """Per system, the mean segment MQM over its rated segments."""
        totals: dict[str, list[float]] = {}
        for (system, _), raters in self.penalties.items():
            totals.setdefault(system, []).append(_mqm(raters))
        return {system: sum(values) / len(values) for system, values in totals.items()}

    def to_table(self) -> pa.Table:
        """``system, segment, mqm, raters``: one row per rated (system, segment)."""
        keys = list(self.penalties)
        return pa.table({
            "system": pa.array([k[0] for k in keys], pa.string()),
            "segment": pa.array([k[1] for k in keys], pa.string()),
            "mqm": pa.array([_mqm(self.penalties[k]) for k in keys], pa.float64()),
            "raters": pa.array([len(self.penalties[k]) for k in keys], pa.int32()),
        })

    def rater_table(self) -> pa.Table:
        """``system, segment, rater, penalty``: one row per rater of each (system, segment)."""
        rows = [(s, g, r, p) for (s, g), raters in self.penalties.items() for r, p in raters.items()]
        return pa.table({
            "system": pa.array([r[0] for r in rows], pa.string()),
            "segment": pa.array([r[1] for r in rows], pa.string()),
            "rater": pa.array([r[2] for r in rows], pa.string()),
            "penalty": pa.array([r[3] for r in rows], pa.float64()),
        })


def segment_scores(rows: Iterable[ErrorRow], weights: str | WeightingScheme | None = None, *,
                   path: str | Path | None = None) -> SegmentScores:
    """Score error rows with ``weights`` (a scheme, its name or its rules; default ``mtme``).

    ``path`` names the file the rows came from, so that an unknown severity is reported as an
    :class:`~assay.errors.InputError` with the file and the row's line.
    """
    chosen = scheme(weights)
    collected: dict[Key, dict[str, list[float]]] = {}
    for row in rows:
        weight = chosen.weight(row.severity, row.category, path=path, line=row.line)
        collected.setdefault((row.system, row.segment), {}).setdefault(row.rater, []).append(weight)
    # Summed per rater only now, in row order, as mt-metrics-eval does (bit-for-bit the same sums).
    penalties = {key: {rater: sum(values) for rater, values in raters.items()}
                 for key, raters in collected.items()}
    return SegmentScores(penalties, chosen.signature)


def _mqm(penalties: dict[str, float]) -> float:
    return -1 * (sum(penalties.values()) / len(penalties))
