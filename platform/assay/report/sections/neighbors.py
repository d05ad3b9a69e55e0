"""Section 4: BLEU Neighbors' coverage vs Spearman ρ as the evidence bounds a and b vary."""

from __future__ import annotations

from assay.metrics.bleu_neighbors import DEFAULT_A, DEFAULT_B
from assay.report.charts import Marker, Point, Series, line_chart
from assay.report.collect import VersionInfo
from assay.report.context import ReportContext, signed
from assay.report.neighbors import GRID_A, GRID_B, NeighborGrid, NeighborPoint, huse_version, neighbors_grid
from assay.report.palette import SWEEP
from assay.report.sections import Section, empty, figure
from assay.report.svg import esc

SECTION_ID = "sec-neighbors"
TITLE = "BLEU Neighbors: coverage vs agreement"
PAPER = Marker(0.99, 0.325, "paper", "Ethayarajh & Sadigh (2020), Table 1: coverage 0.99, Spearman 0.325, "
               "MSE 0.0213 (tau 0.08, a 5, b 0.66; smoothing not stated)", "star")
INDEPENDENT = Marker(0.94, 0.269, "independent", "Independent (REFERENCE_NUMBERS.md): BLEU* with add-one "
                     "smoothing, coverage 0.94, Spearman 0.269, MSE 0.0226 (tau 0.08, a 5, b 0.66)", "diamond",
                     below=True)


def _tip(p: NeighborPoint, version: VersionInfo) -> str:
    return (f"a = {p.a}, b = {p.b}: coverage {p.coverage:.3f} ({p.defined}/{p.n} defined), "
            f"Spearman ρ {signed(p.spearman)}, MSE {'–' if p.mse is None else f'{p.mse:.4f}'}\n"
            f"signature: {p.signature}\ndataset: {version.label} (sha256 {version.ref.digest[:16]}…)")


def _table(ctx: ReportContext, grid: NeighborGrid) -> str:
    head = "".join(f"<th>b = {b}</th>" for b in GRID_B)
    body = []
    for a in GRID_A:
        cells = []
        for b in GRID_B:
            p = grid.point(a, b)
            if p is None:
                cells.append("<td>–</td>")
                continue
            default = ' class="default"' if (a, b) == (DEFAULT_A, DEFAULT_B) else ""
            cells.append(f'<td{default} title="{esc(_tip(p, grid.version))}">{p.coverage:.2f} / '
                         f"{esc(signed(p.spearman))}</td>")
        body.append(f"<tr><th>a = {a}</th>{''.join(cells)}</tr>")
    return (f'<table class="data grid-table"><caption>coverage / Spearman ρ (leave-one-out); the outlined cell is '
            f"the paper's default</caption><thead><tr><th></th>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
            "</table>")


def render(ctx: ReportContext, versions: list[VersionInfo]) -> Section:
    version = huse_version(versions)
    if version is None:
        return Section(SECTION_ID, TITLE, empty("HUSE is not ingested, so there is nothing to sweep.", [
            "assay ingest ../shared/data/huse"]))
    grid = neighbors_grid(ctx.settings, version)
    series = []
    for i, a in enumerate(GRID_A):
        line = [Point(p.coverage, p.spearman, _tip(p, version))
                for p in sorted(grid.points, key=lambda p: (p.b, p.coverage)) if p.a == a and p.spearman is not None]
        series.append(Series(f"a = {a}", SWEEP[min(i, len(SWEEP) - 1)], line))
    signature = (grid.point(DEFAULT_A, DEFAULT_B) or grid.points[0]).signature
    notes = [ctx.notes.signature(signature), ctx.version_note(version),
             ctx.notes.cite("reference", "bleu-neighbors", "Ethayarajh &amp; Sadigh (2020), “BLEU Neighbors: A "
                            "Reference-less Approach to Automatic Evaluation”, Table 1 (HUSE summarization); "
                            "independent numbers from <code>design/REFERENCE_NUMBERS.md</code>.")]
    chart = line_chart(series, x_label="coverage (share of sentences with a defined prediction)",
                       y_label="Spearman ρ with human quality", heading=f"{version.label}: leave-one-out, "
                       f"BLEU* kernel, τ = {grid.tau}; points: b = {', '.join(str(b) for b in GRID_B)}",
                       css_class="chart-neighbors", element_id="fig-neighbors-tradeoff",
                       tooltip=f"BLEU Neighbors trade-off on {version.label}\nsignature (defaults): {signature}",
                       markers=[PAPER, INDEPENDENT], width=720, height=380, line_labels=False)
    keys = "".join(f'<span class="key"><i style="background:{s.colour}"></i>{esc(s.label)}</span>' for s in series)
    lead = (f'<p class="lead">Computed while this report was built with <code>BleuNeighbors.leave_one_out</code> on '
            f"<b>{esc(version.label)}</b>: each of the {grid.points[0].n} sentences is predicted from the other "
            f"{grid.points[0].n - 1}, quality = mean label / 5. A prediction is defined only when a ≤ |N| ≤ b·|S| "
            "(equation 3), so coverage and agreement trade off. Markers: the paper's number (★, smoothing not "
            "stated) and the independent one (◇, add-one smoothing, the default here).</p>")
    caption = f"One line per minimum neighbour count a; along a line b grows. {ctx.notes.marker(*notes)}"
    return Section(SECTION_ID, TITLE, lead + f'<div class="legend">{keys}</div>' + figure(chart, caption, "fig-wide")
                   + _table(ctx, grid))
