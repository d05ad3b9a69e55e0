"""A real team Prefect server for tests: ``prefect server start`` on its own PostgreSQL database.

This is the setup docs/TEAM.md describes, made disposable: a fresh database on the PostgreSQL server
at 127.0.0.1:5432 (``PG_ADMIN_URL`` in tests/conftest.py), ``python -m prefect server start --host
127.0.0.1 --port <free port>`` with ``PREFECT_API_DATABASE_CONNECTION_URL=postgresql+asyncpg://...``
and, optionally, basic auth (``PREFECT_SERVER_API_AUTH_STRING``; Prefect's "How to secure a
self-hosted Prefect server"). The server runs in its own process group and is stopped by
:meth:`TeamServer.stop` (SIGTERM to the group, SIGKILL after a timeout, then the database is
dropped). Every started server is also registered for :func:`stop_all`, which the session fixture in
tests/team/conftest.py and an ``atexit`` hook call, so none outlives the test session.

Without PostgreSQL the caller skips (or fails, with ``ASSAY_REQUIRE_SERVICES``): see
:func:`require_postgres`.

:func:`assert_secret_absent` is the check that a password appears in no catalog table and no file
(logs, reports, Parquet stores) written while it was in use.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, inspect, make_url, text

from assay.ports import free_port
from tests.conftest import PG_ADMIN_URL, _pg_available, services_required

HOST = "127.0.0.1"
#: a first start runs Prefect's migrations on the empty database; the machine is small and busy
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 20.0

#: servers started and not yet stopped (stop_all's work list)
_RUNNING: list[TeamServer] = []


def require_postgres() -> None:
    """Skip the calling test when PostgreSQL is absent; fail instead with ASSAY_REQUIRE_SERVICES."""
    problem = _pg_available()
    if problem is None:
        return
    if services_required():
        pytest.fail(f"PostgreSQL at {PG_ADMIN_URL} is required (ASSAY_REQUIRE_SERVICES): {problem}")
    pytest.skip(f"PostgreSQL not available: {problem}")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=3) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError, ValueError):
        return False


def _database_url(db_name: str, driver: str) -> str:
    """The URL of ``db_name`` on the admin URL's server, with ``driver`` (asyncpg, psycopg)."""
    url = make_url(PG_ADMIN_URL).set(drivername=f"postgresql+{driver}", database=db_name)
    return url.render_as_string(hide_password=False)


def create_database(name: str) -> None:
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()


def drop_database(name: str) -> None:
    """Terminate the database's sessions (the server's pool may linger), then drop it."""
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n AND pid <> pg_backend_pid()"
            ), {"n": name})
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
    finally:
        admin.dispose()


def end_process_group(process: subprocess.Popen[bytes], steps: Iterable[tuple[signal.Signals | None, float]]) -> bool:
    """Escalate until ``process`` (a process-group leader) exits: for each ``(signal, seconds)`` step,
    send the signal to its group (``None``: send nothing, only wait) and wait up to the seconds.
    True once it has exited, False if it outlived every step."""
    for sig, wait in steps:
        if sig is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
            return True
        except subprocess.TimeoutExpired:
            continue
    return False


@dataclass(eq=False)
class TeamServer:
    """A running ``prefect server start`` on its own PostgreSQL database."""

    url: str
    """The API URL, ``http://127.0.0.1:PORT/api``: what clients set ``PREFECT_API_URL`` to."""
    process: subprocess.Popen[bytes]
    log_path: Path
    db_name: str
    auth_string: str | None
    prefect_home: Path
    start_s: float
    """Seconds from spawning the process to the first healthy answer."""
    stopped: bool = field(default=False)

    @property
    def database_url(self) -> str:
        """The server's own database, with the psycopg driver (for inspection with SQLAlchemy)."""
        return _database_url(self.db_name, "psycopg")

    def env(self) -> dict[str, str]:
        """The client settings for this server (add them to a copy of ``os.environ``)."""
        env = {"PREFECT_API_URL": self.url}
        if self.auth_string is not None:
            env["PREFECT_API_AUTH_STRING"] = self.auth_string
        return env

    def client_env(self, base: dict[str, str] | None = None, *, with_auth: bool = True) -> dict[str, str]:
        """A full environment for a client subprocess: ``base`` (default ``os.environ``) without any
        other Prefect API setting, plus :meth:`env` (without the auth string if ``with_auth`` is false)."""
        env = dict(os.environ if base is None else base)
        for key in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING", "PREFECT_API_KEY", "PREFECT_PROFILES_PATH"):
            env.pop(key, None)
        env.update(self.env())
        if not with_auth:
            env.pop("PREFECT_API_AUTH_STRING", None)
        return env

    def settings(self, *, with_auth: bool = True) -> contextlib.AbstractContextManager[Any]:
        """Prefect's ``temporary_settings`` pointing this process's Prefect client (``get_client()``)
        at the server, with its auth string or, with ``with_auth=False``, without any."""
        from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_KEY, PREFECT_API_URL, temporary_settings

        if with_auth and self.auth_string is not None:
            return temporary_settings(updates={PREFECT_API_URL: self.url, PREFECT_API_AUTH_STRING: self.auth_string},
                                      restore_defaults={PREFECT_API_KEY})
        return temporary_settings(updates={PREFECT_API_URL: self.url},
                                  restore_defaults={PREFECT_API_AUTH_STRING, PREFECT_API_KEY})

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        """SIGTERM the server's process group, SIGKILL after :data:`STOP_TIMEOUT_S`, then drop its
        database. Idempotent."""
        if self.stopped:
            return
        self.stopped = True
        try:
            end_process_group(self.process, ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 10.0)))
            # the group leader may be gone while a child lingers: make sure the group is empty
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        finally:
            with contextlib.suppress(ValueError):
                _RUNNING.remove(self)
            drop_database(self.db_name)


