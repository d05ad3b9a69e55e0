"""SQL string literals for DuckDB, where a bound parameter cannot go.

DuckDB takes table functions' file patterns (``read_parquet('...')``) and view definitions as SQL
text, not as parameters, so a path reaches SQL as a literal: single-quoted, each ``'`` doubled
(standard SQL). User input still reaches SQL only as bound parameters. This module imports nothing
heavy, so the leaderboard and the report can use it without the catalog.
"""

from __future__ import annotations


def sql_literal(text: str) -> str:
    """``text`` as a single-quoted SQL string literal (``it's`` -> ``'it''s'``)."""
    return "'" + text.replace("'", "''") + "'"
