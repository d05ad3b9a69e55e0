"""The report's charts as inline SVG: correlation bars with confidence whiskers, scatter plots and
line charts. Each function takes plain values (already coloured and labelled) and returns one
``<svg class="chart ...">`` string; every mark carries a ``<title>`` with its hover text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.report.svg import Scale, esc, nice_domain, num, svg, tag, title, truncate, x_axis, y_axis


@dataclass(frozen=True)
class Bar:
    """One metric's correlation in one panel: value, confidence interval, rank and cluster."""

    value: float | None
    low: float | None
    high: float | None
    rank: int | None
    cluster: int | None
    tooltip: str


@dataclass(frozen=True)
class BarRow:
    """A metric row shared by every panel of a bar chart."""

    key: str  # the signature
    label: str
    colour: str


@dataclass(frozen=True)
class Panel:
    title: str
    subtitle: str
    bars: dict[str, Bar]  # row key -> bar (missing: not computed for this group)


LABEL_W, PLOT_W, NOTE_W, PANEL_GAP = 112.0, 156.0, 86.0, 22.0
ROW_H, HEAD_H, AXIS_H = 20.0, 26.0, 34.0
PANEL_W = LABEL_W + PLOT_W + NOTE_W


def correlation_bars(panels: Sequence[Panel], rows: Sequence[BarRow], *, css_class: str, element_id: str,
                     label: str, tooltip: str, columns: int = 3) -> str:
    """Small multiples, one panel per group: a horizontal bar per metric from 0 to its value, a
    whisker over its bootstrap confidence interval, the value, and ``#rank`` with the cluster
    (``c1`` = the top significance cluster, whose values are set in bold)."""
    values = [v for p in panels for b in p.bars.values() for v in (b.value, b.low, b.high) if v is not None]
    low, high, ticks = nice_domain(values, count=4, include=[0.0])
    columns = max(1, min(columns, len(panels)))
    panel_h = HEAD_H + ROW_H * len(rows) + AXIS_H
    lines = math.ceil(len(panels) / columns)
    width = columns * PANEL_W + (columns - 1) * PANEL_GAP
    height = lines * panel_h + (lines - 1) * 14
    body = []
    for i, panel in enumerate(panels):
        x0 = (i % columns) * (PANEL_W + PANEL_GAP)
        y0 = (i // columns) * (panel_h + 14)
        body.append(_bar_panel(panel, rows, x0, y0, Scale((low, high), (x0 + LABEL_W, x0 + LABEL_W + PLOT_W)),
                               ticks))
    return svg(width, height, "".join(body), css_class=f"chart {css_class}", element_id=element_id, label=label,
               tooltip=tooltip)


def _bar_panel(panel: Panel, rows: Sequence[BarRow], x0: float, y0: float, scale: Scale,
               ticks: Sequence[float]) -> str:
    top = y0 + HEAD_H
    bottom = top + ROW_H * len(rows)
    parts = [tag("text", {"class": "panel-title", "x": x0, "y": y0 + 15}, esc(panel.title)),
             tag("text", {"class": "panel-sub", "x": x0 + PANEL_W, "y": y0 + 15, "text-anchor": "end"},
                 esc(panel.subtitle)),
             x_axis(scale, ticks, bottom + 4, top)]
    zero = scale(0.0)
    parts.append(tag("line", {"class": "zero", "x1": zero, "x2": zero, "y1": top, "y2": bottom + 4}))
    for j, row in enumerate(rows):
        y = top + j * ROW_H
        mid = y + ROW_H / 2
        parts.append(tag("text", {"class": "row-label", "x": x0 + LABEL_W - 8, "y": mid + 4, "text-anchor": "end"},
                         esc(truncate(row.label, LABEL_W - 12))))
        bar = panel.bars.get(row.key)
        if bar is None or bar.value is None:
            parts.append(tag("text", {"class": "note", "x": x0 + LABEL_W + PLOT_W + 8, "y": mid + 4}, "–"))
            continue
        left, right = sorted((zero, scale(bar.value)))
        marks = [tag("rect", {"class": "bar", "x": left, "y": y + 4, "width": max(right - left, 1.0),
                              "height": ROW_H - 8, "fill": row.colour})]
        if bar.low is not None and bar.high is not None:
            lo, hi = scale(bar.low), scale(bar.high)
            marks += [tag("line", {"class": "whisker", "x1": lo, "x2": hi, "y1": mid, "y2": mid}),
                      tag("line", {"class": "whisker", "x1": lo, "x2": lo, "y1": mid - 4, "y2": mid + 4}),
                      tag("line", {"class": "whisker", "x1": hi, "x2": hi, "y1": mid - 4, "y2": mid + 4})]
        top_cluster = bar.cluster == 1
        note = f"#{bar.rank} c{bar.cluster}" if bar.rank is not None else ""
        marks += [tag("text", {"class": "value" + (" top" if top_cluster else ""), "x": x0 + LABEL_W + PLOT_W + 8,
                               "y": mid + 4}, esc(f"{bar.value:.3f}".replace("-", "−"))),
                  tag("text", {"class": "rank", "x": x0 + PANEL_W, "y": mid + 4, "text-anchor": "end"}, esc(note))]
        hit = tag("rect", {"class": "hit", "x": x0, "y": y, "width": PANEL_W, "height": ROW_H})
        parts.append(tag("g", {"class": "mark"}, title(bar.tooltip) + hit + "".join(marks)))
    return "".join(parts)


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    tooltip: str | None = None
    label: str | None = None
    colour: str | None = None
    """this point's fill, over the chart's (scatter only)"""


def scatter(points: Sequence[Point], *, colour: str, x_label: str, y_label: str, heading: str, subheading: str,
            css_class: str, element_id: str, tooltip: str, width: float = 360, height: float = 290,
            radius: float = 2.6, opacity: float = 0.55) -> str:
    """Metric score (x) against human score (y); a point's ``tooltip``/``label`` when given."""
    left, right, top, bottom = 56.0, width - 14, 42.0, height - 44
    x_lo, x_hi, x_ticks = nice_domain([p.x for p in points], count=4, pad=0.03)
    y_lo, y_hi, y_ticks = nice_domain([p.y for p in points], count=4, pad=0.03)
    sx, sy = Scale((x_lo, x_hi), (left, right)), Scale((y_lo, y_hi), (bottom, top))
    parts = [tag("text", {"class": "chart-title", "x": 8, "y": 16}, esc(truncate(heading, width - 16, 7.2))),
             tag("text", {"class": "chart-sub", "x": 8, "y": 31}, esc(truncate(subheading, width - 16, 6.0))),
             x_axis(sx, x_ticks, bottom, top, x_label), y_axis(sy, y_ticks, left, right, y_label)]
    dots = []
    for p in points:
        attrs: dict[str, Any] = {"cx": sx(p.x), "cy": sy(p.y), "r": radius}
        if p.colour:
            attrs["fill"] = p.colour
        dots.append(tag("circle", attrs, title(p.tooltip)) if p.tooltip else tag("circle", attrs))
        if p.label:  # to the right of the point, or to its left near the right edge
            right_side = sx(p.x) < left + 0.62 * (right - left)
            dx = radius + 3 if right_side else -(radius + 3)
            dots.append(tag("text", {"class": "point-label", "x": sx(p.x) + dx, "y": sy(p.y) + 3,
                                     "text-anchor": "start" if right_side else "end"}, esc(truncate(p.label, 96))))
    parts.append(tag("g", {"class": "dots", "fill": colour, "fill-opacity": opacity}, "".join(dots)))
    return svg(width, height, "".join(parts), css_class=f"chart {css_class}", element_id=element_id,
               label=heading, tooltip=tooltip)


@dataclass(frozen=True)
class Series:
    """A line through points, in one colour; ``loose`` points (e.g. single seeds behind a mean)
    are drawn faintly in the same colour; ``dashed`` for reference series."""

    label: str
    colour: str
    points: list[Point] = field(default_factory=list)
    loose: list[Point] = field(default_factory=list)
    dashed: bool = False


@dataclass(frozen=True)
class Marker:
    """A labelled reference mark (a paper's number) drawn over a line chart."""

    x: float
    y: float
    label: str
    tooltip: str
    shape: str = "diamond"  # diamond | star
    below: bool = False  # label below the mark instead of above-left


def line_chart(series: Sequence[Series], *, x_label: str, y_label: str, heading: str, css_class: str,
               element_id: str, tooltip: str, markers: Sequence[Marker] = (),
               x_domain: tuple[float, float] | None = None, width: float = 560, height: float = 340,
               line_labels: bool = True) -> str:
    """Lines with point markers (each with a hover title), the series' loose points and reference
    markers; each line is labelled at its right end unless ``line_labels`` is off."""
    label_room = 96.0 if line_labels else 14.0
    left, right, top, bottom = 58.0, width - label_room, 30.0, height - 46
    xs = [p.x for s in series for p in [*s.points, *s.loose]] + [m.x for m in markers]
    ys = [p.y for s in series for p in [*s.points, *s.loose]] + [m.y for m in markers]
    if x_domain is not None:
        x_lo, x_hi, x_ticks = nice_domain([], count=5, include=list(x_domain))
    else:
        x_lo, x_hi, x_ticks = nice_domain(xs, count=5)
    y_lo, y_hi, y_ticks = nice_domain(ys, count=5, pad=0.04)
    sx, sy = Scale((x_lo, x_hi), (left, right)), Scale((y_lo, y_hi), (bottom, top))
    parts = [tag("text", {"class": "chart-title", "x": 8, "y": 17}, esc(heading)),
             x_axis(sx, x_ticks, bottom, top, x_label), y_axis(sy, y_ticks, left, right, y_label)]
    for s in series:
        coords = " ".join(f"{num(sx(p.x))},{num(sy(p.y))}" for p in s.points)
        body = [tag("circle", {"class": "loose", "cx": sx(p.x), "cy": sy(p.y), "r": 2.4, "fill": s.colour},
                    title(p.tooltip) if p.tooltip else None) for p in s.loose]
        body += [tag("polyline", {"class": "line" + (" dashed" if s.dashed else ""), "points": coords,
                                 "stroke": s.colour}, title(s.label))]
        for p in s.points:
            body.append(tag("circle", {"class": "vertex", "cx": sx(p.x), "cy": sy(p.y), "r": 3.6, "fill": s.colour},
                            title(p.tooltip or s.label)))
        if line_labels and s.points:
            end = s.points[-1]
            body.append(tag("text", {"class": "line-label", "x": sx(end.x) + 7, "y": sy(end.y) + 4,
                                     "fill": s.colour}, esc(truncate(s.label, label_room - 10))))
        parts.append(tag("g", {"class": "series"}, "".join(body)))
    for m in markers:
        parts.append(_marker(m, sx(m.x), sy(m.y)))
    return svg(width, height, "".join(parts), css_class=f"chart {css_class}", element_id=element_id,
               label=heading, tooltip=tooltip)


def _marker(marker: Marker, x: float, y: float) -> str:
    if marker.shape == "star":
        spikes = []
        for k in range(10):
            r = 7.5 if k % 2 == 0 else 3.2
            angle = math.pi / 2 + k * math.pi / 5
            spikes.append(f"{num(x + r * math.cos(angle))},{num(y - r * math.sin(angle))}")
        shape = tag("polygon", {"class": "ref-mark", "points": " ".join(spikes)})
    else:
        shape = tag("polygon", {"class": "ref-mark hollow",
                                "points": f"{num(x)},{num(y - 6)} {num(x + 6)},{num(y)} {num(x)},{num(y + 6)} "
                                          f"{num(x - 6)},{num(y)}"})
    position = {"x": x, "y": y + 20, "text-anchor": "middle"} if marker.below else \
        {"x": x - 9, "y": y - 8, "text-anchor": "end"}
    text = tag("text", {"class": "ref-label", **position}, esc(marker.label))
    return tag("g", {"class": "reference"}, title(marker.tooltip) + shape + text)
