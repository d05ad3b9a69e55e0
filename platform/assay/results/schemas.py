"""Every results store's declared schema, by the name docs/STORAGE.md gives it."""

from __future__ import annotations

import pyarrow as pa

from assay.results import (
    correlations,
    error_analysis,
    model_selection,
    robustness,
    segment_scores,
    significance,
    system_points,
)

SCHEMAS: dict[str, pa.Schema] = {
    store.STORE: store.SCHEMA
    for store in (segment_scores, correlations, significance, system_points, model_selection, robustness)
}
SCHEMAS[error_analysis.SENSITIVITY_STORE] = error_analysis.SENSITIVITY_SCHEMA
SCHEMAS[error_analysis.DISAGREEMENTS_STORE] = error_analysis.DISAGREEMENTS_SCHEMA
