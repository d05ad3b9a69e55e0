"""What the served pages show, as plain data: the overview of every evaluated dataset and a
leaderboard's filter choices. The pages and their JSON twins render these; a leaderboard's rows are
:func:`assay.query.leaderboard.leaderboard`'s, the same function ``assay leaderboard --json`` prints,
so the web and the CLI cannot disagree.

The overview's cell of a dataset and level is its headline (:mod:`assay.results.headline`: never a
side evaluation): the protocol's average where a protocol evaluated it, else Kendall at segment
level and Pearson at system level, on the mean over groups where there is one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from assay.config import Settings
from assay.errors import NotFoundError
from assay.query.leaderboard import (
    LeaderboardQuery,
    available_aspects,
    available_groups,
    available_levels,
    available_sides,
    available_statistics,
    leaderboard,
)
from assay.results import correlations
from assay.results.correlations import MEAN_GROUP, counted
from assay.results.headline import SIDE_SQL
from assay.stats.levels import STATISTIC_ORDER

__all__ = ["HEAT_STEPS", "LEADERS_SHOWN", "Choices", "OverviewCell", "choices", "heat_class", "history_chart",
           "overview", "report_css", "versions_chart"]

LEADERS_SHOWN = 3
"""How many leaders the overview shows per dataset and level."""

#: the statistic a level's overview cell ranks by, in order of preference
_PREFERRED = {"avg": ("wmt24", "wmt23"), "seg": ("kendall", "acc_t_item", "pearson"),
              "sys": ("pearson", "spa", "pairwise_accuracy")}


@dataclass(frozen=True)
class OverviewCell:
    dataset: str
    level: str
    statistic: str
    group: str
    aspect: str
    leaders: list[dict[str, Any]]
    evaluated: int
    """How many metrics the leaderboard has (its rows)."""

    def as_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "level": self.level, "statistic": self.statistic, "group": self.group,
                "aspect": self.aspect, "evaluated": self.evaluated, "leaders": self.leaders}


def _headline_cells(settings: Settings) -> list[tuple[str, str, str, str, str]]:
    """(dataset, level, statistic, group, aspect) of every headline correlation stored."""
    with duckdb.connect() as con:
        source = correlations.sql_source(con, settings)
        if source is None:
            return []
        return [tuple(r) for r in con.execute(
            f'SELECT DISTINCT dataset, level, statistic, "group", aspect FROM {source} '
            f"WHERE ({SIDE_SQL}) IS NULL ORDER BY 1, 2, 3, 4, 5").fetchall()]


def _pick(found: list[tuple[str, str, str]], level: str) -> tuple[str, str, str]:
    """The (statistic, group, aspect) a level's overview cell shows."""
    def rank(cell: tuple[str, str, str]) -> tuple[int, int, str, str]:
        statistic, group, aspect = cell
        preferred = _PREFERRED.get(level, ())
        order = preferred.index(statistic) if statistic in preferred else len(preferred) + (
            STATISTIC_ORDER.index(statistic) if statistic in STATISTIC_ORDER else len(STATISTIC_ORDER))
        return (order, group != MEAN_GROUP, group, aspect)

    return min(found, key=rank)


def overview(settings: Settings) -> list[OverviewCell]:
    """Per evaluated dataset and level, the headline leaderboard's first :data:`LEADERS_SHOWN` rows."""
    by_cell: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for dataset, level, statistic, group, aspect in _headline_cells(settings):
        by_cell.setdefault((dataset, level), []).append((statistic, group, aspect))
    cells = []
    for (dataset, level), found in by_cell.items():
        statistic, group, aspect = _pick(found, level)
        try:
            rows = leaderboard(LeaderboardQuery(dataset, level, statistic, group, aspect), settings)
        except NotFoundError:
            continue
        cells.append(OverviewCell(dataset, level, statistic, group, aspect, rows[:LEADERS_SHOWN], len(rows)))
    return cells


@dataclass(frozen=True)
class Choices:
    """What a leaderboard's filters offer for its dataset and level."""

    levels: list[str]
    statistics: list[str]
    groups: list[str]
    aspects: list[str]
    sides: list[str]


def choices(settings: Settings, dataset: str, level: str, group: str) -> Choices:
    """The filter choices of a dataset's leaderboard at ``level`` (its stored values, headline and side)."""
    levels = available_levels(dataset, settings)
    if not levels:
        name = dataset.split("@", 1)[0]
        raise NotFoundError(f"no evaluations of {name} yet; run `assay evaluate --dataset {name}`")
    order = {s: i for i, s in enumerate(STATISTIC_ORDER)}
    statistics = sorted(available_statistics(dataset, level, settings), key=lambda s: (order.get(s, len(order)), s))
    return Choices(levels, statistics, available_groups(dataset, level, settings),
                   available_aspects(dataset, level, group, settings), available_sides(dataset, level, settings))


def report_css() -> str:
    """The report's stylesheet (:mod:`assay.report.stylesheet`), served as ``/static/report.css``."""
    from assay.report.stylesheet import CSS

    return CSS


