"""Leaderboards: ranked correlations with significance clusters, from DuckDB over the results store.

Rows come from the correlation store (:mod:`assay.results.correlations`, written by ``assay
evaluate``); for each metric signature the row of its newest matching run is taken
(:mod:`assay.results.newest_run`: the latest ``created_at``, ties to the larger run id). Ranks follow the value;
clusters follow mt-metrics-eval's rule (a new cluster opens where a better metric wins at p <=
alpha) using the pairwise p-values that the evaluation stored, so a filtered leaderboard (a subset
of metrics) is re-clustered correctly. A leaderboard shows the headline evaluations, or one side
evaluation by its label (:mod:`assay.results.headline`), never the two mixed. Rows computed on
different item sets or dataset versions are never ranked together unless the caller asks for it.
Rows correlated with different human targets (WebNLG's semantics, fluency and grammar aspects) are
never ranked together at all: a correlation with fluency and one with semantics measure different
things, so a leaderboard is always within one aspect. User input reaches SQL only as bound parameters.

Numbers that mean nothing are not ranked: a row marked ``degenerate`` (the metric is constant within
every compared group, or acc-t's calibrated epsilon ties every pair) is listed without a rank or a
cluster. Metrics whose values are equal share a rank. Each row says what its ``n`` counts (``unit``)
and whether it is an official submission (``official``: the shared task's scores, never recomputed)
or a metric Assay scored, so a leaderboard of ``--protocol wmt23`` shows where a metric, or a
checkpoint, would have placed among the submissions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import duckdb
import numpy as np

from assay.checkpoints.labels import labels_for, lineage_text, row_checkpoint
from assay.config import Settings, load_settings
from assay.datasets.names import DatasetRef
from assay.errors import NotFoundError, UsageError
from assay.provenance import short
from assay.results import correlations, significance
from assay.results.correlations import MEAN_GROUP
from assay.results.external_scores import is_external
from assay.results.headline import SIDE_SQL
from assay.results.newest_run import newest_run_sql
from assay.stats import assign_clusters, shared_ranks

DEFAULT_HEADLINE = ("seg", "kendall")
"""The (level, statistic) of a dataset evaluated under no protocol of its own: segment-level Kendall tau."""


def protocol_headlines() -> dict[str, tuple[str, str]]:
    """The (level, statistic) each protocol ranks metrics by: its average. The protocols' modules
    are imported here, not with this one: their kernels cost about 0.3 s of imports, which a
    leaderboard under no protocol never needs (``benchmarks/cli_latency.py``'s leaderboard row)."""
    from assay.jobs import protocol_wmt23, protocol_wmt24

    return {
        protocol_wmt23.PROTOCOL: ("avg", protocol_wmt23.AVERAGE),
        protocol_wmt24.PROTOCOL: ("avg", protocol_wmt24.AVERAGE),
    }


def headline(protocol: str | None = None) -> tuple[str, str, str]:
    """(level, statistic, group) of a dataset's headline leaderboard, the one shown unless another
    is asked for: the protocol's average (:func:`protocol_headlines`), else segment-level Kendall
    (:data:`DEFAULT_HEADLINE`), on the mean over groups. Its rows are each signature's newest run
    (:mod:`assay.results.newest_run`)."""
    level, statistic = protocol_headlines().get(protocol, DEFAULT_HEADLINE) if protocol else DEFAULT_HEADLINE
    return level, statistic, MEAN_GROUP


@dataclass(frozen=True)
class LeaderboardQuery:
    dataset: str
    level: str | None = None
    """None: the protocol's headline level (``avg``), else ``seg``."""
    statistic: str | None = None
    """None: the protocol's headline statistic (its average), else ``kendall``."""
    group: str = MEAN_GROUP
    aspect: str | None = None
    metrics: tuple[str, ...] = ()
    since: datetime | None = None
    allow_mixed: bool = False
    alpha: float = 0.05
    protocol: str | None = None
    """Only rows evaluated under this protocol (``wmt23``, ``wmt24``, ``wmt17``, ...)."""
    side: str | None = None
    """None: the headline evaluations (:mod:`assay.results.headline`); else the side evaluation with this
    label (``rater rater3``, ``human translations included``, ...)."""

    def resolved(self) -> LeaderboardQuery:
        """The query with its level and statistic filled in."""
        level, statistic, _ = headline(self.protocol)
        return replace(self, level=self.level or level, statistic=self.statistic or statistic)


def leaderboard(query: LeaderboardQuery, settings: Settings | None = None,
                con: duckdb.DuckDBPyConnection | None = None) -> list[dict[str, Any]]:
    settings = settings or load_settings()
    query = query.resolved()
    ref = DatasetRef.parse(query.dataset)
    where = ["level = $level", "statistic = $statistic", '"group" = $group', f"({SIDE_SQL}) IS NOT DISTINCT FROM $side"]
    params: dict[str, Any] = {"level": query.level, "statistic": query.statistic, "group": query.group,
                              "side": query.side}
    if query.protocol:
        where.append("protocol = $protocol")
        params["protocol"] = query.protocol
    if ref.version_digest is not None:
        where.append("starts_with(version_digest, $digest)")
        params["digest"] = ref.version_digest
    elif ref.version_number is not None:
        where.append("version_number = $version")
        params["version"] = ref.version_number
    if query.aspect:
        where.append("aspect = $aspect")
        params["aspect"] = query.aspect
    if query.metrics:
        where.append("(list_contains($metrics, metric) OR list_contains($metrics, signature))")
        params["metrics"] = list(query.metrics)
    if query.since:
        where.append("created_at >= $since")
        params["since"] = query.since
    pinned_or_mixed = ref.version_number is not None or ref.version_digest is not None or query.allow_mixed
    version_filter = "TRUE" if pinned_or_mixed else "version_number = (SELECT v FROM newest_version)"
    own = con is None
    con = con or duckdb.connect()
    try:
        source = correlations.sql_source(con, settings, ref.name)
        if source is None:
            raise NotFoundError(f"no evaluations of {ref.name} yet; run `assay evaluate --dataset {ref.name}`")
        rows = _newest_rows(con, source, where, params, version_filter)
        if not rows:
            raise NotFoundError(_nothing_found(con, source, query))
        _refuse_mixed_aspects(rows, query)
        if not query.allow_mixed:
            _refuse_mixed(rows)
        defined = sorted((r for r in rows if _ranked(r)), key=lambda r: -r["value"])
        p_values = (_p_matrix(con, significance.sql_source(con, settings, ref.name), defined, query)
                    if len(defined) > 1 else np.ones((len(defined),) * 2))
    finally:
        if own:
            con.close()
    clusters = assign_clusters(p_values, alpha=query.alpha) if defined else []
    ranks = shared_ranks([r["value"] for r in defined])
    ranked = [{"rank": ranks[i], "cluster": clusters[i], **row} for i, row in enumerate(defined)]
    # unranked: degenerate values (by value), then undefined ones
    unranked = sorted((r for r in rows if not _ranked(r)), key=lambda r: (r["value"] is None, -(r["value"] or 0)))
    ranked += [{"rank": None, "cluster": None, **row} for row in unranked]
    for row in ranked:
        row["created_at"] = row["created_at"].isoformat() if row["created_at"] else None
        row["official"] = is_external(row["signature"])
    _name_checkpoints(ranked, settings)
    return ranked


def _nothing_found(con: duckdb.DuckDBPyConnection, source: str, query: LeaderboardQuery) -> str:
    """Why a leaderboard is empty, naming what does exist at that level: its groups (``--group``),
    aspects (``--aspect``) and statistics (``--stat``), or the levels that were evaluated."""
    wanted = f"no {query.level}-level {query.statistic} correlations for group {query.group!r}"
    if query.aspect:
        wanted += f" and aspect {query.aspect!r}"
    if query.side:
        wanted += f" in the side evaluation {query.side!r}"
    sides = [side for (side,) in con.execute(
        f"SELECT DISTINCT {SIDE_SQL} FROM {source} WHERE level = $level AND {SIDE_SQL} IS NOT NULL ORDER BY 1",
        {"level": query.level}).fetchall()]
    side_note = ("; side evaluations at this level (--side): " + ", ".join(repr(side) for side in sides)
                 if sides and query.side not in sides else "")
    found = con.execute(f'SELECT DISTINCT "group", aspect, statistic FROM {source} WHERE level = $level',
                        {"level": query.level}).fetchall()
    if not found:
        levels = [lv for (lv,) in con.execute(f"SELECT DISTINCT level FROM {source} ORDER BY 1").fetchall()]
        return (f"{wanted} of {query.dataset}: it was evaluated at level(s) {', '.join(levels)} (use --level), or "
                f"run `assay evaluate --dataset {query.dataset} --level {query.level}`{side_note}")
    groups = sorted({g for g, _, _ in found}, key=lambda g: (g != "all", g))
    aspects = sorted({a for _, a, _ in found})
    statistics = sorted({st for _, _, st in found})
    return (f"{wanted} of {query.dataset}; at level {query.level} it has group(s) {', '.join(groups)} (--group), "
            f"aspect(s) {', '.join(aspects)} (--aspect) and statistic(s) {', '.join(statistics)} (--stat), "
            f"e.g. `assay leaderboard --dataset {query.dataset} --level {query.level} --group {groups[0]} "
            f"--aspect {aspects[0]} --stat {statistics[0]}`{side_note}")


def _newest_rows(con: duckdb.DuckDBPyConnection, source: str, where: list[str], params: dict[str, Any],
                 version_filter: str) -> list[dict[str, Any]]:
    """Per (signature, aspect), the row of the newest run that matches ``where``
    (:func:`assay.results.newest_run.newest_run_sql`)."""
    sql = f"""
        WITH rows AS (
            SELECT * FROM {source}
            WHERE {' AND '.join(where)}
        ),
        newest_version AS (SELECT max(version_number) AS v FROM rows)
        SELECT run_id, dataset, version_number, version_digest, level, "group", aspect, metric, signature,
               checkpoint_digest, statistic, value, ci_low, ci_high, n, unit, n_excluded, item_set, protocol, epsilon,
               degenerate, official, protocol_signature, {SIDE_SQL} AS side, created_at
        FROM rows
        WHERE {version_filter}
        {newest_run_sql(("signature", "aspect"))}
        ORDER BY aspect, signature
    """
    cursor = con.execute(sql, params)
    columns = [d[0] for d in cursor.description or []]
    return [dict(zip(columns, r, strict=True)) for r in cursor.fetchall()]


def _ranked(row: dict[str, Any]) -> bool:
    """The row takes part in ranks and clusters: its value is defined and not degenerate."""
    return row["value"] is not None and not row.get("degenerate")


def _name_checkpoints(rows: list[dict[str, Any]], settings: Settings) -> None:
    """Give each learned-metric row its checkpoint's registered name and lineage
    (``checkpoint``: ``name (finetune of parent)``; None for other metrics or unregistered ones).
    The catalog is opened only when some row names a checkpoint (:func:`row_checkpoint`)."""
    digests = {row["signature"]: digest for row in rows if (digest := row_checkpoint(row))}
    labels = labels_for(settings, digests.values())
    for row in rows:
        digest = digests.get(row["signature"])
        label = labels.get(digest) if digest else None
        row["checkpoint"] = lineage_text(label) if label else (f"unregistered {short(digest)}" if digest else None)


def _refuse_mixed_aspects(rows: list[dict[str, Any]], query: LeaderboardQuery) -> None:
    aspects = sorted({r["aspect"] for r in rows})
    if len(aspects) > 1:
        raise UsageError(f"{query.dataset} has correlations with {len(aspects)} human targets ({', '.join(aspects)}), "
                         "which are not comparable; rank within one with --aspect "
                         + " or --aspect ".join(aspects))


def _refuse_mixed(rows: list[dict[str, Any]]) -> None:
    versions = {r["version_number"] for r in rows}
    by_aspect: dict[str, set[str]] = {}
    for r in rows:
        by_aspect.setdefault(r["aspect"], set()).add(r["item_set"])
    if len(versions) > 1:
        raise UsageError(f"these rows come from dataset versions {sorted(versions)}; pin one with NAME@VERSION "
                         "or pass --allow-mixed")
    mixed = [a for a, sets in by_aspect.items() if len(sets) > 1]
    if mixed:
        raise UsageError("these rows were computed on different item sets (some metrics scored fewer segments); "
                         "re-evaluate them together or pass --allow-mixed")


def _p_matrix(con: duckdb.DuckDBPyConnection, source: str | None, ranked: list[dict[str, Any]],
              query: LeaderboardQuery) -> np.ndarray:
    """p[i, j] (i ranked above j): that i beats j, from the evaluation that produced both rows."""
    size = len(ranked)
    p = np.ones((size, size))
    if source is None:
        return p
    runs = sorted({r["run_id"] for r in ranked})
    found = con.execute(
        f"""SELECT run_id, aspect, better, worse, p_value FROM {source}
            WHERE list_contains($runs, run_id) AND level = $level AND statistic = $statistic
              AND "group" = $group""",
        {"runs": runs, "level": query.level, "statistic": query.statistic, "group": query.group},
    ).fetchall()
    lookup = {(run, aspect, better, worse): pv for run, aspect, better, worse, pv in found}
    for i, a in enumerate(ranked):
        for j in range(i + 1, size):
            b = ranked[j]
            if a["run_id"] == b["run_id"] and a["aspect"] == b["aspect"]:
                p[i, j] = lookup.get((a["run_id"], a["aspect"], a["signature"], b["signature"]), 1.0)
    return p


def _distinct(dataset: str, expression: str, where: str, params: dict[str, Any], settings: Settings | None
              ) -> list[Any]:
    """The distinct non-null values of ``expression`` (a quoted column or an expression from Assay's
    code, never a user's) over a dataset's stored correlations matching ``where``."""
    settings = settings or load_settings()
    ref = DatasetRef.parse(dataset)
    with duckdb.connect() as con:
        source = correlations.sql_source(con, settings, ref.name)
        if source is None:
            return []
        return [value for (value,) in con.execute(
            f"SELECT DISTINCT {expression} AS v FROM {source} WHERE ({where}) AND v IS NOT NULL ORDER BY 1",
            params).fetchall()]


def available_versions(dataset: str, settings: Settings | None = None) -> list[tuple[int, str]]:
    """(number, digest) of every version of a dataset with correlations, oldest first."""
    found = _distinct(dataset, "{'number': version_number, 'digest': version_digest}", "TRUE", {}, settings)
    return [(int(v["number"]), str(v["digest"])) for v in found]


def available_levels(dataset: str, settings: Settings | None = None) -> list[str]:
    """The levels a dataset has correlations at."""
    return _distinct(dataset, "level", "TRUE", {}, settings)


def available_statistics(dataset: str, level: str, settings: Settings | None = None) -> list[str]:
    """The statistics with correlations for a dataset at a level."""
    return _distinct(dataset, "statistic", "level = $level", {"level": level}, settings)


def available_sides(dataset: str, level: str, settings: Settings | None = None) -> list[str]:
    """The labels of the side evaluations of a dataset at a level (:mod:`assay.results.headline`)."""
    return _distinct(dataset, f"({SIDE_SQL})", "level = $level", {"level": level}, settings)


def available_groups(dataset: str, level: str, settings: Settings | None = None) -> list[str]:
    """The groups that have correlations for a dataset at a level (``all`` first when present)."""
    found = _distinct(dataset, '"group"', "level = $level", {"level": level}, settings)
    return sorted(found, key=lambda g: (g != "all", g))


def available_aspects(dataset: str, level: str, group: str, settings: Settings | None = None) -> list[str]:
    """The aspects (human targets) with correlations for a dataset, level and group: one leaderboard each."""
    return _distinct(dataset, "aspect", 'level = $level AND "group" = $group', {"level": level, "group": group},
                     settings)
