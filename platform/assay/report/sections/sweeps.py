"""The sweeps part of the learned-metrics section: each ``assay sweep`` study plotted as parameter
against validation Kendall τ, one chart per searched parameter, completed trials filled and pruned
trials (at the τ of the validation they were stopped at) in grey, the best trial labelled; and a
table of its trials. The median pruning rule is Google Vizier's (Golovin et al., 2017); the sampler
is TPE (Bergstra et al., 2011), both as Optuna (Akiba et al., 2019) implements them.

Reads the studies beside the catalog (:mod:`assay.sweeps.study`) and never creates their storage.
"""

from __future__ import annotations

import math
from typing import Any

from assay.provenance import short
from assay.report.charts import Point, scatter
from assay.report.context import ReportContext, signed, slug
from assay.report.sections import empty, figure
from assay.report.svg import esc

#: sweeps drawn (the newest first); the rest are listed by name
MAX_SWEEPS = 4
COMPLETE = "#1f77b4"
PRUNED = "#9a9a9a"


def studies(ctx: ReportContext) -> list[dict[str, Any]]:
    """Every sweep's summary (:func:`assay.sweeps.study.sweep_summary`), newest first."""
    from assay.sweeps.study import list_sweeps, load_study, storage_exists, sweep_summary

    if not storage_exists(ctx.settings):
        return []
    listed = sorted(list_sweeps(ctx.settings), key=lambda s: str(s["started"] or ""), reverse=True)
    return [{**sweep_summary(load_study(ctx.settings, s["sweep"])), "started": s["started"]} for s in listed]


def _tau(trial: dict[str, Any]) -> float | None:
    """A completed trial's best validation τ; a pruned trial's τ at its last validation."""
    if trial["state"] == "COMPLETE":
        return trial["value"]
    if trial["state"] == "PRUNED" and trial["intermediate"]:
        return trial["intermediate"][max(trial["intermediate"])]
    return None


def _axis(values: list[Any]) -> tuple[list[float], str]:
    """x positions for a parameter's values: log10 for a positive range spanning ≥ 10x, the index
    of a choice for text or booleans, the value otherwise."""
    if any(isinstance(v, str | bool) for v in values):
        choices = sorted({str(v) for v in values})
        legend = " · ".join(f"{i}={c}" for i, c in enumerate(choices))
        return [float(choices.index(str(v))) for v in values], legend
    numbers = [float(v) for v in values]
    if numbers and min(numbers) > 0 and max(numbers) / min(numbers) >= 10:
        return [math.log10(v) for v in numbers], "log10"
    return numbers, ""


def _chart(sweep: dict[str, Any], name: str, index: int) -> str | None:
    trials = [t for t in sweep["trials"] if name in t["params"] and _tau(t) is not None]
    if not trials:
        return None
    xs, scale = _axis([t["params"][name] for t in trials])
    best = (sweep["best"] or {}).get("number")
    points = []
    for x, t in zip(xs, trials, strict=True):
        tau = _tau(t)
        assert tau is not None
        state = "pruned" if t["state"] == "PRUNED" else "completed"
        tip = (f"trial {t['number']} ({state} after {len(t['intermediate'])} validation(s), {t['steps']} steps): "
               f"{name} = {t['params'][name]}, validation Kendall τ {signed(tau)}")
        points.append(Point(x, tau, tip, label=f"best: trial {t['number']}" if t["number"] == best else None,
                            colour=PRUNED if t["state"] == "PRUNED" else None))
    x_label = f"{name} ({scale})" if scale == "log10" else (f"{name}: {scale}" if scale else name)
    return scatter(points, colour=COMPLETE, x_label=x_label, y_label="validation Kendall τ",
                   heading=f"{sweep['sweep']}: {name}", subheading=f"{len(trials)} trial(s); grey: pruned",
                   css_class="chart-sweep", element_id=slug("fig-sweep", sweep["sweep"], name, index),
                   tooltip=f"{name} against validation Kendall τ, one point per trial", radius=4, opacity=0.85)


def _table(sweep: dict[str, Any]) -> str:
    rows = []
    for t in sweep["trials"]:
        values = ", ".join(f"{k} = {v:.3g}" if isinstance(v, float) else f"{k} = {v}" for k, v in t["params"].items())
        retry = f" (retry of {t['retry_of']})" if t.get("retry_of") is not None else ""
        rows.append(f"<tr><th scope=\"row\">{t['number']}</th><td>{esc(t['state'].lower() + retry)}</td>"
                    f"<td>{esc(values)}</td><td>{signed(_tau(t))}</td><td>{len(t['intermediate'])}</td>"
                    f"<td>{esc(t['steps'] if t['steps'] is not None else '–')}</td>"
                    f"<td>{esc(t['checkpoint'] or t.get('failure') or '–')}</td></tr>")
    return (f'<div class="table-wrap"><table class="data sweep-trials"><caption>Sweep {esc(sweep["sweep"])}: '
            f"{len(sweep['trials'])} trial(s), {sweep['steps_trained']} steps trained in all (space "
            f"<code>{esc(short(str(sweep['space_digest'])))}</code>).</caption><thead><tr><th>trial</th><th>state</th>"
            "<th>values</th><th>validation τ</th><th>validations</th><th>steps</th><th>checkpoint</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def render_part(ctx: ReportContext) -> str:
    heading = "<h3>Sweeps: parameter against validation τ</h3>"
    found = studies(ctx)
    if not found:
        return heading + empty("No sweeps yet.", [
            "assay sweep run sweep.toml --name lr --trials 6   # Optuna over the fine-tuning stage (README)"])
    out = [heading]
    for index, sweep in enumerate(found[:MAX_SWEEPS]):
        names = sorted({k for t in sweep["trials"] for k in t["params"]})
        charts = [c for c in (_chart(sweep, n, index) for n in names) if c is not None]
        best = sweep["best"]
        caption = (f"Sweep <b>{esc(sweep['sweep'])}</b>: each point a trial, at its best validation Kendall τ "
                   "(completed, blue) or at the validation the median rule stopped it at (pruned, grey). "
                   + (f"Best: trial {best['number']}, τ {signed(best['value'])}, checkpoint "
                      f"<code>{esc(best['checkpoint'])}</code>." if best else "No trial has completed yet."))
        out += [figure("".join(charts), caption, "fig-wide") if charts else "", _table(sweep)]
    if len(found) > MAX_SWEEPS:
        out.append(f'<p class="note">Older sweeps not drawn: {esc(", ".join(s["sweep"] for s in found[MAX_SWEEPS:]))}'
                   " (<code>assay sweep show NAME</code>).</p>")
    return "".join(out)
