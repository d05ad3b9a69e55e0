"""Section 6: model selection with hybrid systems (BERTScore, Zhang et al. 2020, §4 and appendix F.2).

One table per dataset version: the newest ``assay select`` run's Hits@1, MRR and mean human-score
gap for every metric, per group and aspect, best Hits@1 first.
"""

from __future__ import annotations

from typing import Any

from assay.datasets.names import VersionRef
from assay.report.context import ReportContext
from assay.report.sections import Section, empty
from assay.report.svg import esc
from assay.results import model_selection
from assay.results.newest_run import newest_run_rows

SECTION_ID = "sec-selection"
TITLE = "Model selection with hybrid systems"


def latest_selection_rows(ctx: ReportContext) -> list[dict[str, Any]]:
    """Rows of the newest ``assay select`` run of each dataset version."""
    return newest_run_rows(model_selection.read(ctx.settings), ("dataset", "version_number"))


def _table(ctx: ReportContext, rows: list[dict[str, Any]]) -> str:
    first = rows[0]
    version = ctx.version(first["dataset"], first["version_number"])
    where = esc(VersionRef.from_columns(first).label)
    if version is not None:
        where += ctx.notes.marker(ctx.version_note(version))
    run = ctx.notes.cite("run", first["run_id"], (
        f"select run <code>{esc(first['run_id'])}</code> · code <code>{esc(first['code_version'])}</code> · "
        f"{first['n_hybrid']:,} hybrids, {first['n_candidates']} candidates, {first['n_trials']:,} draws, "
        f"seed {first['seed']}"))
    body = []
    ordered = sorted(rows, key=lambda r: (r["group"], r["aspect"], -r["hits_at_1"], -r["mrr"]))
    for row in ordered:
        signature = row["signature"]
        tip = (f"{row['metric']} · {row['group']} ({row['aspect']}) · Hits@1 {row['hits_at_1']:.4f} · "
               f"MRR {row['mrr']:.4f} · Diff {row['mean_abs_human_diff']:.4f}\nsignature:\n{signature}")
        colour = ctx.palette.colour(signature)
        body.append(
            f'<tr title="{esc(tip)}"><td>{esc(row["group"])}</td><td>{esc(row["aspect"])}</td>'
            f'<th scope="row"><i class="swatch" style="background:{colour}"></i>{esc(ctx.palette.label(signature))}'
            f'{ctx.notes.marker(ctx.notes.signature(signature))}</th>'
            f'<td>{row["hits_at_1"]:.3f}</td><td>{row["mrr"]:.3f}</td><td>{row["mean_abs_human_diff"]:.4f}</td>'
            f'<td>{row["n_systems"]}</td><td>{row["n_items"]}</td></tr>')
    return (f'<h3>{where}</h3><div class="table-wrap"><table class="data selection">'
            f"<caption>Newest <code>assay select</code> run{ctx.notes.marker(run)}: hybrid systems mix real "
            "systems' outputs segment by segment; the metric picks its best among random candidate sets. "
            "Hits@1: share of picks that are the humans' best; MRR: mean reciprocal human rank of the pick; "
            "Diff: mean human-score gap to the humans' best (lower is better).</caption>"
            "<thead><tr><th>group</th><th>aspect</th><th>metric</th><th>Hits@1</th><th>MRR</th><th>Diff</th>"
            f"<th>systems</th><th>items</th></tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def render(ctx: ReportContext) -> Section:
    rows = latest_selection_rows(ctx)
    if not rows:
        return Section(SECTION_ID, TITLE, empty("No model selection yet.", [
            "assay score --dataset webnlg2017 --metric chrf", "assay select --dataset webnlg2017"]))
    by_version: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in rows:
        by_version.setdefault((row["dataset"], row["version_number"]), []).append(row)
    lead = ('<p class="lead">Which metric would pick the best system? BERTScore §4 protocol (10K hybrids, '
            "100 candidates, 100K draws by default). Hover over a row for its signature.</p>")
    return Section(SECTION_ID, TITLE, lead + "".join(_table(ctx, by_version[k]) for k in sorted(by_version)))
