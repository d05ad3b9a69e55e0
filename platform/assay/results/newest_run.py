"""Newest run: which stored rows a reader shows when several runs computed the same cell.

The results store keeps every run's rows (parts are immutable, never replaced). A reader that shows
one number per cell (a leaderboard row, a report table, a robustness experiment) takes the rows of
the *newest run* of that cell: the run whose rows carry the latest ``created_at``, ties broken by the
larger ``run_id`` (so the choice never depends on the order the parts were listed). Whole runs are
taken, never rows of different runs side by side: a run ranks and clusters all the metrics it
evaluated together, so its ranks and clusters stay meaningful.

What a *cell* is, is the caller's to say, by naming its columns:

* the report's latest evaluation: a dataset version, level and statistic
  (:func:`assay.report.collect.latest_evaluations`);
* a leaderboard: a metric signature and aspect, among the rows of one level, statistic and group
  (:mod:`assay.query.leaderboard`, in SQL: :func:`newest_run_sql`);
* a robustness experiment: its experiment id (:func:`assay.training.robustness.rows.latest_results`);
* the report's model-selection and error-analysis tables: a dataset version (and the analysed
  signature).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

__all__ = ["newest_run_by_cell", "newest_run_rows", "newest_run_sql"]

Row = TypeVar("Row")
"""A stored row: a mapping of column names, or a record with the columns as attributes."""

WHEN = "created_at"
"""The column a run's time is read from."""


def _column(row: Any, name: str) -> Any:
    return row[name] if isinstance(row, Mapping) else getattr(row, name)


def _cell_of(cell: Sequence[str]) -> Callable[[Any], tuple[Any, ...]]:
    return lambda row: tuple(_column(row, c) for c in cell)


def newest_run_rows(rows: Iterable[Row], cell: Sequence[str], when: Callable[[Row], Any] | None = None) -> list[Row]:
    """The rows of the newest run of each cell (the rows sharing the ``cell`` columns), in their
    given order. A run's time is the latest ``created_at`` of its rows in the cell, or ``when(row)``
    for a store that keeps it elsewhere; ties go to the larger ``run_id``."""
    rows = list(rows)
    key = _cell_of(cell)
    time_of = when if when is not None else (lambda row: _column(row, WHEN))
    newest: dict[tuple[Any, ...], tuple[Any, str]] = {}
    for row in rows:
        k, stamp = key(row), (time_of(row), _column(row, "run_id"))
        if k not in newest or stamp > newest[k]:
            newest[k] = stamp
    return [row for row in rows if newest[key(row)][1] == _column(row, "run_id")]


def newest_run_by_cell(rows: Iterable[Row], cell: Sequence[str], when: Callable[[Row], Any] | None = None
                ) -> dict[tuple[Any, ...], list[Row]]:
    """:func:`newest_run_rows` by cell: the values of the ``cell`` columns -> the newest run's rows,
    cells in the order they first appear in ``rows``."""
    rows = list(rows)
    key = _cell_of(cell)
    out: dict[tuple[Any, ...], list[Row]] = {key(row): [] for row in rows}
    for row in newest_run_rows(rows, cell, when):
        out[key(row)].append(row)
    return out


def newest_run_sql(cell: Sequence[str]) -> str:
    """The same rule as a DuckDB ``QUALIFY`` clause over stored rows: keep the rows whose run is the
    newest of their cell (``created_at``, then the larger ``run_id``). Column names are quoted; they
    come from Assay's code, never from a user."""
    for column in cell:
        if not column.replace("_", "").isalnum():
            raise ValueError(f"not a column name: {column!r}")
    partition = ", ".join(f'"{c}"' for c in cell)
    return (f'QUALIFY run_id = first_value(run_id) OVER (PARTITION BY {partition} '
            f'ORDER BY "{WHEN}" DESC, run_id DESC)')
