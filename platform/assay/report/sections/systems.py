"""Section 3: human system score against the metric's system score, per language pair.

The points are the ones ``assay evaluate --level sys`` stored with its run (``results/system_points``):
the report recomputes nothing, and each plot's r and interval are the evaluation's own numbers.
"""

from __future__ import annotations

from assay.datasets.rater_scores import human_score_name
from assay.report.charts import Point, scatter
from assay.report.collect import Evaluation
from assay.report.context import ReportContext, signed, slug
from assay.report.sections import Section, empty, figure
from assay.report.segments import SystemPoints, stored_system_points
from assay.report.svg import esc

SECTION_ID = "sec-system"
TITLE = "System level: human vs metric per language pair"
LABEL_SYSTEMS_UP_TO = 6


def _plot(ctx: ReportContext, evaluation: Evaluation, signature: str, points: SystemPoints) -> str:
    version = evaluation.version
    row = evaluation.cell(points.group, points.aspect, "pearson", signature)
    label = ctx.palette.label(signature)
    subtitle = f"{len(points.systems)} systems"
    notes = [ctx.notes.signature(signature), ctx.version_note(version)]
    heading = f"{points.group}"
    if row is not None:
        notes.append(ctx.run_note(row))
        ci = f" [{signed(row.ci_low, 2)}, {signed(row.ci_high, 2)}]" if row.ci_low is not None else ""
        heading = f"{points.group} · r = {signed(row.value)}{ci}"
    kind, human = "system score", human_score_name(points.aspect)
    tips = [Point(float(m), float(h), f"{s}\nhuman ({human}) = {h:.3f}\n{label} ({kind}) = {m:.3f}",
                  s if len(points.systems) <= LABEL_SYSTEMS_UP_TO else None)
            for s, h, m in zip(points.systems, points.human, points.metric, strict=True)]
    chart = scatter(tips, colour=ctx.palette.colour(signature), x_label=f"{label} ({kind})", y_label=f"human ({human})",
                    heading=heading, subheading=subtitle, css_class="chart-sys",
                    element_id=slug("fig-sys", version.ref.name, signature, points.group, points.aspect),
                    tooltip=f"{label} on {version.label} {points.group}\nsignature: {signature}\n"
                            f"{'' if row is None else ctx.row_tooltip(row)}",
                    width=262, height=228, radius=4.0, opacity=0.85)
    return figure(chart, f"{esc(label)} · {esc(points.group)}{ctx.notes.marker(*notes)}", "fig-small")


def _block(ctx: ReportContext, evaluation: Evaluation) -> str:
    version = evaluation.version
    parts = [f"<h3>{esc(version.label)}</h3>"]
    for signature in ctx.palette.order(evaluation.signatures):
        # one plot per (group, aspect): the runs the evaluation's rows come from (one per statistic) may
        # each have stored the same points; the run of the Pearson row (the r in the title) comes first
        pearson_runs = {r.run_id for r in evaluation.rows if r.signature == signature and r.statistic == "pearson"}
        runs = sorted({r.run_id for r in evaluation.rows if r.signature == signature},
                      key=lambda run_id: (run_id not in pearson_runs, run_id))
        plotted: dict[tuple[str, str], SystemPoints] = {}
        for run_id in runs:
            for points in stored_system_points(ctx.settings, version.ref.name, run_id, signature):
                plotted.setdefault((points.group, points.aspect), points)
        found = list(plotted.values())
        if not found:
            continue
        colour, label = ctx.palette.colour(signature), ctx.palette.label(signature)
        parts.append(f'<h4><i class="swatch" style="background:{colour}"></i>{esc(label)}</h4><div class="grid">'
                     + "".join(_plot(ctx, evaluation, signature, p) for p in found) + "</div>")
    return "".join(parts)


def render(ctx: ReportContext, evaluations: list[Evaluation]) -> Section:
    sys_evaluations = [e for e in evaluations if e.level == "sys"]
    if not sys_evaluations:
        return Section(SECTION_ID, TITLE, empty("No system-level evaluation yet.", [
            "assay score --dataset NAME --metric bleu --scope outputs",
            "assay evaluate --dataset NAME --level sys"]))
    lead = ('<p class="lead">One point per system, as <code>assay evaluate --level sys</code> stored them with its '
            "run. Human: the system's human score, named on each plot from the data (DA z, MQM under its "
            "weighting scheme, ESA). Metric: the corpus score from summed sufficient statistics for "
            "BLEU, otherwise the mean segment score, over the segments every system of the pair has. The r and "
            "interval in each title are the evaluation's; hover over a point for the system.</p>")
    return Section(SECTION_ID, TITLE, lead + "".join(_block(ctx, e) for e in sys_evaluations))
