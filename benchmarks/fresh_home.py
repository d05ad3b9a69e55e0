"""A fresh, embedded Assay home for a benchmark: one temporary ``ASSAY_HOME`` (no team catalog), its
SQLite catalog created and migrated before anything is timed.

    with fresh_home() as catalog_s:   # seconds the catalog took, reported apart from the timed work
        ...
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def fresh_home(prefix: str = "assay-bench-") -> Iterator[float]:
    """Point ``ASSAY_HOME`` at a new temporary folder (removed afterwards), drop any
    ``ASSAY_CATALOG_URL``, create the catalog, and yield how many seconds that took."""
    with tempfile.TemporaryDirectory(prefix=prefix) as home:
        os.environ["ASSAY_HOME"] = home
        os.environ.pop("ASSAY_CATALOG_URL", None)
        from assay.catalog.engine import get_engine

        started = time.perf_counter()
        get_engine()
        yield time.perf_counter() - started
