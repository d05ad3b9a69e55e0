"""Served pages are answered from memory while the data behind them is unchanged.

A page is a pure function of the catalog and the results stores, so a rendered answer can be
reused until either changes. :func:`state_token` is what changes when they do, read on every
request for a few milliseconds instead of the page's query (DuckDB over every part of a store,
hundreds of milliseconds on a team's store):

* **the stores**: the modification time of every partition folder of ``results/`` (a store's
  ``dataset=<name>`` or ``metric=<name>`` folder; a new part file changes its folder's time);
* **the catalog**: the number of runs and the time the last one finished, of dataset versions,
  checkpoints, completed nightly evaluations (and the last one's time) and recorded regressions.

So a new night's results appear on the next request, without a restart (issue 30). :class:`PageCache`
keeps the newest :data:`CACHED_PAGES` answers, each with the token it was built under.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text

from assay.catalog.engine import get_engine
from assay.config import Settings

__all__ = ["CACHED_PAGES", "PageCache", "state_token"]

CACHED_PAGES = 512
"""The most answers kept (least recently used first out)."""

_CATALOG_STATE = text(
    "SELECT (SELECT count(*) FROM runs), (SELECT max(finished_at) FROM runs), "
    "(SELECT count(*) FROM dataset_versions), (SELECT count(*) FROM checkpoints), "
    "(SELECT count(*) FROM suite_evaluations WHERE status = 'completed'), "
    "(SELECT max(finished_at) FROM suite_evaluations), (SELECT count(*) FROM regressions)")


def _stores_state(results_dir: str) -> tuple[tuple[str, int], ...]:
    found: list[tuple[str, int]] = []
    try:
        stores = list(os.scandir(results_dir))
    except FileNotFoundError:
        return ()
    for store in stores:
        if not store.is_dir():
            continue
        found.append((store.name, store.stat().st_mtime_ns))
        for partition in os.scandir(store.path):
            if partition.is_dir():
                found.append((f"{store.name}/{partition.name}", partition.stat().st_mtime_ns))
    return tuple(sorted(found))


def state_token(settings: Settings) -> tuple[Any, ...]:
    """What changes whenever a page's answer could: see the module's docstring."""
    with get_engine(settings).connect() as conn:
        catalog = tuple(str(value) for value in conn.execute(_CATALOG_STATE).one())
    return catalog, _stores_state(str(settings.results_dir))


@dataclass(frozen=True)
class Answer:
    body: bytes
    media_type: str


class PageCache:
    """Answers by request, each valid while :func:`state_token` is what it was built under."""

    def __init__(self, size: int = CACHED_PAGES) -> None:
        self._size = size
        self._answers: OrderedDict[Any, tuple[Any, Answer]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any, token: Any) -> Answer | None:
        with self._lock:
            found = self._answers.get(key)
            if found is None or found[0] != token:
                return None
            self._answers.move_to_end(key)
            return found[1]

    def put(self, key: Any, token: Any, answer: Answer) -> None:
        with self._lock:
            self._answers[key] = (token, answer)
            self._answers.move_to_end(key)
            while len(self._answers) > self._size:
                self._answers.popitem(last=False)
