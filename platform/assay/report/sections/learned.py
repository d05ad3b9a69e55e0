"""Learned metrics (BLEURT, Sellam et al. 2020): how each registered checkpoint trained, and how
robust the trained metrics are, in three parts:

(a) training: the validation curve (Kendall τ on the held-out items against the step) of every
    registered checkpoint, its best step marked (the paper keeps "the checkpoint that performs
    best on a held-out validation set", appendix B.1), with its lineage (operation and parent);
(b) quality drift (§5.2, Figure 2's diagonal): correlation on the test sample against the skew
    factor α, one line per variant, baselines dashed;
(c) WebNLG (§5.3, Figure 3): correlation on the held-out side against the share of systems or
    inputs given to training, per aspect and split kind;

and, after (a), the hyper-parameter sweeps (:mod:`assay.report.sections.sweeps`).

(a) reads the catalog's checkpoint lineage; (b) and (c) read the newest run of each experiment in
the robustness store (:mod:`assay.results.robustness`; the experiments are
:mod:`assay.training.robustness`). Nothing is recomputed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import select

from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint
from assay.datasets.names import VersionRef
from assay.provenance import short
from assay.report.charts import Marker, Point, Series, line_chart
from assay.report.context import ReportContext, signed, slug, statistic_name
from assay.report.palette import DARKER, TABLEAU10
from assay.report.sections import Section, empty, figure
from assay.report.svg import esc
from assay.results import robustness as robustness_results
from assay.results.correlations import counted
from assay.training import robustness as rb

SECTION_ID = "sec-learned"
TITLE = "Learned metrics: training, quality drift, WebNLG"
#: checkpoints per training-curve chart, and charts at most (the newest checkpoints first)
CURVES_PER_CHART = 6
MAX_CURVE_CHARTS = 4
COLOURS = TABLEAU10 + DARKER


# --- (a) training ------------------------------------------------------------------------------------


def checkpoint_curves(ctx: ReportContext) -> list[dict[str, Any]]:
    """Every registered checkpoint, oldest first: name, digest, operation, parent name, data,
    best step and τ, and the validation curve ``[(step, τ)]`` (empty when none was recorded)."""
    with session_scope(ctx.settings) as session:
        rows = list(session.scalars(select(Checkpoint).order_by(Checkpoint.created_at, Checkpoint.id)))
        names = {r.id: r.name for r in rows}
        out = []
        for row in rows:
            lineage = dict(row.lineage or {})
            curve = [(int(p["step"]), float(p["val_kendall_tau"])) for p in lineage.get("validation_curve") or []
                     if p.get("val_kendall_tau") is not None]
            out.append({"name": row.name, "digest": row.digest, "operation": lineage.get("operation"),
                        "parent": names.get(row.parent_id) if row.parent_id is not None else None,
                        "datasets": [str(d.get("label")) + (f" ({d['aspect']})" if d.get("aspect") else "")
                                     for d in lineage.get("datasets") or []],
                        "best_step": lineage.get("best_step"), "best_tau": lineage.get("best_kendall_tau"),
                        "run_id": row.run_id, "curve": curve})
    return out


def _lineage(c: dict[str, Any]) -> str:
    text = str(c["operation"] or "registered")
    return text + (f" of {c['parent']}" if c["parent"] else "") + (f" on {', '.join(c['datasets'])}"
                                                                   if c["datasets"] else "")


def _checkpoint_note(ctx: ReportContext, c: dict[str, Any]) -> int:
    run = f" · run <code>{esc(c['run_id'])}</code>" if c["run_id"] else ""
    return ctx.notes.cite("checkpoint", c["digest"], f"checkpoint <b>{esc(c['name'])}</b> · sha256 "
                                                     f"<code>{esc(c['digest'])}</code> · {esc(_lineage(c))}{run}")


def _curve_chart(ctx: ReportContext, chunk: list[dict[str, Any]], index: int) -> str:
    first = index * CURVES_PER_CHART + 1
    series, markers, notes = [], [], []
    for i, c in enumerate(chunk):
        colour = COLOURS[i % len(COLOURS)]
        points = [Point(step, tau, f"{c['name']} · step {step}: validation Kendall τ {signed(tau)}")
                  for step, tau in c["curve"]]
        series.append(Series(c["name"], colour, points))
        best = dict(c["curve"]).get(int(c["best_step"])) if c["best_step"] is not None else None
        if best is not None:
            markers.append(Marker(float(c["best_step"]), best, "", f"{c['name']}: best step {c['best_step']}, "
                                  f"validation Kendall τ {signed(best)} (exported)", shape="star"))
        notes.append(_checkpoint_note(ctx, c))
    chart = line_chart(series, x_label="optimizer step", y_label="validation Kendall τ",
                       heading=f"Validation curves: checkpoints {first}–{first + len(chunk) - 1}, newest first",
                       css_class="chart-curves",
                       element_id=slug("fig-curves", index), tooltip="validation Kendall τ against the step",
                       markers=markers, width=640, height=320)
    return figure(chart, "Kendall τ on the held-out items at each validation; ★ the best step, whose weights "
                         f"the checkpoint holds. {ctx.notes.marker(*notes)}", "fig-wide")


def _training(ctx: ReportContext) -> str:
    heading = "<h3>Training: validation curves and lineage</h3>"
    checkpoints = checkpoint_curves(ctx)
    if not checkpoints:
        return heading + empty("No registered checkpoints yet.", [
            "assay train --stage finetune --data wmt16 --steps 2000   # fine-tune on ratings, registers the result",
            "assay checkpoints register PATH   # or register an existing checkpoint folder"])
    rows = []
    for c in reversed(checkpoints):
        tau = signed(c["best_tau"]) if c["best_tau"] is not None else "–"
        rows.append(f"<tr><th scope=\"row\">{esc(c['name'])}{ctx.notes.marker(_checkpoint_note(ctx, c))}</th>"
                    f"<td>{esc(c['operation'] or '–')}</td><td>{esc(c['parent'] or '–')}</td>"
                    f"<td>{esc(', '.join(c['datasets']) or '–')}</td><td>{esc(c['best_step'] or '–')}</td>"
                    f"<td>{tau}</td><td>{len(c['curve'])}</td></tr>")
    table = ('<div class="table-wrap"><table class="data checkpoints"><caption>Registered checkpoints, newest '
             "first, with their lineage.</caption><thead><tr><th>checkpoint</th><th>operation</th><th>parent</th>"
             "<th>trained on</th><th>best step</th><th>best validation τ</th><th>validations</th></tr></thead>"
             f"<tbody>{''.join(rows)}</tbody></table></div>")
    with_curves = [c for c in reversed(checkpoints) if c["curve"]]
    shown = with_curves[: CURVES_PER_CHART * MAX_CURVE_CHARTS]
    charts = "".join(_curve_chart(ctx, shown[i:i + CURVES_PER_CHART], i // CURVES_PER_CHART)
                     for i in range(0, len(shown), CURVES_PER_CHART))
    more = (f'<p class="note">{len(with_curves) - len(shown)} older curves are not drawn; the table lists every '
            "checkpoint.</p>" if len(with_curves) > len(shown) else "")
    if not with_curves:
        charts = '<p class="note">No checkpoint records a validation curve (registered from folders).</p>'
    return heading + charts + more + table


# --- (b), (c) robustness experiments -----------------------------------------------------------------


def _tooltip(r: dict[str, Any], x_name: str) -> str:
    ci = (f", 95% CI [{signed(r['ci_low'])}, {signed(r['ci_high'])}]"
          if r["ci_low"] is not None and r["ci_high"] is not None else "")
    lines = [f"{r['variant']} · {x_name} · {statistic_name(r['statistic'])} = {signed(r['value'])}{ci}",
             f"{r['aspect']} ({r['group']}) · n = {counted(r['n'], r.get('unit'))} · test {r['test_dataset']} "
             f"(sha256 {r['test_digest'][:16]}…)"]
    if r["checkpoint"]:
        trained = f"trained on {r['train_dataset']} ({r['n_train']:,} pairs)" if r["train_dataset"] else \
            "not fine-tuned here (scored as it is)"
        lines.append(f"checkpoint {r['checkpoint']} ({short(r['checkpoint_digest'])}) · {trained}")
    lines += [f"signature: {r['signature']}", f"evaluate run {r['evaluate_run_id']} · robustness run {r['run_id']}"]
    return "\n".join(lines)


def _notes(ctx: ReportContext, rows: list[dict[str, Any]]) -> list[int]:
    notes = []
    for r in rows:
        tested = VersionRef.parse(r["test_dataset"], r["test_digest"])
        version = ctx.version(tested.name, tested.number)
        if version is not None:
            notes.append(ctx.version_note(version))
        notes.append(ctx.notes.signature(r["signature"]))
    first = rows[0]
    notes.append(ctx.notes.cite("run", first["run_id"], (
        f"robustness run <code>{esc(first['run_id'])}</code> · experiment {esc(first['experiment'])} "
        f"<code>{esc(first['experiment_id'])}</code> on {esc(first['dataset'])} (sha256 "
        f"<code>{esc(first['version_digest'])}</code>) · code <code>{esc(first['code_version'])}</code> · "
        f"{first['n_resamples']:,} bootstrap resamples, seed {first['seed']}")))
    return notes


def _colours(rows: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(kind, variant) -> colour, fixed for an experiment: learned variants first, then baselines."""
    keys = sorted({(r["kind"], r["variant"]) for r in rows}, key=lambda k: (k[0] != "learned", k[1]))
    return {k: COLOURS[i % len(COLOURS)] for i, k in enumerate(keys)}


