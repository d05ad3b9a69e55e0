"""The significance store: the pairwise tests behind ``assay evaluate``'s clusters.

Layout (relative to ``ASSAY_HOME``)::

    results/significance/dataset=<name>/part-<run>-<uuid>.parquet

One row per ordered pair of metrics in a cell (level, group, aspect, statistic): the one-sided
p-value that ``better`` (the higher-valued signature) truly correlates better than ``worse``, and
the test that gave it. A leaderboard that shows a subset of metrics re-clusters from these.
"""

from __future__ import annotations

import pyarrow as pa

from assay.config import Settings
from assay.results import parts

STORE = "significance"
ROOT = parts.root(STORE)

SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("version_number", pa.int64(), nullable=False),
    pa.field("level", pa.string(), nullable=False),
    pa.field("group", pa.string(), nullable=False),
    pa.field("aspect", pa.string(), nullable=False),
    pa.field("statistic", pa.string(), nullable=False),
    pa.field("better", pa.string(), nullable=False),  # signature of the higher-valued metric
    pa.field("worse", pa.string(), nullable=False),
    pa.field("p_value", pa.float64(), nullable=False),  # that `better` truly correlates better
    pa.field("test", pa.string(), nullable=False),
])

PARTS = parts.RunParts(STORE, SCHEMA)
write = PARTS.write
files = PARTS.files
read_run = PARTS.read_run
sql_source = PARTS.sql_source


def stored_tests(settings: Settings, dataset: str, run_id: str, level: str
                 ) -> dict[tuple[str, str, str, str, str], tuple[float, str]]:
    """The pairwise tests one evaluation run stored at ``level``: (group, aspect, statistic, better,
    worse) -> (one-sided p-value that ``better`` truly correlates better, the test's name). The one
    reader of a run's tests (``assay compare``, the nightly regression check)."""
    return {(r["group"], r["aspect"], r["statistic"], r["better"], r["worse"]): (r["p_value"], r["test"])
            for r in read_run(settings, dataset, run_id) if r["level"] == level}
