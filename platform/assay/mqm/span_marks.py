"""Error spans as marks on a text: which words the raters marked, with which severity, properly nested.

The raters of one output mark spans independently (three raters on WMT23 en-de often mark the same
or overlapping words), each as character offsets into the clean text of the output (side
``target``) or of its source (side ``source``: an omission is marked on the source words that were
left out). A :class:`SpanMark` is one distinct span of one side with one severity, carrying every
error that marked exactly it, so a span three raters marked Major is one mark of three errors.

To show the marks inline, :func:`mark_events` turns them into opening and closing events in text
order, computed on the original offsets (never on a text already changed by earlier marks) and
**properly nested**: at one offset the marks that end close first, innermost first, then the marks
that start open, the longer (outer) first. When two spans cross (``[a [b a] b]``), the inner one is
closed where the outer one closes and reopened just after it, so every closing mark is at the end
of what it marks and brackets never interleave. :func:`bracketed` writes a text with its events.

Severities are ranked by :func:`severity_rank` (Critical, then Major, Minor, Neutral, then any
other), case-insensitively: MQM releases write ``Major``, ESA exports ``major``. A category may be
empty (ESA's error spans carry a severity only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from assay.mqm.rated_outputs import ErrorRecord

#: severities from the most to the least severe (casefolded); any other ranks after them
SEVERITY_ORDER: tuple[str, ...] = ("critical", "major", "minor", "neutral")


def severity_rank(severity: str) -> int:
    """0 for Critical, 1 Major, 2 Minor, 3 Neutral, 4 anything else (case-insensitive)."""
    key = severity.strip().casefold()
    return SEVERITY_ORDER.index(key) if key in SEVERITY_ORDER else len(SEVERITY_ORDER)


@dataclass(frozen=True)
class SpanMark:
    """One distinct span of one side of an output, marked with one severity by ``errors``."""

    side: str  # "target" (the output) or "source"
    start: int
    end: int
    severity: str
    errors: tuple[ErrorRecord, ...]  # every error that marked exactly this span with this severity

    @property
    def raters(self) -> tuple[str, ...]:
        """The raters who marked it, each once, in order of first appearance."""
        return tuple(dict.fromkeys(e.rater for e in self.errors))

    @property
    def categories(self) -> tuple[str, ...]:
        """The categories they gave it, each once ("" for a severity-only error)."""
        return tuple(dict.fromkeys(e.category for e in self.errors))

    def as_dict(self, text: str) -> dict[str, Any]:
        """The mark with the words it covers (``text`` is the clean text of its side)."""
        return {"side": self.side, "start": self.start, "end": self.end, "text": text[self.start:self.end],
                "severity": self.severity, "raters": list(self.raters), "categories": list(self.categories),
                "errors": len(self.errors)}


@dataclass(frozen=True)
class MarkEvent:
    """Where a mark opens or closes; ``split`` when it closes or reopens only because it crosses another."""

    offset: int
    kind: Literal["open", "close"]
    mark: SpanMark
    split: bool = False


def as_records(errors: Iterable[Sequence[Any] | Mapping[str, Any]]) -> list[ErrorRecord]:
    """Error records from records, 6-tuples or their dicts (``ErrorRecord.as_dict``, the stored JSON)."""
    records = []
    for error in errors:
        if isinstance(error, Mapping):
            records.append(ErrorRecord(str(error.get("category") or ""), str(error.get("severity") or ""),
                                       str(error.get("rater") or ""), str(error.get("side") or "target"),
                                       error.get("start"), error.get("end")))
        else:
            records.append(ErrorRecord(*error))
    return records


def span_marks(errors: Iterable[Sequence[Any] | Mapping[str, Any]], side: str, length: int) -> tuple[SpanMark, ...]:
    """The distinct (span, severity) marks of the errors on ``side`` of a text of ``length`` characters,
    ordered by start, longer first, more severe first. Offsets are clamped to the text; errors without
    a span are left out (:func:`unspanned`)."""
    grouped: dict[tuple[int, int, str], list[ErrorRecord]] = {}
    severity_as_written: dict[tuple[int, int, str], str] = {}
    for error in as_records(errors):
        if error.side != side or error.start is None or error.end is None:
            continue
        start, end = _clamp(int(error.start), length), _clamp(int(error.end), length)
        start, end = min(start, end), max(start, end)
        key = (start, end, error.severity.strip().casefold())
        grouped.setdefault(key, []).append(error)
        severity_as_written.setdefault(key, error.severity.strip())
    marks = [SpanMark(side, s, e, severity_as_written[(s, e, sev)], tuple(found))
             for (s, e, sev), found in grouped.items()]
    return tuple(sorted(marks, key=lambda m: (m.start, -m.end, severity_rank(m.severity), m.severity)))


def unspanned(errors: Iterable[Sequence[Any] | Mapping[str, Any]]) -> list[ErrorRecord]:
    """The errors without a span (e.g. an omission a rater marked on nothing), either side."""
    return [e for e in as_records(errors) if e.start is None or e.end is None]


def mark_events(marks: Sequence[SpanMark]) -> list[MarkEvent]:
    """Opening and closing events of ``marks`` in text order, properly nested (module docstring)."""
    by_start: dict[int, list[SpanMark]] = {}
    for mark in marks:
        by_start.setdefault(mark.start, []).append(mark)
    offsets = sorted({m.start for m in marks} | {m.end for m in marks})
    events: list[MarkEvent] = []
    stack: list[SpanMark] = []  # open marks, outermost first
    for offset in offsets:
        reopen: list[SpanMark] = []
        while any(m.end == offset for m in stack):
            top = stack.pop()
            ends_here = top.end == offset
            events.append(MarkEvent(offset, "close", top, split=not ends_here))
            if not ends_here:
                reopen.append(top)
        starting = by_start.get(offset, [])
        points = [m for m in starting if m.end == offset]  # empty spans: a point in the text
        for mark in points:
            events += [MarkEvent(offset, "open", mark), MarkEvent(offset, "close", mark)]
        opening = [(m, True) for m in reopen] + [(m, False) for m in starting if m.end > offset]
        opening.sort(key=lambda pair: (-pair[0].end, severity_rank(pair[0].severity), not pair[1]))
        for mark, again in opening:
            events.append(MarkEvent(offset, "open", mark, split=again))
            stack.append(mark)
    return events


def bracketed(text: str, marks: Sequence[SpanMark], opening: Callable[[MarkEvent], str],
              closing: Callable[[MarkEvent], str], plain: Callable[[str], str] = str) -> str:
    """``text`` with ``opening(event)`` and ``closing(event)`` written at each event of ``marks``;
    ``plain`` renders the unmarked pieces (e.g. an HTML escape)."""
    pieces, at = [], 0
    for event in mark_events(marks):
        if event.offset > at:
            pieces.append(plain(text[at:event.offset]))
            at = event.offset
        pieces.append(opening(event) if event.kind == "open" else closing(event))
    pieces.append(plain(text[at:]))
    return "".join(pieces)


def _clamp(offset: int, length: int) -> int:
    return max(0, min(offset, length))


__all__ = ["SEVERITY_ORDER", "MarkEvent", "SpanMark", "as_records", "bracketed", "mark_events", "severity_rank",
           "span_marks", "unspanned"]