def _series(rows: list[dict[str, Any]], colours: dict[tuple[str, str], str], x_of: Any, x_text: Any) -> list[Series]:
    """One line per variant (learned: solid; baselines: dashed)."""
    by_variant: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["value"] is not None:
            by_variant[(r["kind"], r["variant"])].append(r)
    out = []
    for key in (k for k in colours if k in by_variant):
        points = sorted((Point(x_of(r), r["value"], _tooltip(r, x_text(r))) for r in by_variant[key]),
                        key=lambda p: p.x)
        out.append(Series(key[1], colours[key], points, dashed=key[0] == "baseline"))
    return out


def _experiments(kind: str, ctx: ReportContext) -> list[list[dict[str, Any]]]:
    """The newest run's rows of each experiment of ``kind``, newest experiment first."""
    latest = rb.latest_results(robustness_results.read(ctx.settings, kind))
    return sorted(latest.values(), key=lambda rows: rows[0]["created_at"], reverse=True)


def _drift(ctx: ReportContext) -> str:
    heading = "<h3>Quality drift: learned metrics against α (§5.2)</h3>"
    experiments = _experiments("drift", ctx)
    if not experiments:
        return heading + empty("No quality-drift experiment with training yet.", [
            "assay robustness drift --dataset wmt17 --variant no-pretraining=encoder "
            "--variant pretrained=CHECKPOINT --steps 2000"])
    figures = []
    for rows in experiments:
        first = rows[0]
        for statistic in rb.STATISTICS:
            chosen = [r for r in rows if r["statistic"] == statistic]
            if not chosen:
                continue
            series = _series(chosen, _colours(rows), lambda r: r["alpha"], lambda r: f"α = {r['alpha']:g}")
            title = f"{first['dataset']} · {statistic_name(statistic)} · experiment {first['experiment_id']}"
            chart = line_chart(series, x_label="α (train skewed low, test skewed high)",
                               y_label=statistic_name(statistic), heading=title, css_class="chart-learned-drift",
                               element_id=slug("fig-learned-drift", first["experiment_id"], statistic),
                               tooltip=f"learned metrics under quality drift: {title}", width=560, height=320)
            figures.append(figure(chart, "Each variant is fine-tuned on the train sample of α and evaluated on the "
                                         "test sample of the same α; dashed: baselines on the same test samples. "
                                         f"{ctx.notes.marker(*_notes(ctx, chosen))}"))
    lead = ('<p class="lead">Segment-level agreement with the humans on each test sample (mean over groups), '
            "newest run of each experiment.</p>")
    return heading + lead + '<div class="grid">' + "".join(figures) + "</div>"


