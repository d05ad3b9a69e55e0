"""Error spans marked inline in MQM ratings.

Google's MQM releases (github.com/google/wmt-mqm-human-evaluation) mark the words an error is about
inside the rated text itself: ``... die sehr einfache Tatsache <v>in Betracht zu ziehen</v>, dass
...``, in ``target`` for a translation error and in ``source`` for a source error. Each row is one
error, so a text holds at most one span; a row without an error (``No-error``), or an error about
the whole segment (e.g. an omission), holds none.

:func:`parse_span` removes the markers and gives the span's character offsets in the clean text,
so that ``clean[start:end]`` is the marked text. Anything other than zero or one balanced
``<v>...</v>`` pair is refused with an :class:`~assay.errors.InputError` that names the file and
line when the caller gives them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assay.errors import InputError

OPEN = "<v>"
CLOSE = "</v>"

# Named in messages when the caller does not say which file the text came from.
_NO_FILE = "<text>"


@dataclass(frozen=True)
class MarkedText:
    """A rated text with its markers removed and the error span, if any, as offsets into it."""

    text: str
    start: int | None = None
    end: int | None = None

    @property
    def has_span(self) -> bool:
        return self.start is not None

    @property
    def span_text(self) -> str | None:
        """The marked words (``text[start:end]``), or None without a span."""
        if self.start is None or self.end is None:
            return None
        return self.text[self.start:self.end]


def parse_span(marked: str, *, path: str | Path | None = None, line: int | None = None,
               column: str | None = None, close_at_end: bool = False) -> MarkedText:
    """Split ``marked`` into the clean text and the character offsets of its ``<v>...</v>`` span.

    ``path``, ``line`` and ``column`` only make the error message point at the defect.
    ``close_at_end`` reads a single ``<v>`` that is never closed as a span running to the end of
    the text. It is off by default; the TED en-de release has one such row (line 6,444 of
    ``mqm_ted_ende.tsv``, ``...und sozialer Mobilität. <v>?``), which an ingest may choose to accept.
    """
    opens = _positions(marked, OPEN)
    closes = _positions(marked, CLOSE)
    if close_at_end and len(opens) == 1 and not closes:
        return MarkedText(marked[:opens[0]] + marked[opens[0] + len(OPEN):], opens[0],
                          len(marked) - len(OPEN))
    if not opens and not closes:
        return MarkedText(marked)
    if len(opens) == 1 and len(closes) == 1 and opens[0] < closes[0]:
        start = opens[0]
        end = closes[0] - len(OPEN)
        clean = marked[:opens[0]] + marked[opens[0] + len(OPEN):closes[0]] + marked[closes[0] + len(CLOSE):]
        return MarkedText(clean, start, end)
    raise InputError(
        path if path is not None else _NO_FILE,
        f"{_where(column)}{_problem(opens, closes)}",
        line=line,
        expected=f"at most one error span, marked as {OPEN}...{CLOSE}",
    )


def _positions(text: str, marker: str) -> list[int]:
    found = []
    at = text.find(marker)
    while at != -1:
        found.append(at)
        at = text.find(marker, at + len(marker))
    return found


def _where(column: str | None) -> str:
    return f"column {column!r}: " if column else ""


def _problem(opens: list[int], closes: list[int]) -> str:
    if len(opens) != len(closes):
        return (f"unbalanced span markers: {len(opens)} {OPEN} and {len(closes)} {CLOSE}")
    if len(opens) == 1:
        return f"{CLOSE} comes before {OPEN}"
    # Two or more pairs: nested if a second opening comes before the first closing.
    if opens[1] < closes[0]:
        return f"nested span markers ({OPEN} inside {OPEN}...{CLOSE})"
    return f"{len(opens)} error spans in one text"
