"""Two metrics or checkpoints side by side on one dataset, level and statistic: each group's two
values, their difference, and the paired significance test the evaluation stored for them
(:mod:`assay.results.significance`: PERM-BOTH, Williams or the paired bootstrap, as the evaluation
ranks metrics). ``assay compare --json`` prints it and the served compare page renders it.

Each group's rows are that group's leaderboard (:func:`assay.query.leaderboard.leaderboard`: the
headline evaluation unless a side evaluation is asked for, each signature's newest run), so the
values are the leaderboard's. A test exists only for two rows of one evaluation run; two rows from
different runs are shown with no p-value and the reason.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from assay.config import Settings
from assay.datasets.names import DatasetRef
from assay.errors import NotFoundError, UsageError
from assay.query.leaderboard import LeaderboardQuery, available_groups, leaderboard
from assay.results import significance

__all__ = ["compare", "matches"]

DIFFERENT_RUNS = "evaluated in different runs, so no paired test; evaluate both in one `assay evaluate` run"


def matches(row: dict[str, Any], ref: str) -> bool:
    """A leaderboard row is ``ref``: its metric name, its signature, or its checkpoint's registered name."""
    checkpoint = row.get("checkpoint") or ""
    return ref in (row["metric"], row["signature"]) or checkpoint == ref or checkpoint.startswith(f"{ref} (")


def _one(rows: list[dict[str, Any]], ref: str, group: str) -> dict[str, Any] | None:
    found = [r for r in rows if matches(r, ref)]
    if len(found) > 1:
        raise UsageError(f"{ref!r} names {len(found)} rows in group {group} ("
                         + ", ".join(r["signature"] for r in found) + "); name one by its signature")
    return found[0] if found else None


def _stored_test(settings: Settings, dataset: str, better: dict[str, Any], worse: dict[str, Any], level: str,
                 statistic: str) -> tuple[float | None, str | None]:
    """The p-value that ``better`` truly correlates better than ``worse``, and its test, from the
    evaluation run that produced both rows; (None, None) where that run stored no test of the pair."""
    found = significance.stored_tests(settings, dataset, better["run_id"], level).get(
        (better["group"], better["aspect"], statistic, better["signature"], worse["signature"]))
    return (float(found[0]), str(found[1])) if found else (None, None)


def _side(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row.get(k) for k in ("metric", "signature", "checkpoint", "value", "ci_low", "ci_high", "n", "unit",
                                    "rank", "cluster", "degenerate", "run_id")}


def compare(query: LeaderboardQuery, first: str, second: str, settings: Settings) -> dict[str, Any]:
    """``first`` against ``second`` (metric names, signatures or checkpoint names) in every group of
    ``query``'s dataset and level that has both (``query.group`` is ignored): values, difference
    (first minus second), the stored one-sided p-value that the better one is better, its test, and
    whether it is below ``query.alpha``."""
    query = query.resolved()
    assert query.level is not None and query.statistic is not None
    if first == second:
        raise UsageError("compare two different metrics or checkpoints")
    name = DatasetRef.parse(query.dataset).name
    groups, label = [], None
    for group in available_groups(query.dataset, query.level, settings):
        try:
            rows = leaderboard(replace(query, group=group), settings)
        except NotFoundError:
            continue
        a, b = _one(rows, first, group), _one(rows, second, group)
        if a is None or b is None:
            continue
        label = label or f"{a['dataset']}@{a['version_number']}"
        entry: dict[str, Any] = {"group": group, "aspect": a["aspect"], "first": _side(a), "second": _side(b),
                                 "difference": None, "better": None, "p_value": None, "test": None,
                                 "significant": None, "note": None}
        if a["value"] is not None and b["value"] is not None:
            entry["difference"] = a["value"] - b["value"]
            better, worse = (a, b) if a["value"] >= b["value"] else (b, a)
            entry["better"] = "first" if better is a else "second"
            if a["run_id"] != b["run_id"]:
                entry["note"] = DIFFERENT_RUNS
            elif a.get("degenerate") or b.get("degenerate"):
                entry["note"] = f"a degenerate value is not tested: {a.get('degenerate') or b.get('degenerate')}"
            else:
                entry["p_value"], entry["test"] = _stored_test(settings, name, better, worse, query.level,
                                                               query.statistic)
                if entry["p_value"] is None:
                    entry["note"] = "the evaluation stored no test of this pair"
                else:
                    entry["significant"] = entry["p_value"] < query.alpha
        groups.append(entry)
    if not groups:
        raise NotFoundError(f"no group of {query.dataset} has both {first!r} and {second!r} at level {query.level} "
                            f"({query.statistic}" + (f", side evaluation {query.side!r}" if query.side else "")
                            + "); see `assay leaderboard`")
    return {"dataset": label, "level": query.level, "statistic": query.statistic, "side": query.side,
            "alpha": query.alpha, "first": first, "second": second, "groups": groups}
