"""The served pages' addresses, built in one place: every link and permalink a page shows comes
from here, its parameters URL-encoded (a name from data can never break out of its parameter)."""

from __future__ import annotations

from urllib.parse import urlencode

__all__ = ["checkpoint", "compare", "dataset", "errors", "home", "leaderboard", "versions"]


def _to(path: str, **params: object) -> str:
    shown = {k: str(v) for k, v in params.items() if v not in (None, "")}
    return path + ("?" + urlencode(shown) if shown else "")


def home() -> str:
    return "/"


def leaderboard(dataset: str, *, level: str | None = None, stat: str | None = None, group: str | None = None,
                aspect: str | None = None, protocol: str | None = None, side: str | None = None) -> str:
    return _to("/leaderboard", dataset=dataset, level=level, stat=stat, group=group, aspect=aspect, protocol=protocol,
               side=side)


def compare(dataset: str, first: str, second: str, *, level: str | None = None, stat: str | None = None,
            aspect: str | None = None, side: str | None = None) -> str:
    return _to("/compare", dataset=dataset, first=first, second=second, level=level, stat=stat, aspect=aspect,
               side=side)


def checkpoint(ref: str) -> str:
    return _to("/checkpoint", ref=ref)


def dataset(ref: str) -> str:
    return _to("/dataset", ref=ref)


def errors(dataset: str, *, by: str | None = None) -> str:
    return _to("/errors", dataset=dataset, by=by)


def versions(dataset: str, metric: str, *, level: str | None = None, stat: str | None = None,
             group: str | None = None, aspect: str | None = None, side: str | None = None) -> str:
    return _to("/versions", dataset=dataset, metric=metric, level=level, stat=stat, group=group, aspect=aspect,
               side=side)
