"""SVG building blocks: escaping, linear scales, "nice" axis ticks and axes.

Charts are plain SVG strings written in Python, so the report is one static file that needs no
JavaScript library, no CDN and no network when it is opened. Text sizes are given in CSS pixels;
fonts and colours of text and axes come from the page's stylesheet (classes ``axis``, ``tick``,
``grid``, ``label``), so every chart shares one typography.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

#: rough width of one character of 11-12 px sans-serif text, for laying out labels
CHAR_WIDTH = 6.4


def esc(text: object) -> str:
    """Text escaped for an HTML/SVG text node or a double-quoted attribute."""
    return escape(str(text), quote=True)


def num(value: float) -> str:
    """A coordinate with at most one decimal, without a trailing ``.0``."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def tag(name: str, attrs: Mapping[str, object] | None = None, body: str | None = None) -> str:
    """One element; attributes whose value is None are left out, floats are rounded."""
    parts = [name]
    for key, value in (attrs or {}).items():
        if value is None:
            continue
        shown = num(value) if isinstance(value, float) else value
        parts.append(f'{key.rstrip("_").replace("_", "-")}="{esc(shown)}"')
    opening = " ".join(parts)
    return f"<{opening}/>" if body is None else f"<{opening}>{body}</{name}>"


def title(text: str) -> str:
    """An SVG ``<title>``: the tooltip a browser shows on hover over its parent."""
    return f"<title>{esc(text)}</title>"


def truncate(text: str, width: float, char_width: float = CHAR_WIDTH) -> str:
    """``text`` cut (with an ellipsis) to fit about ``width`` pixels."""
    fits = max(int(width / char_width), 1)
    return text if len(text) <= fits else text[: max(fits - 1, 1)] + "…"


@dataclass(frozen=True)
class Scale:
    """A linear map from the data interval ``domain`` to the pixel interval ``range``."""

    domain: tuple[float, float]
    range: tuple[float, float]

    def __call__(self, value: float) -> float:
        d0, d1 = self.domain
        r0, r1 = self.range
        if d1 == d0:
            return (r0 + r1) / 2
        return r0 + (value - d0) * (r1 - r0) / (d1 - d0)

    def clamp(self, value: float) -> float:
        low, high = sorted(self.domain)
        return self(min(max(value, low), high))


def nice_step(span: float, count: int) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about ``count`` intervals."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def nice_domain(values: Iterable[float], count: int = 5, include: Sequence[float] = (),
                pad: float = 0.0) -> tuple[float, float, list[float]]:
    """(low, high, ticks): a domain covering ``values`` and ``include`` with round tick marks."""
    finite = [v for v in [*values, *include] if v is not None and math.isfinite(v)]
    if not finite:
        return 0.0, 1.0, [0.0, 0.5, 1.0]
    low, high = min(finite), max(finite)
    if high == low:
        low, high = low - 0.5, high + 0.5
    margin = (high - low) * pad
    low, high = low - margin, high + margin
    step = nice_step(high - low, count)
    start = math.floor(low / step + 1e-9) * step
    stop = math.ceil(high / step - 1e-9) * step
    ticks = []
    value = start
    while value <= stop + step / 2:
        ticks.append(round(value, 10))
        value += step
    return start, stop, ticks


def tick_label(value: float, ticks: Sequence[float]) -> str:
    """A tick's text with the fewest decimals (at most 4) that show every tick exactly."""
    decimals = next((d for d in range(5) if all(abs(round(t, d) - t) < 1e-9 for t in ticks)), 4)
    text = f"{value:.{decimals}f}"
    return "0" if text.strip("-0.") == "" else text.replace("-", "−")


def x_axis(scale: Scale, ticks: Sequence[float], y: float, top: float, label: str | None = None,
           grid: bool = True) -> str:
    """A horizontal axis at pixel row ``y`` with tick labels below and grid lines up to ``top``."""
    parts = [tag("line", {"class": "axis", "x1": scale.range[0], "x2": scale.range[1], "y1": y, "y2": y})]
    for t in ticks:
        x = scale(t)
        if grid:
            parts.append(tag("line", {"class": "grid", "x1": x, "x2": x, "y1": top, "y2": y}))
        parts.append(tag("text", {"class": "tick", "x": x, "y": y + 13, "text-anchor": "middle"},
                         esc(tick_label(t, ticks))))
    if label:
        middle = (scale.range[0] + scale.range[1]) / 2
        parts.append(tag("text", {"class": "label", "x": middle, "y": y + 29, "text-anchor": "middle"}, esc(label)))
    return "".join(parts)


def y_axis(scale: Scale, ticks: Sequence[float], x: float, right: float, label: str | None = None,
           grid: bool = True) -> str:
    """A vertical axis at pixel column ``x`` with tick labels left and grid lines up to ``right``."""
    parts = [tag("line", {"class": "axis", "x1": x, "x2": x, "y1": scale.range[0], "y2": scale.range[1]})]
    for t in ticks:
        y = scale(t)
        if grid:
            parts.append(tag("line", {"class": "grid", "x1": x, "x2": right, "y1": y, "y2": y}))
        parts.append(tag("text", {"class": "tick", "x": x - 5, "y": y + 4, "text-anchor": "end"},
                         esc(tick_label(t, ticks))))
    if label:
        middle = (scale.range[0] + scale.range[1]) / 2
        parts.append(tag("text", {"class": "label", "x": 0, "y": 0, "text-anchor": "middle",
                                  "transform": f"translate({num(x - 38)},{num(middle)}) rotate(-90)"}, esc(label)))
    return "".join(parts)


def svg(width: float, height: float, body: str, *, css_class: str, label: str, element_id: str | None = None,
        tooltip: str | None = None) -> str:
    """The outer ``<svg>`` element of a chart, sized in CSS pixels and scaling down with the page."""
    attrs = {"class": css_class, "id": element_id, "viewBox": f"0 0 {num(width)} {num(height)}",
             "width": num(width), "height": num(height), "role": "img", "aria-label": label,
             "xmlns": "http://www.w3.org/2000/svg"}
    return tag("svg", attrs, (title(tooltip) if tooltip else "") + body)
