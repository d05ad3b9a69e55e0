"""One metric (or checkpoint) across a dataset's versions: its headline value on each version that
has one, beside the version's leaderboard rank, so a re-released or corrected dataset shows how a
number moved. ``assay leaderboard --across-versions --json`` prints it and the served ``/versions``
page renders it.

Each version's row is that version's pinned leaderboard (:func:`assay.query.leaderboard.leaderboard`
on ``NAME@VERSION``: the headline evaluation unless a side evaluation is asked for, each signature's
newest run), so the values are the leaderboard's. A version where the metric was not evaluated is
listed with the reason.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from assay.config import Settings
from assay.datasets.names import DatasetRef
from assay.errors import NotFoundError, UsageError
from assay.query.compare import matches
from assay.query.leaderboard import LeaderboardQuery, available_versions, leaderboard

__all__ = ["across_versions"]


def across_versions(query: LeaderboardQuery, metric: str, settings: Settings) -> dict[str, Any]:
    """``metric`` (a metric name, signature or checkpoint name) on every version of ``query``'s
    dataset (its version, if pinned, is ignored) at its level, statistic, group and aspect;
    ``shown`` names it as the leaderboard does (the checkpoint's lineage, else the metric)."""
    query = query.resolved()
    name = DatasetRef.parse(query.dataset).name
    versions = available_versions(name, settings)
    if not versions:
        raise NotFoundError(f"no evaluations of {name} yet; run `assay evaluate --dataset {name}`")
    rows = []
    for number, digest in versions:
        entry: dict[str, Any] = {"version_number": number, "version_digest": digest, "label": f"{name}@{number}",
                                 "row": None, "ranked_among": None, "note": None}
        try:
            board = leaderboard(replace(query, dataset=f"{name}@{number}"), settings)
        except (NotFoundError, UsageError) as exc:
            entry["note"] = str(exc)
            rows.append(entry)
            continue
        found = [r for r in board if matches(r, metric)]
        if len(found) > 1:
            raise UsageError(f"{metric!r} names {len(found)} rows of {name}@{number} ("
                             + ", ".join(r["signature"] for r in found) + "); name one by its signature")
        if not found:
            entry["note"] = f"{metric} was not evaluated on this version at this level, statistic and group"
        else:
            entry["row"] = found[0]
            entry["ranked_among"] = sum(1 for r in board if r["rank"] is not None)
        rows.append(entry)
    if not any(e["row"] for e in rows):
        raise NotFoundError(f"{metric!r} has no {query.level}-level {query.statistic} value on any version of "
                            f"{name} (group {query.group}); see `assay leaderboard --dataset {name}`")
    first = next(e["row"] for e in rows if e["row"])
    return {"dataset": name, "metric": metric, "shown": first.get("checkpoint") or first["metric"],
            "level": query.level, "statistic": query.statistic, "group": query.group, "aspect": query.aspect,
            "side": query.side, "versions": rows}
