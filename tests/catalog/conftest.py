"""The catalog backend matrix: SQLite and the real PostgreSQL server (see tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def catalog_url(request: pytest.FixtureRequest) -> str:
    """Each test using this runs on both backends (a backend matrix, as dbt-duckdb does)."""
    fixture = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    return str(request.getfixturevalue(fixture))
