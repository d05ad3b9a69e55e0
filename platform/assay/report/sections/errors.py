"""Section: what metrics miss on MQM data, from ``assay errors`` (:mod:`assay.results.error_analysis`).

For each MQM dataset, its error matrix (:func:`assay.query.error_matrix.error_matrix`: the newest
analysed version, one error level, each metric's newest run at it, no stale verdicts):

* a **heat map** of error cells (rows) x metrics (columns). A cell is the blind-spot ratio, the
  metric's standardised drop per error over the humans' (:mod:`assay.mqm.sensitivity`, after the
  within-item design of Freitag et al. 2021, "Experts, Errors, and Context"): green near 1 (the
  metric minds the error as much as the raters), red near 0 (it does not notice it). The humans'
  own drop per error, in MQM points, is the yardstick column. Cells the humans do not clearly
  penalise are grey. Ranked blind spots are marked, and so is a change against a parent checkpoint;
* the **worst disagreements**: output pairs the raters clearly order one way and the metric the
  other, one per item (:mod:`assay.mqm.disagreements`), each output with its raters' error spans
  highlighted, the source with the spans marked on it (omissions), and the reference.
"""

from __future__ import annotations

from typing import Any

from assay.config import Settings
from assay.query.error_matrix import error_matrix, order_cells
from assay.report.context import ReportContext, signed
from assay.report.sections import Section, empty, legend
from assay.report.spans import error_label, highlight
from assay.report.svg import esc
from assay.results import error_analysis

SECTION_ID = "sec-errors"
TITLE = "What metrics miss: MQM error analysis"
DISAGREEMENTS_SHOWN = 5  # per metric; `assay errors --top` stores more
VERDICT_MARKS = {"improved": "↑", "worse": "↓"}


def analysed_signatures(settings: Settings) -> list[str]:
    """Every metric signature with a stored error analysis (for the report's palette)."""
    table = error_analysis.SENSITIVITY.read(settings).select(["signature"])
    return sorted(set(table.column("signature").to_pylist()))


def _interval(row: dict[str, Any], name: str, decimals: int = 3) -> str:
    low, high = row.get(f"{name}_low"), row.get(f"{name}_high")
    bounds = f" [{signed(low, decimals)}, {signed(high, decimals)}]" if low is not None and high is not None else ""
    return signed(row.get(name), decimals) + bounds


def _run_note(ctx: ReportContext, row: dict[str, Any]) -> int:
    return ctx.notes.cite("run", row["run_id"], (
        f"errors run <code>{esc(row['run_id'])}</code> · code <code>{esc(row['code_version'])}</code> · "
        f"{row['n_resamples']:,} bootstrap resamples over items, seed {row['seed']}"))


def _heat_colour(ratio: float) -> str:
    """Red at 0 (blind), yellow at 0.5, green at 1 or more (as sensitive as the raters)."""
    share = min(max(ratio, 0.0), 1.0)
    return f"hsl({round(120 * share)}, 70%, 84%)"


def _cell_tip(ctx: ReportContext, row: dict[str, Any]) -> str:
    lines = [f"{ctx.palette.label(row['signature'])} on {row['cell']} ({row['level']})",
             f"blind-spot ratio {_interval(row, 'ratio', 2)} (metric drop / human drop, standardised)",
             f"metric drop per error {_interval(row, 'metric_drop', 4)} in its own units; "
             f"standardised {_interval(row, 'metric_drop_std')}",
             f"humans: {_interval(row, 'human_drop')} points per error; standardised "
             f"{_interval(row, 'human_drop_std')}" + ("" if row["human_penalises"] else " (not clearly penalised)"),
             f"{row['outputs']:,} outputs with the error; {row['items_varying']:,} items where it varies"]
    if row.get("blind_spot_rank") is not None:
        lines.append(f"blind spot #{row['blind_spot_rank']} of this metric")
    elif row.get("undetermined"):
        lines.append(f"ratio undetermined: {row['undetermined']}")
    if row.get("parent_signature"):
        lines.append(f"against parent {row['parent_signature']}: {row.get('verdict') or '?'}, change in "
                     f"standardised drop {_interval(row, 'change_std')}")
    lines += [f"signature: {row['signature']}", f"run: {row['run_id']} · {row['n_resamples']:,} resamples, "
              f"seed {row['seed']}"]
    return "\n".join(lines)


