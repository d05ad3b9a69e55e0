"""Error cells: the categories (or category and severity pairs) an error analysis estimates one effect for.

At ``level="category"`` a cell is a full category path (``Accuracy/Mistranslation``), severities
pooled; at ``level="category+severity"`` it is a (category, severity) pair. An output's feature for
a cell is its **rater-averaged error count**: the number of errors of the cell that its raters
marked, summed over raters, divided by the number of raters, the same averaging the human MQM score
uses (:mod:`assay.mqm.scores`). Errors are counted, not weighted.

A cell carried by fewer than ``min_outputs`` outputs cannot be estimated and would make the
regression ill-conditioned, so it is folded, in two steps:

1. into its top-level category's ``Other`` bucket (``Accuracy/Addition`` into ``Accuracy/Other``),
   with the same severity at ``category+severity``;
2. a bucket (or a rare top-level category such as ``Non-translation!``) still below
   ``min_outputs`` is folded into ``(rare)`` (per severity at ``category+severity``).

``(rare)`` is kept whatever its support, as a nuisance term: dropping it would leave its errors'
effect in the residual, correlated with the other cells. Each cell lists the cells folded into it.

Errors with an empty category (ESA marks spans with a severity only; Kocmi et al. 2024) form the
cell ``(no category)``: at ``level="category+severity"`` one cell per severity, ``(no category)
(Major)``, at ``level="category"`` one cell of every such error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from assay.errors import UsageError
from assay.mqm.rated_outputs import RatedOutputs

Level = Literal["category", "category+severity"]
LEVELS: tuple[str, ...] = get_args(Level)

OTHER = "Other"
RARE = "(rare)"
UNCATEGORISED = "(no category)"
SEPARATOR = "/"

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

# (category, severity or None)
_Key = tuple[str, str | None]


@dataclass(frozen=True)
class ErrorCell:
    """One cell: a category path, with a severity at ``level="category+severity"``."""

    category: str
    severity: str | None  # None at level="category" (severities pooled)
    folded_from: tuple[str, ...] = ()  # names of the rarer cells counted in this one

    @property
    def name(self) -> str:
        """``Accuracy/Mistranslation``, or ``Accuracy/Mistranslation (Major)`` with a severity."""
        return _name((self.category, self.severity))

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "category": self.category, "severity": self.severity,
                "folded_from": list(self.folded_from)}


@dataclass(frozen=True, eq=False)
class ErrorFeatures:
    """The cells and every output's rater-averaged error count per cell."""

    level: str
    min_outputs: int
    cells: tuple[ErrorCell, ...]
    counts: FloatArray  # (outputs, cells): errors of the cell summed over raters / raters
    outputs_with: IntArray  # (cells,): how many outputs carry at least one error of the cell


def error_features(outputs: RatedOutputs, level: Level = "category", *, min_outputs: int = 20) -> ErrorFeatures:
    """The cells of ``outputs`` at ``level``, rare ones folded (module docstring), and their features."""
    if level not in LEVELS:
        raise UsageError(f"error analysis level {level!r}; expected one of {', '.join(LEVELS)}")
    if isinstance(min_outputs, bool) or not isinstance(min_outputs, int) or min_outputs < 1:
        raise UsageError(f"min_outputs is {min_outputs!r}; expected an integer >= 1")
    raw = [[_key(e.category, e.severity, level) for e in errors] for errors in outputs.errors]
    support = _support(raw)
    step1 = {key: _other(key) if n < min_outputs else key for key, n in support.items()}
    support1 = _support([[step1[k] for k in keys] for keys in raw])
    step2 = {key: (RARE, key[1]) if n < min_outputs else key for key, n in support1.items()}
    final = {key: step2[step1[key]] for key in support}
    support2 = _support([[final[k] for k in keys] for keys in raw])
    order = sorted(support2, key=lambda key: (key[0] == RARE, -support2[key], _name(key)))
    column = {key: c for c, key in enumerate(order)}
    folded = {key: tuple(sorted(_name(k) for k, to in final.items() if to == key and k != key)) for key in order}
    cells = tuple(ErrorCell(key[0], key[1], folded[key]) for key in order)
    counts = np.zeros((outputs.size, len(order)))
    for i, keys in enumerate(raw):
        for key in keys:
            counts[i, column[final[key]]] += 1.0
    counts /= np.asarray(outputs.raters, dtype=np.float64)[:, None]
    outputs_with = np.array([support2[key] for key in order], dtype=np.intp)
    return ErrorFeatures(level, min_outputs, cells, counts, outputs_with)


def _key(category: str, severity: str, level: str) -> _Key:
    path = SEPARATOR.join(part.strip() for part in category.split(SEPARATOR)) or UNCATEGORISED
    return (path, severity.strip() if level == "category+severity" else None)


def _other(key: _Key) -> _Key:
    category, severity = key
    if SEPARATOR in category:
        return (category.split(SEPARATOR)[0] + SEPARATOR + OTHER, severity)
    return (RARE, severity)


def _support(keys_per_output: Iterable[Iterable[_Key]]) -> dict[_Key, int]:
    """How many outputs carry each key (an output with two errors of a key counts once)."""
    support: dict[_Key, int] = {}
    for keys in keys_per_output:
        for key in set(keys):
            support[key] = support.get(key, 0) + 1
    return support


def _name(key: _Key) -> str:
    return key[0] if key[1] is None else f"{key[0]} ({key[1]})"


__all__ = ["LEVELS", "OTHER", "RARE", "UNCATEGORISED", "ErrorCell", "ErrorFeatures", "Level", "error_features"]
