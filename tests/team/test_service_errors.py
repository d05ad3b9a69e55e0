"""One line and exit status 3 when a service is unreachable or refused us (issue 17, finding 4).

Every team command runs as a real ``assay`` process against real failures: the catalog's PostgreSQL
URL on a port where nothing listens, or naming a database that does not exist on the real server at
127.0.0.1:5432; the Prefect API on a dead port, and a real ``prefect server start`` with basic auth
(one per module) asked with a wrong auth string (401), with none, and at a path that is not its API
(404: the server's root without ``/api``, and ``/nope``). Each must print exactly one line on stderr,
``error: cannot use the catalog|Prefect API at URL: PROBLEM; CHECK``, nothing on stdout, exit 3, and
show no password and no auth string (as written or base64-encoded, as a Basic header carries it).

Before this change the same commands printed a traceback and exited 1, e.g.
``assay nightly status`` with the catalog on a dead port: exit 1, 146 lines on stderr::

    Traceback (most recent call last):
      File ".../sqlalchemy/engine/base.py", line 149, in __init__
    ...
    \tIs the server running on that host and accepting TCP/IP connections?
    (Background on this error at: https://sqlalche.me/e/20/e3q8)

and ``assay deploy`` with ``PREFECT_API_URL`` on a dead port: exit 1, 93 lines::

    Traceback (most recent call last):
      File ".../httpx/_transports/default.py", line 101, in map_httpcore_exceptions
    ...
        raise mapped_exc(message) from exc
    httpx.ConnectError: [Errno 111] Connection refused

The dead-port cases need no service; the missing database and the Prefect server need PostgreSQL
(they skip without it, and fail with ``ASSAY_REQUIRE_SERVICES``).
"""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import make_url

from assay.ports import free_port
from tests.conftest import PG_ADMIN_URL
from tests.team_server import TeamServer, require_postgres, start_team_server

ASSAY = Path(sys.executable).parent / "assay"
PASSWORD = "pw-" + secrets.token_urlsafe(12)
AUTH = f"assay-admin:{secrets.token_urlsafe(18)}"
WRONG_AUTH = f"assay-admin:{secrets.token_urlsafe(18)}"
SECRETS = (PASSWORD, AUTH, WRONG_AUTH)

#: the commands, as typed (``{folder}``: an existing folder, ``{checkpoint}``: a checkpoint folder)
COMMANDS = {
    "deploy": ["deploy"],
    "nightly run": ["nightly", "run", "--no-report"],
    "nightly status": ["nightly", "status"],
    "db upgrade": ["db", "upgrade"],
    "suite define": ["suite", "define", "nightly", "--entry", "wmt17@1:seg:kendall"],
    "checkpoints watch": ["checkpoints", "watch", "{folder}"],
    "checkpoints register": ["checkpoints", "register", "{checkpoint}"],
}
#: ``assay deploy`` talks to Prefect only; the others read or write the catalog first
CATALOG_COMMANDS = [name for name in COMMANDS if name != "deploy"]
#: the commands that talk to the Prefect API (``checkpoints register`` announces a checkpoint to it,
#: but an unreachable server there is a warning, not a failure: the catalog row is what counts)
PREFECT_COMMANDS = ["deploy", "nightly run"]


@pytest.fixture(scope="module")
def dead_port() -> int:
    """A port where nothing listens."""
    return free_port()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real checkpoint folder (a tiny random BERT, as tests/team_platform makes them), built only
    when a ``checkpoints register`` case runs."""
    from assay.workers.checkpoint import create_from_encoder
    from tests.robustness_support import save_tiny_encoder

    root = tmp_path_factory.mktemp("service-errors-checkpoint")
    return create_from_encoder(save_tiny_encoder(root / "tiny-random-bert"), root / "tiny", seed=1)


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    server = start_team_server(tmp_path_factory.mktemp("service_errors_server"), auth_string=AUTH)
    try:
        yield server
    finally:
        server.stop()


def _assay(command: str | list[str], env: dict[str, str], request: pytest.FixtureRequest,
           tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``assay COMMAND`` (a key of :data:`COMMANDS`, or the arguments) with the caller's
    environment, less every catalog and Prefect API setting it may carry, plus ``env``."""
    base = dict(os.environ)
    for key in ("ASSAY_CATALOG_URL", "PREFECT_API_URL", "PREFECT_API_AUTH_STRING", "PREFECT_API_KEY",
                "PREFECT_PROFILES_PATH"):
        base.pop(key, None)
    args = list(COMMANDS[command]) if isinstance(command, str) else command
    if "{checkpoint}" in args:
        args = [str(request.getfixturevalue("checkpoint")) if a == "{checkpoint}" else a for a in args]
    args = [str(tmp_path) if a == "{folder}" else a for a in args]
    return subprocess.run([str(ASSAY), *args], capture_output=True, text=True, env={**base, **env}, timeout=300,
                          cwd=tmp_path)


