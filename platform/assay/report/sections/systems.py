"""Section 3: human system score against the metric's system score, per language pair.

System scores are recomputed from stored segment scores the way the evaluation computes them
(see :mod:`assay.report.segments`); each plot's r is the evaluation's own number, and the plot
says so if the recomputation disagrees with it.
"""

from __future__ import annotations

from assay.report.charts import Point, scatter
from assay.report.collect import Evaluation
from assay.report.context import ReportContext, signed, slug
from assay.report.sections import Section, empty, figure
from assay.report.segments import SystemPoints, system_layout, system_points
from assay.report.svg import esc

SECTION_ID = "sec-system"
TITLE = "System level: human vs metric per language pair"
AGREEMENT = 1e-6
LABEL_SYSTEMS_UP_TO = 6


def _plot(ctx: ReportContext, evaluation: Evaluation, signature: str, points: SystemPoints) -> str:
    version = evaluation.version
    row = evaluation.cell(points.group, points.aspect, "pearson", signature)
    label = ctx.palette.label(signature)
    recomputed = points.pearson
    subtitle = f"{len(points.systems)} systems · {points.items:,} segments each"
    notes = [ctx.notes.signature(signature), ctx.version_note(version)]
    if row is not None:
        notes.append(ctx.run_note(row))
        ci = f" [{signed(row.ci_low, 2)}, {signed(row.ci_high, 2)}]" if row.ci_low is not None else ""
        heading = f"{points.group} · r = {signed(row.value)}{ci}"
        if row.value is not None and (recomputed is None or abs(recomputed - row.value) > AGREEMENT):
            subtitle = f"recomputed r = {signed(recomputed)} differs from the run's"
    else:
        heading = f"{points.group} · r = {signed(recomputed)} (recomputed; not in the evaluation)"
    kind = "corpus score" if points.corpus else "mean segment score"
    tips = [Point(float(m), float(h), f"{s}\nhuman z = {h:.3f}\n{label} ({kind}) = {m:.3f}",
                  s if len(points.systems) <= LABEL_SYSTEMS_UP_TO else None)
            for s, h, m in zip(points.systems, points.human, points.metric, strict=True)]
    chart = scatter(tips, colour=ctx.palette.colour(signature), x_label=f"{label} ({kind})", y_label="human (DA z)",
                    heading=heading, subheading=subtitle, css_class="chart-sys",
                    element_id=slug("fig-sys", version.dataset, signature, points.group, points.aspect),
                    tooltip=f"{label} on {version.label} {points.group}\nsignature: {signature}\n"
                            f"{'' if row is None else ctx.row_tooltip(row)}",
                    width=262, height=228, radius=4.0, opacity=0.85)
    return figure(chart, f"{esc(label)} · {esc(points.group)}{ctx.notes.marker(*notes)}", "fig-small")


def _block(ctx: ReportContext, evaluation: Evaluation) -> str:
    version = evaluation.version
    parts = [f"<h3>{esc(version.label)}</h3>"]
    layout = system_layout(ctx.settings, version)
    for signature in ctx.palette.order(evaluation.signatures):
        found = system_points(ctx.settings, layout, evaluation.metric_of(signature), signature)
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
    lead = ('<p class="lead">One point per system. Human: the system\'s DA z-score. Metric: recomputed from the '
            "stored segment scores of the system's full test-set outputs, as <code>assay evaluate --level sys</code> "
            "does (corpus score from summed sufficient statistics for BLEU, otherwise the mean segment score, over "
            "the segments every system of the pair has). The r in each title is the evaluation's; hover over a "
            "point for the system.</p>")
    return Section(SECTION_ID, TITLE, lead + "".join(_block(ctx, e) for e in sys_evaluations))
