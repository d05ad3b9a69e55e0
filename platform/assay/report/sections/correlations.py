"""Section 1: correlation with human judgments per group, with confidence intervals, ranks and
significance clusters, for every evaluated dataset, level and statistic.

Each panel says what its ``n`` counts (the rows' ``unit``: segments, items, systems or pairs). A
degenerate value (one that cannot separate metrics: a metric constant within every compared group,
or acc-t whose calibrated threshold ties every pair) is drawn without a rank and listed under the
chart with its reason; acc-t's calibrated tie thresholds are listed beside it."""

from __future__ import annotations

from assay.report.charts import Bar, BarRow, Panel, correlation_bars
from assay.report.collect import Evaluation, skipped_by_runs
from assay.report.context import LEVEL_NAMES, ReportContext, slug, statistic_name
from assay.report.sections import Section, empty, figure, legend
from assay.report.svg import esc

SECTION_ID = "sec-correlations"
TITLE = "Correlation with human judgments"


def _row_order(evaluation: Evaluation, aspect: str, statistic: str) -> list[str]:
    """Signatures by their rank on the mean over groups (else on the first group), then by name."""
    groups = evaluation.groups(aspect)
    anchor = groups[0] if groups else "all"

    def key(signature: str) -> tuple[int, str]:
        row = evaluation.cell(anchor, aspect, statistic, signature)
        return (row.rank if row is not None and row.rank is not None else 10**6, signature)

    present = {r.signature for r in evaluation.rows if r.aspect == aspect and r.statistic == statistic}
    return sorted(present, key=key)


def _chart(ctx: ReportContext, evaluation: Evaluation, aspect: str, statistic: str) -> str:
    order = _row_order(evaluation, aspect, statistic)
    rows = [BarRow(s, ctx.palette.label(s), ctx.palette.colour(s)) for s in order]
    panels = []
    for group in evaluation.groups(aspect):
        bars = {}
        sizes: set[tuple[int, str]] = set()
        for signature in order:
            row = evaluation.cell(group, aspect, statistic, signature)
            if row is None:
                continue
            sizes.add((row.n, row.unit or _unit_before_recorded(evaluation.level)))
            bars[signature] = Bar(row.value, row.ci_low, row.ci_high, row.rank, row.cluster, ctx.row_tooltip(row))
        size = "n = {:,} {}".format(*max(sizes)) if sizes else ""
        panels.append(Panel("all (mean over groups)" if group == "all" else group, size, bars))
    version = evaluation.version
    name = f"{version.label} {LEVEL_NAMES[evaluation.level]}, {aspect}, {statistic_name(statistic)}"
    chart = correlation_bars(
        panels, rows, css_class="chart-corr", element_id=slug("fig-corr", version.ref.name, evaluation.level, aspect,
                                                               statistic),
        label=name, tooltip=f"{name} (dataset sha256 {version.ref.digest[:16]}…; runs {', '.join(evaluation.run_ids)})")
    runs = sorted({ctx.run_note(r) for r in evaluation.rows if r.statistic == statistic})
    heading = f"<h4>{esc(statistic_name(statistic))} <span class=\"aspect\">aspect {esc(aspect)}</span></h4>"
    caption = (f"{esc(statistic_name(statistic))} on {esc(version.label)}, {esc(LEVEL_NAMES[evaluation.level])}. "
               f"{ctx.notes.marker(ctx.version_note(version), *runs)}")
    return heading + figure(chart, caption, "fig-wide") + _meaning_notes(ctx, evaluation, aspect, statistic)


def _unit_before_recorded(level: str) -> str:
    """What ``n`` counted in rows stored before the unit was: systems at system level, else segments."""
    return "systems" if level == "sys" else "segments"


def _meaning_notes(ctx: ReportContext, evaluation: Evaluation, aspect: str, statistic: str) -> str:
    """Under a chart: the values that mean nothing, with why, and acc-t's calibrated thresholds."""
    rows = sorted((r for r in evaluation.rows if r.aspect == aspect and r.statistic == statistic
                   and r.group != "all"), key=lambda r: (r.group, r.signature))
    parts = []
    degenerate = [r for r in rows if r.degenerate]
    if degenerate:
        parts.append('<p class="note">Degenerate, not ranked: ' + "; ".join(
            f"{esc(ctx.palette.label(r.signature))} ({esc(r.group)}): {esc(r.degenerate or '')}" for r in degenerate)
            + ".</p>")
    calibrated = [r for r in rows if r.epsilon is not None]
    if calibrated:
        parts.append('<p class="note">Calibrated tie threshold ε (metric score differences up to ε count as ties): '
                     + "; ".join(f"{esc(ctx.palette.label(r.signature))} ({esc(r.group)}) ε = {r.epsilon:.6g}"
                                 for r in calibrated) + ".</p>")
    return "".join(parts)


def _evaluation_block(ctx: ReportContext, evaluation: Evaluation) -> str:
    version = evaluation.version
    parts = [f'<h3 id="{slug("corr", version.ref.name, evaluation.level)}">{esc(version.label)} · '
             f"{esc(LEVEL_NAMES[evaluation.level])}</h3>", legend(ctx, evaluation.signatures)]
    skipped = skipped_by_runs(ctx.settings, evaluation.run_ids)
    if skipped:
        hint = ("score the full test sets with <code>assay score --scope outputs</code>" if evaluation.level == "sys"
                else "score every judged segment")
        parts.append(f'<p class="note">Left out by the run for incomplete scores ({hint}): '
                     + "; ".join(f"<code>{esc(s)}</code>" for s in skipped) + "</p>")
    for aspect in evaluation.aspects:
        for statistic in evaluation.statistics:
            if any(r.aspect == aspect and r.statistic == statistic for r in evaluation.rows):
                parts.append(_chart(ctx, evaluation, aspect, statistic))
    return "".join(parts)


def render(ctx: ReportContext, evaluations: list[Evaluation]) -> Section:
    if not evaluations:
        body = empty("No evaluations yet.", [
            "assay ingest PATH", "assay score --dataset NAME --metric sentbleu",
            "assay evaluate --dataset NAME --level seg"])
        return Section(SECTION_ID, TITLE, body)
    lead = ("<p class=\"lead\">For each dataset and level, the latest evaluation (per statistic, the newest "
            "<code>assay evaluate</code> run on the newest evaluated version). One panel per group (language pair "
            "or task); <i>all</i> is the plain mean over groups, as in the WMT and BLEURT tables. Bars run from 0 to "
            "the value; whiskers show the 95% bootstrap confidence interval. “#r cK” is the rank and the "
            "significance cluster (from the run's pairwise significance tests); values in the top cluster are "
            "<b>bold</b>. Hover over a bar for its numbers and signature.</p>")
    return Section(SECTION_ID, TITLE, lead + "".join(_evaluation_block(ctx, e) for e in evaluations))