HEAT_STEPS = 10
"""The heat map's colour steps: a blind-spot ratio from 0 (red) to 1 or more (green), in tenths.
The report colours continuously with an inline style, which the app's Content-Security-Policy
forbids; the app uses one class per step (``heat-0`` .. ``heat-10`` in ``assay.css``)."""


def heat_class(ratio: float | None, penalised: bool) -> str:
    """The CSS class of a heat-map cell (``ns``: the humans do not clearly penalise the error, or no ratio)."""
    if ratio is None or not penalised:
        return "heat ns"
    return f"heat heat-{round(HEAT_STEPS * min(max(ratio, 0.0), 1.0))}"


def history_chart(record: dict[str, Any]) -> str:
    """A checkpoint's nightly history (:func:`assay.checkpoints.record.checkpoint_record`) as one SVG
    line chart per (suite, dataset version, level, statistic, group, aspect), the mean over groups
    where an evaluation has one: its lineage's checkpoints as one line in the order their evaluations
    finished, this checkpoint's points in their own colour, and its recorded regressions as hollow
    diamonds; "" without history."""
    from datetime import datetime

    from assay.report.charts import Marker, Point, Series, line_chart
    from assay.results.correlations import mean_else_each_group

    points = mean_else_each_group(record["lineage_nightly"], ("suite", "label", "level", "statistic", "aspect"))
    if not any(p["checkpoint_digest"] == record["digest"] for p in points):
        return ""
    regressions = {(r["suite_signature"], r["dataset"], r["level"], r["group"], r["aspect"], r["statistic"]): r
                   for r in record["regressions"]}
    charts: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for p in points:
        charts.setdefault((p["suite"], p["label"], p["level"], p["statistic"], p["group"], p["aspect"]), []).append(p)
    out: list[str] = []
    for (suite, label, level, statistic, group, aspect), found in sorted(charts.items()):
        mine = [p for p in found if p["checkpoint_digest"] == record["digest"]]
        if not mine:
            continue
        start = min(datetime.fromisoformat(p["finished_at"]) for p in found)

        def day(p: dict[str, Any], start: datetime = start) -> float:
            return (datetime.fromisoformat(p["finished_at"]) - start).total_seconds() / 86400.0

        def point(p: dict[str, Any], statistic: str = statistic) -> Point:
            return Point(day(p), p["value"], (
                f"{p['checkpoint']} · {p['finished_at'][:16].replace('T', ' ')} UTC · {statistic} = {p['value']:.4f} · "
                f"n = {counted(p['n'], p['unit'])}\nsignature: {p['signature']}\nrun: {p['run_id']}"))

        lineage = Series(f"lineage {found[0]['lineage']}", "#8c959f", [point(p) for p in found])
        own = Series(record["name"], "#0969da", [], loose=[])
        markers = []
        for p in mine:
            own.points.append(point(p))
            hit = regressions.get((p["suite_signature"], label, level, group, aspect, statistic))
            if hit is not None:
                markers.append(Marker(day(p), p["value"], "regression", (
                    f"regression: {p['value']:.4f} vs the best, {hit['baseline'] or hit['baseline_digest'][:12]} "
                    f"{hit['baseline_value']:.4f}; p = {hit['p_value']:.3g} ({hit['test']})"), below=True))
        heading = f"{label} · {level} · {statistic} · {group} ({aspect}) · suite {suite}"
        out.append(line_chart([lineage, own], x_label=f"days since {found[0]['finished_at'][:10]}",
                              y_label=statistic, heading=heading, css_class="chart-nightly",
                              element_id=f"nightly-{len(out)}", tooltip=heading, markers=markers, width=600,
                              height=300, line_labels=False))
    return "".join(out)


def versions_chart(result: dict[str, Any]) -> str:
    """One metric's value on each dataset version (:func:`assay.query.versions.across_versions`) as an
    SVG line over the version numbers, each point with its interval, rank and signature on hover;
    "" with fewer than two versions to draw."""
    from assay.report.charts import Point, Series, line_chart

    points = []
    for v in result["versions"]:
        row = v["row"]
        if row is None or row["value"] is None:
            continue
        interval = (f" [{row['ci_low']:.4f}, {row['ci_high']:.4f}]" if row["ci_low"] is not None
                    and row["ci_high"] is not None else "")
        rank = "not ranked" if row["rank"] is None else f"rank {row['rank']} of {v['ranked_among']}"
        points.append(Point(float(v["version_number"]), row["value"], (
            f"{v['label']} · {result['statistic']} = {row['value']:.4f}{interval} · {rank} · "
            f"n = {counted(row['n'], row['unit'])}\nsignature: {row['signature']}\nrun: {row['run_id']}")))
    if len(points) < 2:
        return ""
    heading = (f"{result['shown']} on {result['dataset']} · {result['level']} · {result['statistic']} · "
               f"{result['group']}")
    return line_chart([Series(result["shown"], "#0969da", points)], x_label="dataset version",
                      y_label=result["statistic"], heading=heading, css_class="chart-versions",
                      element_id="versions-chart", tooltip=heading, width=600, height=300, line_labels=False)
