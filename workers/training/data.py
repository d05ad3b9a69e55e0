"""Training tables: what a BLEURT-style model is trained on, checked, split by item and standardised.

A training table has one row per (reference, candidate) pair and the columns

``reference``, ``candidate``
    the two texts (strings; the model reads ``[CLS] reference [SEP] candidate [SEP]``, §3);
``item_id``
    what the pair was produced from (a WMT source segment): the validation split holds out whole
    items, so no source is shared between training and validation (appendix B.2, "no leak");
target columns
    one per objective column (float64, NaN = missing): human ratings for fine-tuning, the signals of
    Table 1 for pre-training.

:func:`training_table_from_segments` builds one from a stored WMT dataset version's ``segments``.
Regression targets are standardised with the training split's mean and standard deviation before
training ("All the regression labels are normalized before training", appendix A.2); the checkpoint
records the affine map that undoes it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from assay.errors import InputError
from assay.workers.training.objectives import Objective

__all__ = [
    "Standardisation",
    "TrainingRows",
    "items_digest",
    "label_matrix",
    "read_rows",
    "split_by_item",
    "training_table_from_segments",
]

TEXT_COLUMNS = ("reference", "candidate", "item_id")
#: what an in-memory table is called in error messages
TABLE_NAME = "training table"


def training_table_from_segments(
    segments: pa.Table,
    *,
    target: str = "human_z",
    aspect: str | None = None,
    groups: Sequence[str] | None = None,
) -> pa.Table:
    """The training table of a stored WMT dataset version's ``segments``.

    ``reference`` is the first of the segment's ``references``, ``candidate`` the rated output,
    ``item_id`` is ``group + "/" + item_id`` (item ids repeat across language pairs), and the target
    column (``human_z`` by default: WMT's standardised DA score) keeps its name as float64, null
    becoming NaN. ``groups`` keeps only those groups (e.g. the to-English pairs); a table that rates
    several aspects needs ``aspect``. ``group`` is kept as a column.
    """
    name = "segments"
    needed = ("group", "item_id", "references", "candidate", target)
    missing = [c for c in needed if c not in segments.column_names]
    if missing:
        raise InputError(name, f"missing column(s) {', '.join(missing)}", expected=f"columns {', '.join(needed)}")
    if "aspect" in segments.column_names:
        aspects = sorted(set(segments.column("aspect").to_pylist()))
        if aspect is not None:
            segments = segments.filter(pc.equal(segments.column("aspect"), aspect))
            if segments.num_rows == 0:
                raise InputError(name, f"no rows rate aspect {aspect!r} (aspects: {', '.join(aspects)})")
        elif len(aspects) > 1:
            raise InputError(name, f"rates several aspects ({', '.join(aspects)})", expected="aspect= naming one")
    if groups is not None:
        segments = segments.filter(pc.is_in(segments.column("group"), pa.array(list(groups), pa.string())))
        if segments.num_rows == 0:
            raise InputError(name, f"no rows in groups {', '.join(groups)}")
    references = segments.column("references").to_pylist()
    first = []
    for i, refs in enumerate(references):
        if not refs or not isinstance(refs[0], str):
            raise InputError(name, f"row {i} has no reference", expected="at least one reference per segment")
        first.append(refs[0])
    group = segments.column("group").to_pylist()
    item = segments.column("item_id").to_pylist()
    values = segments.column(target).cast(pa.float64()).to_numpy(zero_copy_only=False)
    return pa.table({
        "group": pa.array(group, pa.string()),
        "item_id": pa.array([f"{g}/{i}" for g, i in zip(group, item, strict=True)], pa.string()),
        "reference": pa.array(first, pa.string()),
        "candidate": segments.column("candidate").cast(pa.string()),
        target: pa.array(np.asarray(values, dtype=np.float64), pa.float64()),
    })


@dataclass
class TrainingRows:
    """A checked training table: texts, items and the raw target columns."""

    references: list[str]
    candidates: list[str]
    item_ids: list[str]
    targets: dict[str, np.ndarray]
    """column -> float64 values (NaN = missing)"""
    source: str = TABLE_NAME

    def __len__(self) -> int:
        return len(self.references)

    def take(self, rows: np.ndarray) -> TrainingRows:
        idx = [int(i) for i in rows]
        return TrainingRows(
            references=[self.references[i] for i in idx],
            candidates=[self.candidates[i] for i in idx],
            item_ids=[self.item_ids[i] for i in idx],
            targets={c: v[rows] for c, v in self.targets.items()},
            source=self.source,
        )


def _columns_of(table: Any, source: str) -> dict[str, list[Any]]:
    if isinstance(table, pa.Table):
        return {name: table.column(name).to_pylist() for name in table.column_names}
    if hasattr(table, "to_dict") and hasattr(table, "columns"):  # a pandas DataFrame
        return {str(name): list(table[name]) for name in table.columns}
    if isinstance(table, Sequence) and not isinstance(table, str | bytes):
        if not all(isinstance(row, Mapping) for row in table):
            raise InputError(source, "is a sequence of non-mappings", expected="a list of {column: value} rows")
        names = list(dict.fromkeys(k for row in table for k in row))
        return {str(n): [row.get(n) for row in table] for n in names}
    raise InputError(source, f"is a {type(table).__name__}",
                     expected="a pyarrow Table, a pandas DataFrame or a list of row mappings")


def read_rows(table: Any, objectives: Sequence[Objective], *, source: str = TABLE_NAME) -> TrainingRows:
    """Check a training table (pyarrow, pandas or a list of row dicts) and read it into
    :class:`TrainingRows`. One :class:`InputError` per defect, naming ``source``, the column and
    the first bad row: a missing column, a non-string text or item, a non-numeric target, an
    infinite target, or no rows at all. NaN/null targets are kept (missing, masked in the loss).
    """
    columns = _columns_of(table, source)
    target_names = list(dict.fromkeys(c for o in objectives for c in o.columns))
    missing = [c for c in (*TEXT_COLUMNS, *target_names) if c not in columns]
    if missing:
        raise InputError(source, f"missing column(s) {', '.join(missing)}",
                         expected=f"columns {', '.join((*TEXT_COLUMNS, *target_names))}")
    n = len(columns["reference"])
    if n == 0:
        raise InputError(source, "has no rows", expected="at least one (reference, candidate) pair")
    for name in TEXT_COLUMNS:
        for i, value in enumerate(columns[name]):
            if not isinstance(value, str):
                raise InputError(source, f"column {name!r}, row {i}: {type(value).__name__} {value!r}",
                                 expected="a string")
    targets: dict[str, np.ndarray] = {}
    for name in target_names:
        raw = columns[name]
        try:
            values = np.asarray([math.nan if v is None else v for v in raw], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError(source, f"column {name!r} is not numeric ({exc})", expected="float64 values") from exc
        bad = np.flatnonzero(np.isinf(values))
        if bad.size:
            raise InputError(source, f"column {name!r}, row {int(bad[0])}: {values[bad[0]]} "
                             f"({bad.size} infinite value(s))", expected="finite numbers, or NaN for a missing one")
        targets[name] = values
    for objective in objectives:
        if objective.kind == "classification":
            _check_classes(objective, [targets[c] for c in objective.columns], source)
    return TrainingRows(list(columns["reference"]), list(columns["candidate"]), list(columns["item_id"]),
                        targets, source)


def _check_classes(objective: Objective, values: list[np.ndarray], source: str) -> None:
    """Class indices are integers in [0, n_classes); probability rows are >= 0 and sum to 1 (±1e-3)."""
    if objective.soft:
        probs = np.stack(values, axis=1)
        present = np.isfinite(probs).all(axis=1)
        bad = np.flatnonzero(present & ((probs < 0).any(axis=1) | (np.abs(probs.sum(axis=1) - 1) > 1e-3)))
        if bad.size:
            raise InputError(source, f"columns {', '.join(objective.columns)}, row {int(bad[0])}: "
                             f"{probs[bad[0]].tolist()}", expected="class probabilities >= 0 that sum to 1")
        return
    column = values[0]
    present = np.isfinite(column)
    bad = np.flatnonzero(present & ((column != np.round(column)) | (column < 0) | (column >= objective.n_classes)))
    if bad.size:
        raise InputError(source, f"column {objective.columns[0]!r}, row {int(bad[0])}: {column[bad[0]]}",
                         expected=f"a class index 0..{objective.n_classes - 1} (or NaN)")


def items_digest(items: Sequence[str]) -> str:
    """sha256 over the sorted distinct item ids, one per line: identifies a split."""
    h = hashlib.sha256()
    for item in sorted(set(items)):
        h.update(item.encode("utf-8") + b"\n")
    return h.hexdigest()


def rows_digest(rows: TrainingRows) -> str:
    """sha256 over the texts, items and targets in row order (resuming checks it is the same data)."""
    h = hashlib.sha256()
    for name, values in (("reference", rows.references), ("candidate", rows.candidates), ("item_id", rows.item_ids)):
        h.update(name.encode() + b"\0")
        for v in values:
            h.update(v.encode("utf-8") + b"\0")
    for name in sorted(rows.targets):
        h.update(name.encode() + b"\0" + np.ascontiguousarray(rows.targets[name], dtype="<f8").tobytes())
    return h.hexdigest()


def split_by_item(item_ids: Sequence[str], fraction: float, seed: int, *, source: str = TABLE_NAME,
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Row indices ``(train, validation)``: ``round(fraction × items)`` (at least 1) distinct items,
    drawn with ``numpy.random.default_rng(seed)`` from the sorted item ids, go to validation with all
    their rows, so the two splits share no item (appendix B.2). Refuses fewer than two items."""
    items = sorted(set(item_ids))
    if len(items) < 2:
        raise InputError(source, f"has {len(items)} distinct item_id(s)",
                         expected="at least 2 items, to hold out whole items for validation")
    n_val = min(len(items) - 1, max(1, round(fraction * len(items))))
    order = np.random.default_rng(seed).permutation(len(items))
    held = {items[i] for i in order[:n_val]}
    is_val = np.fromiter((item in held for item in item_ids), dtype=bool, count=len(item_ids))
    return np.flatnonzero(~is_val), np.flatnonzero(is_val)


def check_split(train: TrainingRows, validation: TrainingRows, primary_column: str) -> None:
    """Refuse a validation split that shares items with training, is empty, or has fewer than two
    present primary targets (Kendall tau needs pairs); and an empty training split."""
    if len(train) == 0:
        raise InputError(train.source, "the training split is empty", expected="at least one training pair")
    if len(validation) == 0:
        raise InputError(validation.source, "the validation split is empty", expected="at least one pair")
    shared = sorted(set(train.item_ids) & set(validation.item_ids))
    if shared:
        raise InputError(validation.source, f"shares {len(shared)} item(s) with the training split "
                         f"(e.g. {shared[0]!r})", expected="validation items that training never sees")
    present = int(np.isfinite(validation.targets[primary_column]).sum())
    if present < 2:
        raise InputError(validation.source, f"has {present} present value(s) of the primary column "
                         f"{primary_column!r}", expected="at least 2, for Kendall tau and Pearson r")


@dataclass(frozen=True)
class Standardisation:
    """``z = (y - mean) / std`` for one regression column, fitted on the training split (A.2)."""

    mean: float
    std: float

    @classmethod
    def fit(cls, values: np.ndarray, column: str, source: str) -> Standardisation:
        present = values[np.isfinite(values)]
        if present.size < 2:
            raise InputError(source, f"column {column!r} has {present.size} present value(s) in the training split",
                             expected="at least 2, to standardise it")
        mean, std = float(present.mean()), float(present.std())
        if not std > 0:
            raise InputError(source, f"column {column!r} is constant ({mean}) in the training split",
                             expected="varying targets")
        return cls(mean, std)

    def apply(self, values: np.ndarray) -> np.ndarray:
        return (values - self.mean) / self.std

    def to_json(self) -> dict[str, Any]:
        return {"type": "affine", "mean": self.mean, "std": self.std}


def label_matrix(rows: TrainingRows, objectives: Sequence[Objective],
                 standardisations: Mapping[str, Standardisation]) -> np.ndarray:
    """float32 ``(pairs, label columns)``: each objective's columns in order, regression targets
    standardised with ``standardisations[objective.name]``, NaN kept (missing)."""
    columns = []
    for o in objectives:
        for c in o.columns:
            values = rows.targets[c]
            columns.append(standardisations[o.name].apply(values) if o.name in standardisations else values)
    return np.stack(columns, axis=1).astype(np.float32)
