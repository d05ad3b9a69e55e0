"""The report's sections. Each module renders one section from collected data into HTML; a
section without data says which commands produce it.

``__all__`` names the package's public modules (one section each) and the helpers defined here,
which they share.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from assay.report.context import ReportContext
from assay.report.svg import esc

__all__ = [
    "Section", "correlations", "drift", "empty", "errors", "figure", "learned", "legend", "neighbors", "nightly",
    "reproduction", "scatter", "selection", "sweeps", "systems",
]


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    body: str


def empty(message: str, commands: Iterable[str]) -> str:
    """The placeholder of a section (or part) with no data: what is missing and how to make it."""
    lines = "".join(f"<code>{esc(c)}</code>" for c in commands)
    return f'<div class="empty"><p>{esc(message)}</p><div class="commands">{lines}</div></div>'


def figure(chart: str, caption: str, css_class: str = "") -> str:
    """A chart with its caption (HTML)."""
    return f'<figure class="fig {css_class}">{chart}<figcaption>{caption}</figcaption></figure>'


def legend(ctx: ReportContext, signatures: Iterable[str]) -> str:
    """Colour swatches of metric signatures, each with its signature note and hover text."""
    items = []
    for signature in ctx.palette.order(signatures):
        note = ctx.notes.signature(signature)
        colour = ctx.palette.colour(signature)
        items.append(f'<span class="key" title="{esc(signature)}"><i style="background:{colour}"></i>'
                     f"{esc(ctx.palette.label(signature))}{ctx.notes.marker(note)}</span>")
    return '<div class="legend">' + "".join(items) + "</div>"