def _heat_cell(ctx: ReportContext, row: dict[str, Any] | None) -> str:
    if row is None:
        return '<td class="heat none">–</td>'
    ratio = row.get("ratio")
    marks = ""
    if row.get("blind_spot_rank") is not None and row["blind_spot_rank"] <= 3:
        marks += f'<span class="spot">▼{row["blind_spot_rank"]}</span>'
    if row.get("verdict") in VERDICT_MARKS:
        marks += f'<span class="verdict {row["verdict"]}">{VERDICT_MARKS[row["verdict"]]}</span>'
    if not row["human_penalises"] or ratio is None:
        return f'<td class="heat ns" title="{esc(_cell_tip(ctx, row))}">{esc(signed(ratio, 2))}{marks}</td>'
    return (f'<td class="heat" style="background:{_heat_colour(ratio)}" title="{esc(_cell_tip(ctx, row))}">'
            f"{esc(signed(ratio, 2))}{marks}</td>")


def _heat_map(ctx: ReportContext, dataset: str, level: str, rows: list[dict[str, Any]]) -> str:
    signatures = ctx.palette.order({r["signature"] for r in rows})
    at = {(r["cell"], r["signature"]): r for r in rows}
    head = "".join(f'<th title="{esc(s)}"><i class="swatch" style="background:{ctx.palette.colour(s)}"></i>'
                   f"{esc(ctx.palette.label(s))}{ctx.notes.marker(ctx.notes.signature(s))}</th>" for s in signatures)
    body = []
    for cell in order_cells(rows):
        found = [at[(cell, s)] for s in signatures if (cell, s) in at]
        yardstick = max(found, key=lambda r: r["outputs"])
        human = (f'<td title="{esc("humans: MQM points per error, 95% CI " + _interval(yardstick, "human_drop"))}">'
                 f"{esc(signed(yardstick['human_drop'], 2))}</td>")
        cells = "".join(_heat_cell(ctx, at.get((cell, s))) for s in signatures)
        body.append(f'<tr><th scope="row">{esc(cell)}</th><td>{yardstick["outputs"]:,}</td>{human}{cells}</tr>')
    runs = sorted({_run_note(ctx, r) for r in rows})
    return (f'<div class="table-wrap"><table class="data heatmap" data-dataset="{esc(dataset)}" '
            f'data-level="{esc(level)}"><caption>Blind-spot ratio per error {esc(level)} '
            f"(columns: metrics; 1 = as sensitive as the raters, 0 = blind; ▼k: the metric's k-th blind spot; "
            f"↑/↓: better/worse than its parent checkpoint). Hover a cell for the drops, intervals and signature."
            f"{ctx.notes.marker(*runs)}</caption><thead><tr><th>error {esc(level)}</th><th>outputs</th>"
            f"<th>humans: MQM pts per error</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def _errors_list(errors: list[dict[str, Any]]) -> str:
    """The errors not marked in the candidate: those without a span, and those marked in the source."""
    items = []
    for error in errors:
        in_source = error.get("side") == "source" and error.get("start") is not None
        where = "marked in the source" if in_source else "no span"
        items.append(f"<li>{esc(error_label(error))} ({where})</li>")
    return f'<ul class="errs">{"".join(items)}</ul>' if items else ""


def _output_cell(row: dict[str, Any], side: str) -> str:
    errors = row[f"{side}_errors"]
    marked, unplaced = highlight(row[f"{side}_candidate"], errors)
    others = unplaced + [e for e in errors if e.get("side") == "source"]
    scores = (f"{esc(row[f'{side}_system'])} · MQM {signed(row[f'{side}_human'], 2)} · metric "
              f"{signed(row[f'{side}_metric'], 3)}")
    return (f'<td class="text {side}"><div class="who">{scores}</div><div class="cand">{marked}</div>'
            f"{_errors_list(others)}</td>")


def _source_cell(row: dict[str, Any]) -> str:
    """The source with the source-side spans of both outputs (omissions: the words left out), each
    labelled with its output's system, and the references below it."""
    errors = [{**e, "system": row[f"{side}_system"]} for side in ("preferred", "other")
              for e in row[f"{side}_errors"] if e.get("side") == "source"]
    marked, _ = highlight(row["source"] or "", errors, side="source")
    more = (row.get("reversed_in_item") or 1) - 1
    who = f"item {esc(row['item'])}" + (f" · {more} more reversed pair{'s' * (more > 1)}" if more else "")
    references = "".join(f'<div class="who">reference</div><div class="ref">{esc(r)}</div>'
                         for r in row.get("references") or [])
    return f'<td class="text source"><div class="who">{who}</div>{marked}{references}</td>'


def _disagreements(ctx: ReportContext, rows: list[dict[str, Any]], runs: dict[str, dict[str, Any]]) -> str:
    body = []
    for signature in ctx.palette.order({r["signature"] for r in rows}):
        mine = sorted((r for r in rows if r["signature"] == signature), key=lambda r: r["rank"])[:DISAGREEMENTS_SHOWN]
        colour = ctx.palette.colour(signature)
        notes = [ctx.notes.signature(signature)]
        if mine and mine[0]["run_id"] in runs:
            notes.append(_run_note(ctx, runs[mine[0]["run_id"]]))
        body.append(f'<tr class="divider"><td colspan="5"><i class="swatch" style="background:{colour}"></i>'
                    f"{esc(ctx.palette.label(signature))}{ctx.notes.marker(*notes)}"
                    "</td></tr>")
        for row in mine:
            tip = (f"item {row['item']} · humans prefer {row['preferred_system']} by {row['human_gap']:.2f} MQM points;"
                   f" the metric prefers {row['other_system']} by {row['metric_gap_std']:.2f} within-item SDs\n"
                   f"signature: {signature}\nrun: {row['run_id']}")
            body.append(f'<tr class="pair" title="{esc(tip)}"><td>{row["rank"]}</td>'
                        f'{_source_cell(row)}{_output_cell(row, "preferred")}{_output_cell(row, "other")}'
                        f"<td>{row['human_gap']:.2f} / {row['metric_gap_std']:.2f}</td></tr>")
    return ('<div class="table-wrap"><table class="data disagreements"><caption>Worst disagreements per metric: '
            "pairs of outputs of one source that the raters clearly order one way (by at least 1 point) and "
            "the metric the other, worst first (human gap × the metric's gap in within-item standard deviations), "
            "one per source. Marked spans are the raters' errors: "
            '<mark class="sev-major">Major</mark> <mark class="sev-minor">Minor</mark> '
            '<mark class="sev-other">other</mark>; in the source, the errors marked there (an omission marks the '
            "words left out); hover a span for its category, severity and rater.</caption><thead><tr><th>#</th>"
            "<th>source</th><th>humans prefer</th><th>metric prefers</th><th>gap: MQM / metric SD</th></tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>")


def render(ctx: ReportContext) -> Section:
    datasets = sorted(set(error_analysis.SENSITIVITY.read(ctx.settings).column("dataset").to_pylist()))
    if not datasets:
        return Section(SECTION_ID, TITLE, empty("No error analysis yet: it needs an MQM dataset with error spans.", [
            "assay ingest ../shared/data/mqm-wmt23-ende", "assay score --dataset mqm_wmt23_ende --metric chrf",
            "assay errors --dataset mqm_wmt23_ende --metric chrf"]))
    parts = ['<p class="lead">Which errors does a metric miss? Among outputs of the same source segment, how much '
             "lower the metric scores an output per error of each category, against how much lower the raters "
             "score it (<code>assay errors</code>; a within-item fit with a bootstrap over items). Below each map, "
             "the pairs the metric orders most unlike the raters, with the raters' error spans.</p>"]
    for dataset in datasets:
        matrix = error_matrix(ctx.settings, dataset)
        rows = [row for cell in matrix["cells"] for row in cell["metrics"].values()]
        signatures = {m["signature"] for m in matrix["metrics"]}
        version = ctx.version(dataset, matrix["version_number"])
        note = ctx.notes.marker(ctx.version_note(version)) if version is not None else ""
        parts.append(f'<h3 id="errors-{esc(dataset)}">{esc(matrix["label"])}{note} '
                     f'<span class="aspect">aspect {esc(matrix["aspect"])}</span></h3>')
        parts.append(legend(ctx, signatures))
        parts.append(_heat_map(ctx, dataset, matrix["by"], rows))
        if matrix["elsewhere"]:
            parts.append(f'<p class="note">Analysed by another error level only (not in this map, which shows '
                         f'one level): {esc(", ".join(ctx.palette.label(s) for s in matrix["elsewhere"]))}.</p>')
        if matrix["disagreements"]:
            parts.append(_disagreements(ctx, matrix["disagreements"], {r["run_id"]: r for r in rows}))
    return Section(SECTION_ID, TITLE, "".join(parts))
