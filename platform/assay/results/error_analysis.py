"""The error-analysis stores: what a metric misses on MQM data (``assay errors``).

Layout (relative to ``ASSAY_HOME``)::

    results/error_sensitivity/dataset=<name>/part-<run>-<uuid>.parquet
    results/error_disagreements/dataset=<name>/part-<run>-<uuid>.parquet

``error_sensitivity`` holds one row per error cell (a category, or a category and severity) of a
run: the metric's and the humans' drop per error with bootstrap intervals and their ratio
(:mod:`assay.mqm.sensitivity`), and, for a run against a parent checkpoint, the difference
(:mod:`assay.mqm.sensitivity_comparison`). ``error_disagreements`` holds the run's worst
disagreements (:mod:`assay.mqm.disagreements`), each error of both outputs as JSON with its span.
"""

from __future__ import annotations

import pyarrow as pa

from assay.results import parts

SENSITIVITY_STORE = "error_sensitivity"
DISAGREEMENTS_STORE = "error_disagreements"

_RUN = [
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("version_number", pa.int64(), nullable=False),
    pa.field("version_digest", pa.string(), nullable=False),
    pa.field("aspect", pa.string(), nullable=False),  # mqm:<scheme>
    pa.field("metric", pa.string(), nullable=False),
    pa.field("signature", pa.string(), nullable=False),
]


def _estimate(name: str) -> list[pa.Field]:
    return [pa.field(name, pa.float64()), pa.field(f"{name}_low", pa.float64()),
            pa.field(f"{name}_high", pa.float64())]


SENSITIVITY_SCHEMA = pa.schema([
    *_RUN,
    pa.field("level", pa.string(), nullable=False),  # category | category+severity
    pa.field("cell", pa.string(), nullable=False),
    pa.field("outputs", pa.int64(), nullable=False),
    pa.field("items_varying", pa.int64(), nullable=False),
    *_estimate("metric_drop"),
    *_estimate("metric_drop_std"),
    *_estimate("human_drop"),
    *_estimate("human_drop_std"),
    *_estimate("ratio"),
    pa.field("human_penalises", pa.bool_(), nullable=False),
    pa.field("blind_spot_rank", pa.int64()),
    pa.field("undetermined", pa.string()),  # why the ratio is not ranked (null where it is)
    pa.field("parent_signature", pa.string()),
    *_estimate("change_std"),
    pa.field("verdict", pa.string()),  # improved | worse | unchanged, against the parent
    pa.field("n_resamples", pa.int64(), nullable=False),
    pa.field("seed", pa.int64(), nullable=False),
    pa.field("code_version", pa.string(), nullable=False),
    pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
])

DISAGREEMENTS_SCHEMA = pa.schema([
    *_RUN,
    pa.field("rank", pa.int64(), nullable=False),
    pa.field("item", pa.string(), nullable=False),
    pa.field("source", pa.string()),
    pa.field("references", pa.list_(pa.string())),
    pa.field("reversed_in_item", pa.int64()),  # reversed pairs of the item; the row is its worst
    pa.field("preferred_system", pa.string(), nullable=False),
    pa.field("preferred_human", pa.float64(), nullable=False),
    pa.field("preferred_metric", pa.float64(), nullable=False),
    pa.field("preferred_candidate", pa.string(), nullable=False),
    pa.field("preferred_errors", pa.string(), nullable=False),  # JSON list of error records
    pa.field("other_system", pa.string(), nullable=False),
    pa.field("other_human", pa.float64(), nullable=False),
    pa.field("other_metric", pa.float64(), nullable=False),
    pa.field("other_candidate", pa.string(), nullable=False),
    pa.field("other_errors", pa.string(), nullable=False),
    pa.field("human_gap", pa.float64(), nullable=False),
    pa.field("metric_gap_std", pa.float64(), nullable=False),
])

SENSITIVITY = parts.RunParts(SENSITIVITY_STORE, SENSITIVITY_SCHEMA)
DISAGREEMENTS = parts.RunParts(DISAGREEMENTS_STORE, DISAGREEMENTS_SCHEMA)
