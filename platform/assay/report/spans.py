"""Error spans as escaped HTML: a text with the MQM spans its raters marked highlighted.

Raters' spans overlap (three raters on WMT23 often mark the same words), so the text is cut at
every span boundary, on the original offsets, and each piece is wrapped once, in one ``<mark>``
carrying every error that covers it: its class is the most severe one (``sev-major``, ``sev-minor``,
``sev-other``) and its hover text lists each covering error (category, severity, rater). Every piece
of text is escaped;
offsets are character offsets into the clean text (as stored in the ``errors`` table), clamped to
it. Errors without a span (``start`` None, e.g. an omission marked on nothing) are returned apart,
for a list beside the text.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from assay.mqm.span_marks import SEVERITY_ORDER, severity_rank
from assay.report.svg import esc

#: an error marked as a severity of its own in some exports, shown as Major
NON_TRANSLATION = frozenset({"non-translation", "non-translation!"})


def severity_class(severities: Sequence[str]) -> str:
    """``sev-major`` if any error is Major or worse (Critical; :func:`assay.mqm.span_marks.severity_rank`),
    else ``sev-minor`` if any is Minor, else ``sev-other``; case-insensitive (ESA writes ``major``)."""
    best = min((severity_rank(s) for s in severities), default=len(SEVERITY_ORDER))
    if best <= SEVERITY_ORDER.index("major") or {s.strip().casefold() for s in severities} & NON_TRANSLATION:
        return "sev-major"
    return "sev-minor" if best == SEVERITY_ORDER.index("minor") else "sev-other"


def error_label(error: Mapping[str, Any]) -> str:
    """``category · severity · rater``, after ``system:`` when the error names the output's system; a
    severity-only error (ESA) says ``no category``."""
    label = (f"{error.get('category') or 'no category'} · {error.get('severity') or '?'} · "
             f"{error.get('rater') or '?'}")
    return f"{error['system']}: {label}" if error.get("system") else label


def highlight(text: str, errors: Sequence[Mapping[str, Any]],
              side: str = "target") -> tuple[str, list[Mapping[str, Any]]]:
    """(``text`` as escaped HTML with the spans of ``errors`` on ``side`` marked, the errors on that
    side that have no span). Errors of the other side are ignored."""
    n = len(text)
    spans: list[tuple[int, int, Mapping[str, Any]]] = []
    unplaced: list[Mapping[str, Any]] = []
    for error in errors:
        if error.get("side", "target") != side:
            continue
        start, end = error.get("start"), error.get("end")
        if start is None or end is None:
            unplaced.append(error)
            continue
        start, end = max(0, min(int(start), n)), max(0, min(int(end), n))
        if end > start:
            spans.append((start, end, error))
        else:
            unplaced.append(error)
    cuts = sorted({0, n, *(s for s, _, _ in spans), *(e for _, e, _ in spans)})
    pieces = []
    for left, right in itertools.pairwise(cuts):
        piece = esc(text[left:right])
        covering = [error for start, end, error in spans if start <= left and right <= end]
        if not covering:
            pieces.append(piece)
            continue
        tip = "\n".join(error_label(e) for e in covering)
        css = severity_class([str(e.get("severity") or "") for e in covering])
        pieces.append(f'<mark class="{css}" title="{esc(tip)}">{piece}</mark>')
    return "".join(pieces), unplaced
