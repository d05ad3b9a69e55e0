"""Section 2: metric score against human score, segment by segment, for the main dataset."""

from __future__ import annotations

from assay.report.charts import Point, scatter
from assay.report.collect import Evaluation
from assay.report.context import ReportContext, signed, slug
from assay.report.sections import Section, empty, figure
from assay.report.segments import segment_sample
from assay.report.svg import esc

SECTION_ID = "sec-scatter"
TITLE = "Metric vs human, segment level"
PREFERRED = ("wmt17", "wmt16", "wmt18")


def main_evaluation(evaluations: list[Evaluation], name: str | None = None) -> Evaluation | None:
    """The segment-level evaluation to plot: the named dataset, else WMT17 (the reproduction
    target), else the WMT-format dataset with the most judgments, else the largest."""
    seg = [e for e in evaluations if e.level == "seg"]
    if name is not None:
        return next((e for e in seg if e.version.ref.name == name), None)
    for preferred in PREFERRED:
        found = next((e for e in seg if e.version.ref.name == preferred), None)
        if found is not None:
            return found
    if not seg:
        return None
    return max(seg, key=lambda e: (e.version.format.startswith("wmt"), e.version.row_counts.get("segments", 0),
                                   e.version.ref.name))


def _summary(evaluation: Evaluation, signature: str) -> tuple[str, list]:
    groups = evaluation.groups()
    group = "all" if "all" in groups else groups[0]
    aspect = evaluation.aspects[0]
    rows = [evaluation.cell(group, aspect, s, signature) for s in ("pearson", "kendall")]
    found = [r for r in rows if r is not None]
    text = " · ".join(f"{'r' if r.statistic == 'pearson' else 'τ'} = {signed(r.value)}" for r in found)
    return (f"{text} ({group})" if text else ""), found


def render(ctx: ReportContext, evaluations: list[Evaluation], main: str | None = None, limit: int = 2000,
           seed: int = 0) -> Section:
    evaluation = main_evaluation(evaluations, main)
    if evaluation is None:
        wanted = f"dataset {main!r} has no" if main else "No"
        return Section(SECTION_ID, TITLE, empty(f"{wanted} segment-level evaluation yet.", [
            "assay score --dataset NAME --metric sentbleu", "assay evaluate --dataset NAME --level seg"]))
    version = evaluation.version
    signatures = ctx.palette.order(evaluation.signatures)
    sample = segment_sample(ctx.settings, version, [(evaluation.metric_of(s), s) for s in signatures], limit, seed)
    shown = len(sample.human)
    lead = (f'<p class="lead">Dataset <b>{esc(version.label)}</b>{ctx.notes.marker(ctx.version_note(version))}: '
            f"every segment-level judgment, human score ({esc(sample.human_kind)}) against the metric's score. "
            + (f"Each plot shows the same uniform random sample of <b>{shown:,}</b> of the {sample.total:,} "
               f"segments (seed {seed}) to keep this page small. " if shown < sample.total else
               f"All {sample.total:,} segments are shown. ")
            + "Correlations in the subtitles are the evaluation's, on all segments.</p>")
    figures = []
    for signature in signatures:
        label = ctx.palette.label(signature)
        if signature not in sample.scores:
            figures.append(f'<p class="note">{esc(label)}: {sample.missing.get(signature, 0):,} sampled segments '
                           "have no stored score; not plotted.</p>")
            continue
        text, rows = _summary(evaluation, signature)
        notes = [ctx.notes.signature(signature), ctx.version_note(version), *(ctx.run_note(r) for r in rows)]
        points = [Point(float(x), float(y)) for x, y in zip(sample.scores[signature], sample.human, strict=True)
                  if x == x and y == y]
        chart = scatter(points, colour=ctx.palette.colour(signature), x_label=f"{label} score",
                        y_label=f"human ({sample.human_kind})", heading=label,
                        subheading=f"{text} · {len(points):,} of {sample.total:,} shown",
                        css_class="chart-scatter", element_id=slug("fig-scatter", version.ref.name, signature),
                        tooltip=f"{label} vs human on {version.label} (sha256 {version.ref.digest[:16]}…)\n"
                                f"signature: {signature}\n{text}",
                        radius=2.6 if len(points) <= 300 else 2.0, opacity=0.6 if len(points) <= 300 else 0.4)
        figures.append(figure(chart, f"{esc(label)}{ctx.notes.marker(*notes)}"))
    return Section(SECTION_ID, TITLE, lead + '<div class="grid">' + "".join(figures) + "</div>")
