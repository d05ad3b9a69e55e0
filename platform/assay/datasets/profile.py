"""What a stored dataset version holds, so jobs can pick what to compute."""

from __future__ import annotations

from typing import Any

import pyarrow.compute as pc

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import Settings, load_settings
from assay.datasets import store


def profile(dataset: str, settings: Settings | None = None) -> dict[str, Any]:
    settings = settings or load_settings()
    with session_scope(settings) as session:
        version = resolve(session, dataset)
        label, store_path, counts = version.label, version.store_path, dict(version.row_counts)
    segments = store.read_table(settings, store_path, "segments")
    systems = store.read_table(settings, store_path, "systems")
    has_references = bool(segments.num_rows) and int(pc.max(pc.list_value_length(segments["references"])).as_py()) > 0
    with_outputs = systems.filter(pc.is_valid(systems["output_system"])).num_rows if systems.num_rows else 0
    return {"dataset": label, "segments": counts.get("segments", 0), "has_references": has_references,
            "outputs": counts.get("outputs", 0), "systems_with_outputs": with_outputs}
