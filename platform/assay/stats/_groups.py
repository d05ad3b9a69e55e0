"""Input checking and grouping shared by the statistics modules (private).

Segment-level scores are laid out as mt-metrics-eval lays them out: one flat, *system-major* vector
of ``num_systems * num_items`` entries (entry ``s * num_items + i`` is system ``s`` on item ``i``),
or, equivalently here, a 2-D array of shape ``(num_systems, num_items)``.

A *grouping* says which vectors a statistic is computed on (mt-metrics-eval's ``average_by``):

``"none"``
    one vector: every (system, item) entry together;
``"item"``
    one vector per item, across systems (its column), then the average over items;
``"system"``
    one vector per system, across items (its row), then the average over systems.

A missing gold (human) score is ``None`` or ``NaN``; the entry is dropped from its vector, in
tandem with the metric score (mt-metrics-eval filters ``None`` gold scores the same way). A vector
left with fewer than two entries yields no statistic and is skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias, cast, get_args

import numpy as np
import numpy.typing as npt

from assay.errors import StatsInputError

Grouping: TypeAlias = Literal["none", "item", "system"]
"""How segment-level scores are split before a statistic is computed; see the module docstring."""

GROUPINGS: tuple[str, ...] = get_args(Grouping)

Scores: TypeAlias = npt.ArrayLike | Sequence[float | None] | Sequence[Sequence[float | None]]
"""Numbers, possibly with ``None``/``NaN`` for missing gold scores: a vector, a (systems x items)
matrix, or anything else ``np.asarray`` turns into one."""

FloatArray: TypeAlias = npt.NDArray[np.float64]


def as_array_like(values: Scores) -> npt.ArrayLike:
    """``values`` typed for numpy: ``np.asarray`` turns ``None`` into ``NaN`` with a float dtype."""
    return cast(npt.ArrayLike, values)


def as_float_vector(values: Scores, name: str, *, allow_missing: bool) -> FloatArray:
    """Return ``values`` as a 1-D float array, ``None`` becoming ``NaN``.

    With ``allow_missing=False`` a ``None``/``NaN`` is an error naming ``name``.
    """
    try:
        array = np.asarray(as_array_like(values), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(f"{name}: cannot read the scores as numbers ({exc})") from exc
    if array.ndim == 2:  # (systems, items) matrix: flatten system-major
        array = array.reshape(-1)
    if array.ndim != 1:
        raise StatsInputError(f"{name}: expected a vector of scores, got an array of shape {array.shape}")
    if not allow_missing and np.isnan(array).any():
        count = int(np.isnan(array).sum())
        raise StatsInputError(
            f"{name}: {count} missing (None/NaN) score(s); every score must be defined here "
            "(for estimators that may abstain use assay.stats.coverage_report)"
        )
    if np.isinf(array).any():
        raise StatsInputError(f"{name}: infinite score(s) found (expected finite numbers)")
    return array


def paired_vectors(gold: Scores, metric: Scores) -> tuple[FloatArray, FloatArray]:
    """Gold (may have missing entries) and metric (must not) as equal-length float vectors."""
    gold_vec = as_float_vector(gold, "gold scores", allow_missing=True)
    metric_vec = as_float_vector(metric, "metric scores", allow_missing=False)
    if gold_vec.shape != metric_vec.shape:
        raise StatsInputError(
            f"gold and metric scores differ in length ({gold_vec.size} vs {metric_vec.size}); "
            "they must be parallel, one metric score per gold score"
        )
    return gold_vec, metric_vec


def drop_missing(gold: FloatArray, *others: FloatArray) -> tuple[FloatArray, ...]:
    """Drop the entries whose gold score is missing, from ``gold`` and every array in ``others``."""
    keep = ~np.isnan(gold)
    return (gold[keep], *(other[keep] for other in others))


def infer_num_systems(values: Scores, num_systems: int | None) -> int:
    """``num_systems`` as given, or the row count of a 2-D input, or 1 for a flat vector."""
    shape = np.shape(as_array_like(values))
    if len(shape) == 2:
        if num_systems is not None and num_systems != shape[0]:
            raise StatsInputError(
                f"num_systems={num_systems} contradicts the score matrix shape {shape} (systems x items)"
            )
        return int(shape[0])
    return 1 if num_systems is None else num_systems


def check_grouping(grouping: str) -> None:
    if grouping not in GROUPINGS:
        raise StatsInputError(f"unknown grouping {grouping!r} (expected one of {', '.join(GROUPINGS)})")


def group_index_lists(size: int, num_systems: int, grouping: str) -> list[npt.NDArray[np.intp]]:
    """Indices into the flat system-major vector for each group, in group order."""
    check_grouping(grouping)
    if grouping == "none":
        return [np.arange(size)]
    if num_systems < 1 or size % num_systems:
        raise StatsInputError(
            f"{size} scores cannot be split into {num_systems} systems of equal length "
            "(expected num_systems * num_items scores, system-major)"
        )
    matrix = np.arange(size).reshape(num_systems, -1)
    rows = matrix if grouping == "system" else matrix.T
    return list(rows)


def split_groups(
    gold: FloatArray,
    others: Sequence[FloatArray],
    *,
    num_systems: int,
    grouping: str,
    min_size: int = 2,
) -> list[tuple[FloatArray, ...]]:
    """Split parallel flat vectors into groups, dropping missing gold entries and tiny groups.

    Returns one tuple ``(gold_group, *other_groups)`` per group that keeps at least ``min_size``
    entries, in group order.
    """
    groups = []
    for index in group_index_lists(gold.size, num_systems, grouping):
        parts = drop_missing(gold[index], *(other[index] for other in others))
        if parts[0].size >= min_size:
            groups.append(parts)
    return groups


def require_seed(seed: object) -> int:
    """Seeds are recorded in results, so they must be plain non-negative integers."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise StatsInputError(f"seed must be a non-negative integer (got {seed!r}); it is recorded in the result")
    return int(seed)
