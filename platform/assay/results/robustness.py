"""The robustness store: what ``assay robustness drift|webnlg`` computed (BLEURT, Sellam et al.
2020, §5.2 and §5.3; the experiments are :mod:`assay.training.robustness`).

Layout (relative to ``ASSAY_HOME``)::

    results/robustness/experiment=<drift|webnlg>/part-<run>-<uuid>.parquet

One row per (experiment id, variant, point, aspect, statistic) on the headline group (``all``,
the mean over groups, where the test data has several; else its only group). Each row names the
checkpoint (name and digest), the train and test dataset versions (label and digest), the metric
signature, the evaluation run that computed the value and its bootstrap interval.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from assay.config import Settings
from assay.errors import UsageError
from assay.results import parts

STORE = "robustness"
ROOT = parts.root(STORE)
EXPERIMENTS = ("drift", "webnlg")

SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),  # the robustness run that wrote the row
    pa.field("experiment", pa.string(), nullable=False),  # drift | webnlg
    pa.field("experiment_id", pa.string(), nullable=False),  # Experiment.id: digest of the request
    pa.field("dataset", pa.string(), nullable=False),  # the parent version, NAME@N
    pa.field("version_digest", pa.string(), nullable=False),  # the parent version's digest
    pa.field("variant", pa.string(), nullable=False),  # variant name, or the baseline's metric text
    pa.field("kind", pa.string(), nullable=False),  # learned | baseline
    pa.field("init", pa.string()),  # learned: the variant's init as given (encoder, a checkpoint)
    pa.field("init_digest", pa.string()),  # learned: the init checkpoint's digest (null: an encoder)
    pa.field("alpha", pa.float64()),  # drift: the skew factor
    pa.field("share", pa.float64()),  # webnlg: requested share of units on the train side
    pa.field("share_actual", pa.float64()),  # webnlg: train units / all units
    pa.field("split_by", pa.string()),  # webnlg: system | input
    pa.field("aspect", pa.string(), nullable=False),
    pa.field("train_dataset", pa.string()),  # learned: the version trained on, NAME@N (null at share 0)
    pa.field("train_digest", pa.string()),
    pa.field("n_train", pa.int64()),  # rated pairs of the training data (validation split included)
    pa.field("test_dataset", pa.string(), nullable=False),
    pa.field("test_digest", pa.string(), nullable=False),
    pa.field("checkpoint", pa.string()),  # learned: registered name
    pa.field("checkpoint_digest", pa.string()),
    pa.field("trained_run_id", pa.string()),  # learned: the finetune run that made the checkpoint
    pa.field("metric", pa.string(), nullable=False),
    pa.field("signature", pa.string(), nullable=False),
    pa.field("statistic", pa.string(), nullable=False),
    pa.field("group", pa.string(), nullable=False),  # "all" (mean over groups) or the only group
    pa.field("value", pa.float64()),
    pa.field("ci_low", pa.float64()),
    pa.field("ci_high", pa.float64()),
    pa.field("n", pa.int64(), nullable=False),
    pa.field("unit", pa.string()),  # what n counts (segments, items, systems); null in parts written before
    pa.field("seed", pa.int64(), nullable=False),
    pa.field("n_resamples", pa.int64(), nullable=False),
    pa.field("evaluate_run_id", pa.string(), nullable=False),
    pa.field("code_version", pa.string(), nullable=False),
    pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
])


def table(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (dicts with every column; missing keys are null) as a table of :data:`SCHEMA`."""
    return pa.Table.from_pylist([{f.name: r.get(f.name) for f in SCHEMA} for r in rows], schema=SCHEMA)


def write(settings: Settings, experiment: str, run_id: str, rows: list[dict[str, Any]]) -> Path:
    """Write one run's rows as one part (atomically); returns its path relative to ``ASSAY_HOME``."""
    if experiment not in EXPERIMENTS:
        raise UsageError(f"unknown robustness experiment {experiment!r} (expected drift or webnlg)")
    return parts.write_part(settings, STORE, ("experiment", experiment), run_id, table(rows), SCHEMA)


def read(settings: Settings, experiment: str | None = None) -> list[dict[str, Any]]:
    """Every stored row (of one experiment kind, or of both), oldest part first within a kind."""
    rows: list[dict[str, Any]] = []
    for kind in [experiment] if experiment else list(EXPERIMENTS):
        rows += parts.read_files(parts.part_files(settings, STORE, ("experiment", kind)), SCHEMA).to_pylist()
    return rows


def read_part(settings: Settings, relative: str | Path) -> list[dict[str, Any]]:
    """The rows of one part (its path relative to ``ASSAY_HOME``, as a run records it), JSON-able:
    timestamps as ISO text."""
    rows = parts.read_files([settings.home / relative], SCHEMA).to_pylist()
    return [{k: v.isoformat() if isinstance(v, datetime) else v for k, v in r.items()} for r in rows]
