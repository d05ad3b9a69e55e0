"""Section 5: each metric's correlation against the quality-drift parameter α (test samples)."""

from __future__ import annotations

from collections import defaultdict

from assay.report.charts import Point, Series, line_chart
from assay.report.collect import Evaluation
from assay.report.context import LEVEL_NAMES, ReportContext, signed, slug, statistic_name
from assay.report.drift import DriftPanel, drift_panels
from assay.report.sections import Section, empty, figure, legend

SECTION_ID = "sec-drift"
TITLE = "Quality drift: correlation vs α"


def _chart(ctx: ReportContext, panel: DriftPanel) -> str:
    series, notes = [], []
    for signature in ctx.palette.order(panel.series):
        points = panel.series[signature]
        by_alpha: dict[float, list[float]] = defaultdict(list)
        loose = []
        for p in points:
            if p.row.value is None:  # drift_panels keeps defined values only
                continue
            by_alpha[p.alpha].append(p.row.value)
            notes += [ctx.version_note(p.evaluation.version), ctx.run_note(p.row)]
            if len({q.seed for q in points if q.alpha == p.alpha}) > 1:
                loose.append(Point(p.alpha, p.row.value, ctx.row_tooltip(p.row)))
        label = ctx.palette.label(signature)
        means = []
        for alpha, values in sorted(by_alpha.items()):
            mean = sum(values) / len(values)
            seeds = "" if len(values) == 1 else f" (mean of {len(values)} seeds)"
            rows = [p.row for p in points if p.alpha == alpha]
            tip = (f"{label} · α = {alpha:g}: {statistic_name(panel.statistic)} = {signed(mean)}{seeds}\n"
                   + "\n---\n".join(ctx.row_tooltip(r) for r in rows[:3]))
            means.append(Point(alpha, mean, tip))
        series.append(Series(label, ctx.palette.colour(signature), means, loose))
        notes.append(ctx.notes.signature(signature))
    name = f"{LEVEL_NAMES[panel.level]}, {panel.aspect}, {statistic_name(panel.statistic)} ({panel.group})"
    chart = line_chart(series, x_label="α (quality drift)", y_label=statistic_name(panel.statistic),
                       heading=f"{name} · from {', '.join(panel.parents)}", css_class="chart-drift",
                       element_id=slug("fig-drift", panel.level, panel.aspect, panel.statistic),
                       tooltip=f"quality drift: {name}", width=640, height=340)
    return figure(chart, f"Lines join the mean over seeds at each α; faint dots are single seeds. "
                         f"{ctx.notes.marker(*notes)}", "fig-wide")


def render(ctx: ReportContext, evaluations: list[Evaluation]) -> Section:
    panels = drift_panels(evaluations)
    if not panels:
        return Section(SECTION_ID, TITLE, empty(
            "No evaluated quality-drift test samples yet (dataset versions derived with kind “quality-drift”, "
            "split “test”).", [
                "assay drift ...   # derive the quality-drift samples (train/test splits over α and seeds)",
                "assay score --dataset DERIVED --metric sentbleu",
                "assay evaluate --dataset DERIVED@VERSION --level seg"]))
    signatures = sorted({s for p in panels for s in p.series})
    lead = ('<p class="lead">Each point is the latest evaluation of one derived test sample; its α and seed come '
            "from the version's derivation. Correlation on the mean over groups where there are several.</p>")
    return Section(SECTION_ID, TITLE, lead + legend(ctx, signatures) + "".join(_chart(ctx, p) for p in panels))
