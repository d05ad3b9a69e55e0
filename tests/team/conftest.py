"""Fixtures for the team setup: a real ``prefect server start`` on PostgreSQL (tests/team_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.team_server import TeamServer, start_team_server, stop_all


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    """One real Prefect server (no auth) per test module, stopped and its database dropped afterwards."""
    server = start_team_server(tmp_path_factory.mktemp("team_server"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session", autouse=True)
def no_team_server_left() -> Iterator[None]:
    """A safety net: whatever a test started and did not stop is stopped when the session ends."""
    yield
    stop_all()
