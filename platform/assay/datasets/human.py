"""Which human score a judgment row is measured against: one rule, used everywhere.

A row carries ``human_z`` (the per-annotator standardised score of WMT DA, Graham et al. 2017)
where the dataset has one, and ``human_raw`` (the rating on the dataset's own scale: WebNLG's 1-3,
HUSE's typicality share) otherwise. Correlations, scoring estimators that learn from human scores
(BLEU Neighbors), the drift benchmark, model selection, exports and the report all use the z-score
when there is one and the raw rating otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa


def human_score(z: float | None, raw: float | None) -> float | None:
    """``z`` where defined, else ``raw``; None when the row has neither."""
    return z if z is not None else raw


def human_scores(table: pa.Table | dict[str, Sequence[float | None]]) -> list[float | None]:
    """The human score of every row of a table (or ``to_pydict()``) with ``human_z``/``human_raw``."""
    if isinstance(table, pa.Table):
        z, raw = table.column("human_z").to_pylist(), table.column("human_raw").to_pylist()
    else:
        z, raw = list(table["human_z"]), list(table["human_raw"])
    return [human_score(a, b) for a, b in zip(z, raw, strict=True)]


def human_array(table: pa.Table | dict[str, Sequence[float | None]]) -> np.ndarray:
    """:func:`human_scores` as float64 with NaN for rows without a human score."""
    return np.array([np.nan if v is None else v for v in human_scores(table)], dtype=np.float64)
