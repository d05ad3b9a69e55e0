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
from assay.results.correlations import MEAN_GROUP
from assay.results.headline import SIDE_SQL
from assay.stats.levels import STATISTIC_ORDER

__all__ = ["LEADERS_SHOWN", "Choices", "OverviewCell", "choices", "overview"]

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