def _webnlg(ctx: ReportContext) -> str:
    heading = "<h3>WebNLG: learned metrics against the share of training data (§5.3)</h3>"
    experiments = _experiments("webnlg", ctx)
    if not experiments:
        return heading + empty("No WebNLG experiment with training yet.", [
            "assay ingest PATH/webnlg2017-human-eval",
            "assay robustness webnlg --dataset webnlg2017 --variant no-pretraining=encoder "
            "--variant pretrained=CHECKPOINT --steps 500"])
    parts = []
    for rows in experiments:
        first = rows[0]
        figures = []
        colours = _colours(rows)
        keys = sorted({(r["statistic"] != "kendall", r["statistic"], r["split_by"], r["aspect"]) for r in rows})
        for _, statistic, by, aspect in keys:
            chosen = [r for r in rows if (r["statistic"], r["split_by"], r["aspect"]) == (statistic, by, aspect)]
            series = _series(chosen, colours, lambda r: r["share_actual"],
                             lambda r: f"share {r['share']:g} ({r['share_actual']:.2f} of the {r['split_by']}s)")
            title = f"{aspect} · split by {by} · {statistic_name(statistic)}"
            chart = line_chart(series, x_label=f"share of {by}s given to training", y_label=statistic_name(statistic),
                               heading=title, css_class="chart-learned-webnlg",
                               element_id=slug("fig-learned-webnlg", first["experiment_id"], statistic, by, aspect),
                               tooltip=f"WebNLG: {title}", width=420, height=290, line_labels=False)
            figures.append(figure(chart, ctx.notes.marker(*_notes(ctx, chosen))))
        legend = _legend(colours)
        parts.append(f"<h4>{esc(first['dataset'])} · experiment <code>{esc(first['experiment_id'])}</code></h4>"
                     + legend + '<div class="grid">' + "".join(figures) + "</div>")
    lead = ('<p class="lead">Each aspect is its own task: a variant is fine-tuned on that aspect of the train side '
            "and evaluated on the held-out systems or inputs; at share 0 checkpoints are scored as they are. "
            "Dashed: baselines on the same test side.</p>")
    return heading + lead + "".join(parts)


def _legend(colours: dict[tuple[str, str], str]) -> str:
    items = [f'<span class="key"><i style="background:{colour}"></i>{esc(variant)}'
             f"{' (baseline, dashed)' if kind == 'baseline' else ''}</span>"
             for (kind, variant), colour in colours.items()]
    return '<div class="legend">' + "".join(items) + "</div>"


def render(ctx: ReportContext) -> Section:
    from assay.report.sections import sweeps

    return Section(SECTION_ID, TITLE, _training(ctx) + sweeps.render_part(ctx) + _drift(ctx) + _webnlg(ctx))
