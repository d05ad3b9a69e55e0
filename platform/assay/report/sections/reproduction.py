"""Section 7: the papers' tables, with Assay's numbers above the published and independent ones."""

from __future__ import annotations

from assay.report.collect import Evaluation
from assay.report.context import ReportContext
from assay.report.sections import Section, empty
from assay.report.svg import esc
from assay.report.tables import DASH, TABLES, TableSpec, assay_cells, find_evaluation, reference_cells

SECTION_ID = "sec-reproduction"
TITLE = "Reproduction tables"
SOURCES = {
    "bleurt-table2": "Sellam, Das &amp; Parikh (2020), “BLEURT: Learning Robust Metrics for Text Generation”, "
                     "Table 2; independent numbers from <code>design/REFERENCE_NUMBERS.md</code>.",
    "bertscore-table1": "Zhang et al. (2020), “BERTScore: Evaluating Text Generation with BERT”, Table 1 "
                        "(absolute r); independent numbers from <code>design/REFERENCE_NUMBERS.md</code>.",
}


def _assay_rows(ctx: ReportContext, spec: TableSpec, evaluation: Evaluation | None) -> tuple[str, str]:
    """(table rows, note below the table)."""
    if evaluation is None:
        return "", empty(f"Assay has not evaluated {spec.dataset} at {spec.level} level yet, so its rows are "
                         "missing.", spec.produce.split(" && "))
    rows = []
    for signature in ctx.palette.order(evaluation.signatures):
        cells = assay_cells(spec, evaluation, signature)
        if all(c.text == DASH for c in cells):
            continue
        tds = []
        for cell in cells:
            tip = "\n\n".join(ctx.row_tooltip(r) for r in cell.rows)
            attr = f' title="{esc(tip)}"' if tip else ""
            tds.append(f'<td{attr}>{esc(cell.text)}</td>')
        first = next((r for c in cells for r in c.rows), None)
        notes = ctx.row_notes(first) if first is not None else [ctx.notes.signature(signature)]
        colour = ctx.palette.colour(signature)
        rows.append(f'<tr class="assay"><th scope="row"><i class="swatch" style="background:{colour}"></i>'
                    f'{esc(ctx.palette.label(signature))}{ctx.notes.marker(*notes)}</th>'
                    f'<td class="src">Assay</td>{"".join(tds)}</tr>')
    note = "" if rows else empty(f"The evaluation of {evaluation.version.label} has none of these columns.", [])
    return "".join(rows), note


def _table(ctx: ReportContext, spec: TableSpec, evaluations: list[Evaluation]) -> str:
    evaluation = find_evaluation(spec, evaluations)
    assay_rows, note = _assay_rows(ctx, spec, evaluation)
    source = ctx.notes.cite("reference", spec.key, SOURCES[spec.key])
    refs = "".join(
        f'<tr class="ref ref-{esc(r.source)}" title="{esc(r.note)}"><th scope="row">{esc(r.label)}</th>'
        f'<td class="src">{esc(r.source)}</td>' + "".join(f"<td>{esc(c)}</td>" for c in reference_cells(spec, r))
        + "</tr>" for r in spec.references)
    head = "".join(f"<th>{esc(c)}</th>" for c in spec.columns)
    divider = f'<tr class="divider"><td colspan="{len(spec.columns) + 2}">reference numbers</td></tr>'
    where = (f" Assay: {esc(evaluation.version.label)}{ctx.notes.marker(ctx.version_note(evaluation.version))}."
             if evaluation else "")
    return (f'<h3>{esc(spec.title)}</h3><div class="table-wrap"><table class="data repro" id="{esc(spec.key)}">'
            f"<caption>{esc(spec.caption)}{where} Reference rows{ctx.notes.marker(source)} are labelled "
            "<i>paper</i> (printed in the paper) or <i>independent</i> (computed outside Assay on the same data)."
            "</caption><thead><tr><th>metric</th>"
            f"<th>source</th>{head}</tr></thead><tbody>{assay_rows}{divider}{refs}</tbody></table></div>{note}")


def render(ctx: ReportContext, evaluations: list[Evaluation]) -> Section:
    lead = ('<p class="lead">The papers\' layouts, filled with what Assay computed (“–”: not computed). Hover over '
            "an Assay cell for its confidence interval, rank and signature.</p>")
    return Section(SECTION_ID, TITLE, lead + "".join(_table(ctx, spec, evaluations) for spec in TABLES))