def _one_line(done: subprocess.CompletedProcess[str], prefix: str) -> str:
    """The one ``error:`` line on stderr, after checking exit 3, an empty stdout and no secret anywhere."""
    output = done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 3, output
    assert done.stdout.strip() == "", output
    assert len(lines) == 1, output
    assert lines[0].startswith(f"error: cannot use the {prefix}: "), output
    for secret in SECRETS:
        for needle in (secret, base64.b64encode(secret.encode()).decode()):
            assert needle not in output
    return lines[0]


# --- the catalog ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", CATALOG_COMMANDS)
def test_catalog_on_a_dead_port(command: str, dead_port: int, request: pytest.FixtureRequest,
                                tmp_path: Path) -> None:
    """Nothing listens at the catalog's port. PREFECT_API_URL is dead too, so no command can start a
    Prefect server, and ``nightly run`` shows that it checks the catalog before starting a flow."""
    url = f"postgresql+psycopg://assay:{PASSWORD}@127.0.0.1:{dead_port}/assay"
    done = _assay(command, {"ASSAY_CATALOG_URL": url, "PREFECT_API_URL": f"http://127.0.0.1:{dead_port}/api"},
                  request, tmp_path)
    line = _one_line(done, f"catalog at postgresql+psycopg://assay:***@127.0.0.1:{dead_port}/assay")
    assert line.endswith(": connection refused; check ASSAY_CATALOG_URL and that PostgreSQL is running"), line


@pytest.mark.postgres
@pytest.mark.parametrize("command", CATALOG_COMMANDS)
def test_catalog_database_does_not_exist(command: str, dead_port: int, request: pytest.FixtureRequest,
                                        tmp_path: Path) -> None:
    """The real PostgreSQL server answers, but the database the URL names does not exist (trust
    authentication: the password in the URL is ignored by the server, and must still be masked)."""
    require_postgres()
    name = f"assay_missing_{uuid.uuid4().hex[:12]}"
    url = make_url(PG_ADMIN_URL).set(password=PASSWORD, database=name)
    env = {"ASSAY_CATALOG_URL": url.render_as_string(hide_password=False),
           "PREFECT_API_URL": f"http://127.0.0.1:{dead_port}/api"}  # never a background Prefect server
    done = _assay(command, env, request, tmp_path)
    line = _one_line(done, f"catalog at {url.render_as_string(hide_password=True)}")
    assert f': database "{name}" does not exist; check the database name in ASSAY_CATALOG_URL' in line, line


