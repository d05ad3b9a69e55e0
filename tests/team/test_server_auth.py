"""Basic auth on a real team Prefect server (``PREFECT_SERVER_API_AUTH_STRING``), and no password
left behind.

One ``prefect server start`` on PostgreSQL serves the module, with a random ``assay-admin``
password. Requests without the credentials (plain HTTP, Prefect's Python client, Prefect's CLI, the
events websocket) are refused; with ``PREFECT_API_AUTH_STRING`` they work. Then real Assay commands
run through the server, and :func:`tests.team_server.assert_secret_absent` checks that the password
is in no catalog row, no file of ASSAY_HOME (stores, report), no server log and no row of the Prefect
server's own database.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.team_server import TeamServer, assert_secret_absent, start_team_server

pytestmark = [pytest.mark.prefect, pytest.mark.postgres]

REPO = Path(__file__).resolve().parents[2]
ASSAY = Path(sys.executable).parent / "assay"
PASSWORD = secrets.token_urlsafe(18)
AUTH = f"assay-admin:{PASSWORD}"


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    server = start_team_server(tmp_path_factory.mktemp("auth_server"), auth_string=AUTH)
    try:
        yield server
    finally:
        server.stop()


def _post(url: str, auth: str | None) -> int:
    request = urllib.request.Request(url, data=b"{}", method="POST", headers={"Content-Type": "application/json"})
    if auth is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_http_requests_need_the_auth_string(auth_server: TeamServer) -> None:
    for path in ("/flows/filter", "/work_pools/filter"):
        url = auth_server.url + path
        assert _post(url, None) == 401
        assert _post(url, "assay-admin:wrong") == 401
        assert _post(url, f"assay-admin:{PASSWORD}x") == 401
        assert _post(url, AUTH) == 200
    # Prefect leaves the health check open (load balancers, Kubernetes probes)
    with urllib.request.urlopen(auth_server.url + "/health", timeout=30) as response:
        assert response.status == 200


def test_prefect_client_and_cli_need_the_auth_string(auth_server: TeamServer) -> None:
    from prefect.client.orchestration import get_client

    with auth_server.settings(with_auth=False), get_client(sync_client=True) as client, \
            pytest.raises(Exception) as refused:
        client.read_work_pools()
    assert getattr(getattr(refused.value, "response", None), "status_code", None) == 401, refused.value
    with auth_server.settings(), get_client(sync_client=True) as client:
        assert client.read_work_pools() == []

    def cli(with_auth: bool) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "prefect", "work-pool", "ls"], capture_output=True, text=True,
                              env=auth_server.client_env(with_auth=with_auth), timeout=180, cwd=REPO)

    anonymous = cli(with_auth=False)
    assert anonymous.returncode != 0 and "401" in anonymous.stdout + anonymous.stderr
    authenticated = cli(with_auth=True)
    assert authenticated.returncode == 0, authenticated.stdout + authenticated.stderr


def test_events_websocket_needs_the_auth_string(auth_server: TeamServer) -> None:
    """Prefect #17687 (the events websocket ignored basic auth, Prefect 3.2) was fixed by Prefect
    PR #17741: the socket's first message must carry the auth string. Checked on the pinned Prefect."""
    from websockets.exceptions import ConnectionClosed, InvalidStatus
    from websockets.sync.client import connect

    url = auth_server.url.replace("http://", "ws://") + "/events/out"

    def first_answer(token: str | None, subprotocol: bool = True) -> str:
        protocols = ["prefect"] if subprotocol else None
        try:
            with connect(url, subprotocols=protocols, open_timeout=30) as socket:  # type: ignore[arg-type]
                try:
                    socket.send(json.dumps({"type": "auth", "token": token}))
                    return str(json.loads(socket.recv(timeout=30))["type"])
                except ConnectionClosed as closed:
                    return f"closed {closed.rcvd.code if closed.rcvd else None}"
        except InvalidStatus as refused:  # closed before the handshake completed
            return f"refused {refused.response.status_code}"

    assert first_answer(None) == "closed 1008"
    assert first_answer("assay-admin:wrong") == "closed 1008"
    assert first_answer(AUTH) == "auth_success"
    # a client that skips the handshake altogether is refused too
    assert first_answer(None, subprotocol=False) == "refused 403"