def start_team_server(tmp_dir: Path, *, auth_string: str | None = None, db_name: str | None = None,
                      extra_env: dict[str, str] | None = None, wait: bool = True) -> TeamServer:
    """Create a fresh PostgreSQL database and start ``prefect server start`` on it; wait until healthy
    (with ``wait=False``, return at once: the caller waits with :func:`wait_until_healthy`).

    ``tmp_dir`` holds ``PREFECT_HOME`` and the server's log (``server.log``). The server binds
    127.0.0.1 on a free port, with analytics and the UI off; ``auth_string`` (``user:password``)
    turns on basic auth; ``extra_env`` adds server settings (e.g. a faster scheduler loop). The
    environment passed is the caller's without any of its ``PREFECT_*`` settings. Skips (or fails,
    see :func:`require_postgres`) when PostgreSQL is absent. Raises ``RuntimeError`` with the log's
    tail when the server exits or does not answer in time.
    """
    require_postgres()
    started = time.monotonic()
    name = db_name or f"assay_prefect_{uuid.uuid4().hex[:12]}"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    home = tmp_dir / "prefect_home"
    home.mkdir(exist_ok=True)
    log_path = tmp_dir / "server.log"
    create_database(name)

    env = dict(os.environ)
    for key in list(env):
        if key.startswith("PREFECT_"):
            env.pop(key)  # nothing of the test session's own Prefect settings leaks into the server
    env.update({
        "PREFECT_HOME": str(home),
        "PREFECT_API_DATABASE_CONNECTION_URL": _database_url(name, "asyncpg"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_UI_ENABLED": "false",
    })
    if auth_string is not None:
        env["PREFECT_SERVER_API_AUTH_STRING"] = auth_string
    env.update(extra_env or {})
    port = free_port()
    command = [sys.executable, "-m", "prefect", "server", "start", "--host", HOST, "--port", str(port)]
    with open(log_path, "ab") as log:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   cwd=tmp_dir, env=env, start_new_session=True)
    server = TeamServer(url=f"http://{HOST}:{port}/api", process=process, log_path=log_path, db_name=name,
                        auth_string=auth_string, prefect_home=home, start_s=0.0)
    _RUNNING.append(server)
    if not wait:
        return server
    try:
        wait_until_healthy(server.url, process, log_path)
    except BaseException:
        server.stop()
        raise
    server.start_s = time.monotonic() - started
    return server


def wait_until_healthy(url: str, process: subprocess.Popen[bytes] | None = None, log_path: Path | None = None,
                       timeout_s: float = START_TIMEOUT_S) -> None:
    """Wait until the server at ``url`` answers ``/health``. Raises ``RuntimeError`` (with the log's
    tail where ``log_path`` is given) when ``process`` exits first or nothing answers in ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not _healthy(url):
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"prefect server exited with {process.returncode}; log:\n{_tail(log_path)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"prefect server at {url} did not answer in {timeout_s:.0f} s"
                               + (f"; log:\n{_tail(log_path)}" if log_path is not None else ""))
        time.sleep(0.5)


def _tail(path: Path | None, lines: int = 30) -> str:
    if path is None:
        return "(no log)"
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop_all() -> None:
    """Stop every server :func:`start_team_server` started and nobody stopped."""
    for server in list(_RUNNING):
        with contextlib.suppress(Exception):
            server.stop()


atexit.register(stop_all)


# --- secrets --------------------------------------------------------------------------------------


def _needles(secret: str) -> list[bytes]:
    """The secret as written (UTF-8) and base64-encoded (what a Basic ``Authorization`` header carries
    for an auth string)."""
    raw = secret.encode("utf-8")
    return [raw, base64.b64encode(raw)]


def _catalog_hits(catalog_url: str, needles: list[bytes]) -> list[str]:
    engine = create_engine(catalog_url)
    hits: list[str] = []
    try:
        tables = inspect(engine).get_table_names()
        assert tables, f"no tables in {make_url(catalog_url).render_as_string()}: nothing was checked"
        with engine.connect() as conn:
            for table in tables:
                quoted = engine.dialect.identifier_preparer.quote(table)
                for row in conn.execute(text(f"SELECT * FROM {quoted}")):
                    dumped = repr(tuple(row)).encode("utf-8", errors="replace")
                    if any(needle in dumped for needle in needles):
                        hits.append(f"table {table}: {dumped[:200]!r}")
    finally:
        engine.dispose()
    return hits


def _file_texts(path: Path) -> Iterable[bytes]:
    """The bytes of ``path`` and, for Parquet (whose pages may be compressed), its decoded rows."""
    yield path.read_bytes()
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        yield repr(pq.read_table(path).to_pylist()).encode("utf-8", errors="replace")


def assert_secret_absent(secret: str, *, catalog_url: str | None, paths: list[Path]) -> int:
    """Assert that ``secret`` appears in no row of any table of ``catalog_url`` (every table is dumped
    with ``SELECT *``) and in no file under ``paths`` (files, or folders searched recursively; Parquet
    files are also decoded). Returns the number of files searched, so callers can check that the
    search covered something."""
    needles = _needles(secret)
    hits = _catalog_hits(catalog_url, needles) if catalog_url is not None else []
    searched = 0
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            searched += 1
            if any(needle in blob for blob in _file_texts(path) for needle in needles):
                hits.append(f"file {path}")
    assert not hits, "the secret was found in:\n" + "\n".join(hits)
    return searched