# --- the Prefect API ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", PREFECT_COMMANDS)
def test_prefect_api_on_a_dead_port(command: str, dead_port: int, request: pytest.FixtureRequest,
                                    tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{dead_port}/api"
    done = _assay(command, {"PREFECT_API_URL": url}, request, tmp_path)
    line = _one_line(done, f"Prefect API at {url}")
    assert line.endswith(": connection refused; check PREFECT_API_URL (it ends in /api) and that the "
                         "Prefect server is running"), line


@pytest.mark.prefect
@pytest.mark.postgres
@pytest.mark.parametrize(("command", "auth"), [("deploy", WRONG_AUTH), ("nightly run", WRONG_AUTH), ("deploy", None)],
                         ids=["deploy-wrong", "nightly-run-wrong", "deploy-none"])
def test_prefect_api_refuses_the_auth_string(command: str, auth: str | None, auth_server: TeamServer,
                                             request: pytest.FixtureRequest, tmp_path: Path) -> None:
    env = {"PREFECT_API_URL": auth_server.url} | ({"PREFECT_API_AUTH_STRING": auth} if auth else {})
    line = _one_line(_assay(command, env, request, tmp_path), f"Prefect API at {auth_server.url}")
    if auth:
        assert line.endswith(": 401 unauthorized; check PREFECT_API_AUTH_STRING (the server's user:password; "
                             "PREFECT_API_KEY on Prefect Cloud)"), line
    else:
        assert ": 401 unauthorized; set PREFECT_API_AUTH_STRING" in line and line.endswith("none is set"), line


@pytest.mark.prefect
@pytest.mark.postgres
@pytest.mark.parametrize("command", PREFECT_COMMANDS)
@pytest.mark.parametrize("path", ["", "/nope"], ids=["root", "nope"])
def test_prefect_api_at_a_wrong_path(command: str, path: str, auth_server: TeamServer,
                                     request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The server answers, but not as a Prefect API: the URL lacks its /api. The right auth string is
    given, so only the path is wrong."""
    url = auth_server.url.removesuffix("/api") + path
    done = _assay(command, {"PREFECT_API_URL": url, "PREFECT_API_AUTH_STRING": AUTH}, request, tmp_path)
    line = _one_line(done, f"Prefect API at {url}")
    assert line.endswith(": 404 not found (not a Prefect API at that path); check PREFECT_API_URL (it ends in /api)")


@pytest.mark.prefect
@pytest.mark.postgres
def test_the_right_auth_string_is_let_in(auth_server: TeamServer, request: pytest.FixtureRequest,
                                         tmp_path: Path) -> None:
    """The control: with the right string the same server answers. A dry run of ``assay deploy`` on an
    empty server lists everything it would create; then it is created, and a second run changes nothing."""
    env = {"PREFECT_API_URL": auth_server.url, "PREFECT_API_AUTH_STRING": AUTH}
    # deploy refuses a suite the catalog lacks (tests/team/test_deploy_validation.py): define one
    from assay.config import load_settings
    from assay.fixtures import fixtures_dir
    from assay.jobs.ingest import ingest_path
    from assay.nightly.suites import define_suite

    dataset = ingest_path(fixtures_dir() / "demo-wmt").label
    define_suite(load_settings(), "nightly", [{"dataset": dataset, "levels": ["seg"]}])
    runs = [_assay(args, env, request, tmp_path) for args in (["deploy", "--dry-run"], ["deploy"], ["deploy"])]
    for done in runs:
        assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr
        assert AUTH not in done.stdout
    assert "cpu" in runs[0].stdout and "would be created" in runs[0].stdout
    assert runs[0].stdout.splitlines()[-1] == f"12 change(s) on {auth_server.url} (dry run)"
    assert runs[1].stdout.splitlines()[-1] == f"12 change(s) on {auth_server.url}"
    assert runs[2].stdout.splitlines()[-1] == f"0 change(s) on {auth_server.url}"


# --- what is not a service failure ----------------------------------------------------------------


@pytest.mark.prefect
@pytest.mark.postgres
def test_a_missing_object_on_a_real_prefect_api_is_not_a_service_failure(auth_server: TeamServer) -> None:
    """A 404 that the Prefect API gives about an object it does not hold is a bug of the caller: it
    keeps its traceback (classify says None), unlike a 404 from a path that is no Prefect API."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    from assay.cli.service_failures import classify

    with auth_server.settings(), get_client(sync_client=True) as client, pytest.raises(ObjectNotFound) as missing:
        client.read_work_pool("no-such-pool")
    with auth_server.settings():
        assert classify(missing.value) is None


def test_other_failures_are_not_service_failures(dead_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """An httpx failure talking to something other than the Prefect API (a model hub), and a
    PostgreSQL error about a statement, are not the services' fault: classify leaves them alone."""
    import httpx

    from assay.cli.service_failures import classify

    monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{dead_port}/api")
    with pytest.raises(httpx.ConnectError) as elsewhere:
        httpx.get(f"http://127.0.0.1:{dead_port}/models/x")  # the same port, not under the API's path
    assert classify(elsewhere.value) is None
    with pytest.raises(httpx.ConnectError) as prefect:
        httpx.get(f"http://127.0.0.1:{dead_port}/api/health")
    failure = classify(prefect.value)
    assert failure is not None and failure.service == "Prefect API" and failure.problem == "connection refused"


@pytest.mark.postgres
def test_a_statement_error_is_not_a_service_failure(postgres_url: str, dead_port: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """On a catalog that answers, an error about a statement (an unknown table: SQLSTATE 42P01) is not
    the service's fault; the same server refusing a connection to a missing database is."""
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError, ProgrammingError

    from assay.catalog.engine import make_engine
    from assay.cli.service_failures import classify

    monkeypatch.setenv("ASSAY_CATALOG_URL", postgres_url)
    engine = make_engine(postgres_url)
    try:
        with engine.connect() as conn, pytest.raises(ProgrammingError) as statement:
            conn.execute(text("SELECT * FROM no_such_table"))
    finally:
        engine.dispose()
    assert classify(statement.value) is None

    missing = make_url(postgres_url).set(database=f"assay_missing_{uuid.uuid4().hex[:12]}")
    monkeypatch.setenv("ASSAY_CATALOG_URL", missing.render_as_string(hide_password=False))
    engine = make_engine(missing.render_as_string(hide_password=False))
    try:
        with pytest.raises(OperationalError) as refused, engine.connect():
            pass
    finally:
        engine.dispose()
    failure = classify(refused.value)
    assert failure is not None and failure.service == "catalog" and "does not exist" in failure.problem