def test_no_password_in_the_catalog_stores_report_or_logs(auth_server: TeamServer, postgres_url: str,
                                                         isolated_assay_home: Path, tmp_path: Path) -> None:
    """Real commands through the authenticated server, then every place they write is searched."""
    from prefect.client.orchestration import get_client
    from sqlalchemy import make_url

    from assay.fixtures import fixtures_dir

    # The catalog URL carries a password too (PostgreSQL here trusts local connections and ignores
    # it): it must not be written anywhere either.
    catalog_password = secrets.token_urlsafe(18)
    catalog_url = make_url(postgres_url).set(password=catalog_password).render_as_string(hide_password=False)
    env = auth_server.client_env()
    env.update({"ASSAY_HOME": str(isolated_assay_home), "ASSAY_CATALOG_URL": catalog_url})

    def assay(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(ASSAY), *args], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        with (tmp_path / "assay-output.log").open("a") as log:
            log.write(done.stdout + done.stderr)
        return done

    assay("db", "upgrade")
    ingested = json.loads(assay("ingest", str(fixtures_dir() / "demo-wmt"), "--json").stdout)
    assert ingested["created"]
    dataset = ingested["name"]
    assay("score", "--dataset", dataset, "--metric", "sentbleu")
    assay("evaluate", "--dataset", dataset)
    report = Path(json.loads(assay("report", "--out", str(tmp_path / "report"), "--json").stdout)["path"])
    assert report.is_file()

    # the commands really ran on this server (so its auth string was in use throughout)
    with auth_server.settings(), get_client(sync_client=True) as client:
        runs = client.read_flow_runs()
    assert runs and all(run.state is not None and run.state.is_completed() for run in runs), runs

    assert list(isolated_assay_home.rglob("*.parquet")), "no store was written: the search would prove nothing"
    paths = [isolated_assay_home, tmp_path, auth_server.log_path]
    for secret in (PASSWORD, AUTH, catalog_password):
        searched = assert_secret_absent(secret, catalog_url=postgres_url, paths=paths)
        assert searched >= 5  # the catalog's stores, the report, the command output, the server log
        assert_secret_absent(secret, catalog_url=auth_server.database_url, paths=[])


def test_assert_secret_absent_finds_a_planted_secret(postgres_url: str, tmp_path: Path) -> None:
    """The check itself can fail: a secret in a table row, a Parquet file, a base64 header in a log."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from sqlalchemy import create_engine, text

    secret = secrets.token_urlsafe(12)
    (tmp_path / "clean.log").write_text("nothing here\n")
    engine = create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE notes (id integer, body text)"))
        conn.execute(text("INSERT INTO notes VALUES (1, 'fine')"))
    assert assert_secret_absent(secret, catalog_url=postgres_url, paths=[tmp_path]) == 1

    pq.write_table(pa.table({"x": [f"password={secret}"] * 50}), tmp_path / "t.parquet", compression="zstd")
    with pytest.raises(AssertionError, match=r"t\.parquet"):
        assert_secret_absent(secret, catalog_url=None, paths=[tmp_path])
    os.remove(tmp_path / "t.parquet")

    (tmp_path / "server.log").write_text("Authorization: Basic " + base64.b64encode(secret.encode()).decode())
    with pytest.raises(AssertionError, match=r"server\.log"):
        assert_secret_absent(secret, catalog_url=None, paths=[tmp_path])
    os.remove(tmp_path / "server.log")

    with engine.begin() as conn:
        conn.execute(text("INSERT INTO notes VALUES (2, :body)"), {"body": f"url=postgresql://u:{secret}@h/db"})
    engine.dispose()
    with pytest.raises(AssertionError, match="table notes"):
        assert_secret_absent(secret, catalog_url=postgres_url, paths=[])
