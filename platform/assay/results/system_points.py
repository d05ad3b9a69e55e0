"""The system-point store: the (human, metric) system scores a system-level correlation used.

Layout (relative to ``ASSAY_HOME``)::

    results/system_points/dataset=<name>/part-<run>-<uuid>.parquet

One row per system of a system-level cell of an ``assay evaluate --level sys`` run (the same for
every statistic of the run), so the report draws the points without recomputing anything.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from assay.config import Settings
from assay.results import parts

STORE = "system_points"
ROOT = parts.root(STORE)

SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("version_number", pa.int64(), nullable=False),
    pa.field("level", pa.string(), nullable=False),  # sys
    pa.field("group", pa.string(), nullable=False),
    pa.field("aspect", pa.string(), nullable=False),
    pa.field("metric", pa.string(), nullable=False),
    pa.field("signature", pa.string(), nullable=False),
    pa.field("system", pa.string(), nullable=False),
    pa.field("human", pa.float64(), nullable=False),  # the human system score the correlation used
    pa.field("metric_score", pa.float64(), nullable=False),  # corpus score or mean segment score
])

PARTS = parts.RunParts(STORE, SCHEMA)
write = PARTS.write


def read(settings: Settings, dataset: str, run_id: str, signature: str) -> list[dict[str, Any]]:
    """The points run ``run_id`` stored for ``signature`` on ``dataset``."""
    table = PARTS.read(settings, dataset, run_id)
    return table.filter(pc.equal(table.column("signature"), signature)).to_pylist()
