"""Nightly: each checkpoint's correlation against the time its nightly evaluation finished.

For every suite, dataset version, level and statistic, one chart: x is the time the ledger row
(:class:`assay.catalog.models.SuiteEvaluation`, status completed) finished, y the checkpoint's
correlation as its own evaluation run stored it (:mod:`assay.results.correlations`); checkpoints of one
lineage (the same root ancestor through ``checkpoints.parent_id``, e.g. every fine-tuning of one
pre-trained model) are one connected line. Regressions recorded by :mod:`assay.nightly.regressions`
(significantly worse than the team's best) are drawn with a hollow diamond and listed in a table
with their p-values and tests. The chart shows the mean over groups (``all``), or the groups
themselves where an evaluation has no mean, as the regression check compares them.

Nothing is recomputed. The section is left out of the page when the ledger has no completed row.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from assay.nightly.history import as_utc, nightly_points
from assay.nightly.regressions import list_regressions
from assay.provenance import short
from assay.report.charts import Marker, Point, Series, line_chart
from assay.report.context import LEVEL_NAMES, ReportContext, signed, slug, statistic_name
from assay.report.palette import DARKER, TABLEAU10
from assay.report.sections import Section, figure
from assay.report.svg import esc
from assay.results.correlations import counted, mean_else_each_group

SECTION_ID = "sec-nightly"
TITLE = "Nightly: correlation over time"
COLOURS = TABLEAU10 + DARKER
#: a chart's x axis: days since the first evaluation it shows
DAY_S = 86400.0

ChartKey = tuple[str, str, str, str, str, str]
"""(suite label, dataset label, level, statistic, group, aspect)."""


def _when(moment: datetime) -> str:
    return as_utc(moment).strftime("%Y-%m-%d %H:%M UTC")


def _charted(points: list[dict[str, Any]]) -> dict[ChartKey, list[dict[str, Any]]]:
    """Points by chart: the ``all`` mean where the evaluation has one, else each group."""
    charts: dict[ChartKey, list[dict[str, Any]]] = defaultdict(list)
    for p in mean_else_each_group(points, ("suite", "label", "level", "statistic", "aspect")):
        charts[(p["suite"], p["label"], p["level"], p["statistic"], p["group"], p["aspect"])].append(p)
    return charts


def _tooltip(p: dict[str, Any]) -> str:
    ci = (f", 95% CI [{signed(p['ci_low'])}, {signed(p['ci_high'])}]"
          if p["ci_low"] is not None and p["ci_high"] is not None else "")
    return (f"{p['lineage_text']} · {statistic_name(p['statistic'])} = {signed(p['value'])}{ci}\n"
            f"{p['group']} ({p['aspect']}) · n = {counted(p['n'], p.get('unit'))} · "
            f"evaluated {_when(p['finished_at'])}\n"
            f"dataset: {p['label']} (sha256 {p['version_digest'][:16]}…) · suite {p['suite']}\n"
            f"signature: {p['signature']}\nrun: {p['run_id']}")


def _regression_key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["checkpoint_digest"], r["suite_signature"], r["dataset_version_id"], r["level"], r["group"],
            r["aspect"], r["statistic"])


def _chart(ctx: ReportContext, key: ChartKey, points: list[dict[str, Any]],
           regressions: dict[tuple[Any, ...], dict[str, Any]]) -> str:
    suite, label, level, statistic, group, aspect = key
    start = min(p["finished_at"] for p in points)

    def x_of(p: dict[str, Any]) -> float:
        return (p["finished_at"] - start).total_seconds() / DAY_S

    by_lineage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        by_lineage[p["lineage"]].append(p)
    series, markers, notes = [], [], []
    for i, lineage in enumerate(sorted(by_lineage)):
        chosen = sorted(by_lineage[lineage], key=lambda p: (p["finished_at"], p["checkpoint"]))
        series.append(Series(lineage, COLOURS[i % len(COLOURS)],
                             [Point(x_of(p), p["value"], _tooltip(p)) for p in chosen]))
        for p in chosen:
            notes += [ctx.notes.signature(p["signature"]), ctx.notes.cite(
                "run", p["run_id"], f"evaluate run <code>{esc(p['run_id'])}</code> · nightly evaluation of "
                                    f"{esc(p['lineage_text'])} on {esc(p['label'])}, finished "
                                    f"{esc(_when(p['finished_at']))}")]
            found = regressions.get((p["checkpoint_digest"], p["suite_signature"], p["dataset_version_id"],
                                     p["level"], p["group"], p["aspect"], p["statistic"]))
            if found is not None:
                markers.append(Marker(x_of(p), p["value"], "regression", (
                    f"regression: {p['checkpoint']} {signed(found['value'])} vs the best, "
                    f"{found['baseline'] or short(found['baseline_digest'])} {signed(found['baseline_value'])}; "
                    f"p = {found['p_value']:.3g} ({found['test']})"), shape="diamond", below=True))
    shown = points[0]["version"]  # the chart's dataset version (its label is in the chart's key)
    version = ctx.version(shown.name, shown.number)
    if version is not None:
        notes.append(ctx.version_note(version))
    heading = f"{label} · {LEVEL_NAMES.get(level, level)} · {statistic_name(statistic)} · {group}"
    chart = line_chart(series, x_label=f"days since {_when(start)} (nightly evaluation finished)",
                       y_label=statistic_name(statistic), heading=heading, css_class="chart-nightly",
                       element_id=slug("fig-nightly", suite, label, level, statistic, group, aspect),
                       tooltip=f"correlation over time: {heading} ({aspect}), suite {suite}", markers=markers,
                       width=600, height=320)
    caption = (f"Suite {esc(suite)} · aspect {esc(aspect)}. One line per checkpoint lineage (its root ancestor); "
               f"◇ a recorded regression. {ctx.notes.marker(*notes)}")
    return figure(chart, caption)


def _table(regressions: list[dict[str, Any]]) -> str:
    rows = []
    for r in regressions:
        rows.append(
            f'<tr><th scope="row">{esc(r["checkpoint_lineage"] or short(r["checkpoint_digest"]))}</th>'
            f'<td>{esc(r["baseline_lineage"] or short(r["baseline_digest"]))}</td><td>{esc(r["dataset"])}</td>'
            f'<td>{esc(r["level"])}</td><td>{esc(r["group"])} ({esc(r["aspect"])})</td>'
            f'<td>{esc(statistic_name(r["statistic"]))}</td><td>{signed(r["value"])}</td>'
            f'<td>{signed(r["baseline_value"])}</td><td>{r["p_value"]:.3g}</td><td>{esc(r["test"])}</td>'
            f'<td>{esc((r["created_at"] or "–")[:16].replace("T", " "))}</td></tr>')
    return ('<div class="table-wrap"><table class="data regressions"><caption>Regressions: checkpoints '
            "significantly worse than the team's best on a suite cell (one-sided p-value of the paired test "
            "below alpha; PERM-BOTH, Williams or paired bootstrap, as the evaluation ranks metrics).</caption>"
            "<thead><tr><th>checkpoint</th><th>best (baseline)</th><th>dataset</th><th>level</th><th>group</th>"
            "<th>statistic</th><th>value</th><th>best's value</th><th>p</th><th>test</th><th>recorded</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table></div>")


def render(ctx: ReportContext) -> Section | None:
    """The section, or None when the ledger has no completed evaluation (no nightly runs)."""
    points = nightly_points(ctx.settings)
    if not points:
        return None
    recorded = list_regressions(ctx.settings)
    by_key = {_regression_key(r): r for r in recorded}
    charts = _charted(points)
    by_suite: dict[str, list[ChartKey]] = defaultdict(list)
    for key in sorted(charts):
        by_suite[key[0]].append(key)
    parts = []
    for suite, keys in by_suite.items():
        parts.append(f"<h3>Suite {esc(suite)}</h3>" + '<div class="grid">'
                     + "".join(_chart(ctx, k, charts[k], by_key) for k in keys) + "</div>")
    table = _table(recorded) if recorded else '<p class="note">No regressions recorded.</p>'
    lead = ('<p class="lead">Each checkpoint\'s correlation with the humans as its nightly evaluation stored it, '
            "against the time that evaluation finished; hover over a point for its signature and run.</p>")
    return Section(SECTION_ID, TITLE, lead + "".join(parts) + "<h3>Regressions</h3>" + table)
