"""Fixtures of the team-platform tests: the catalog backend matrix (SQLite and the real PostgreSQL
server of tests/conftest.py) and small real datasets (WMT16 DA from the shared data)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.config import Settings, load_settings


def point_catalog_at(url: str, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Migrate the catalog at ``url`` (as `assay db upgrade` does for a team) and use it."""
    from assay.catalog.engine import reset_engines, upgrade

    upgrade(url)
    monkeypatch.setenv("ASSAY_CATALOG_URL", url)
    reset_engines()
    return load_settings()


@pytest.fixture(params=["sqlite", "postgresql"])
def catalog(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """Settings whose catalog is a migrated SQLite file, then the real PostgreSQL server."""
    fixture = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    settings = point_catalog_at(str(request.getfixturevalue(fixture)), monkeypatch)
    yield settings
    from assay.catalog.engine import reset_engines

    reset_engines()  # before the PostgreSQL database is dropped


@pytest.fixture
def wmt16(shared_data: Path) -> str:
    """WMT16 segment-level DA (7 language pairs x 560 segments), ingested into the current catalog."""
    from assay.jobs.ingest import ingest_path

    return ingest_path(shared_data / "wmt16-da-seg").label
