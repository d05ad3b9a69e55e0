"""Shared test fixtures.

Tests read the real datasets from ``../shared/data`` (beside the repository). Services
(PostgreSQL at 127.0.0.1:5432) may be absent on a user's machine, where their tests skip; with
``ASSAY_REQUIRE_SERVICES=1`` (set by ``./dev test`` when ``CI`` is set) a missing service fails.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("ASSAY_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def services_required() -> bool:
    return os.environ.get("ASSAY_REQUIRE_SERVICES", "") not in ("", "0", "false")


#: Test modules handed to the xdist workers first, the longest first (pyproject.toml's addopts: each
#: module runs whole on one worker, so its module-scoped fixtures are built once; the modules are
#: handed out in collection order). The rest keep their order.
SLOW_MODULES_FIRST = (
    "tests/team/test_nightly_e2e.py",
    "tests/team/test_nightly_kill_e2e.py",
    "tests/test_reference_numbers.py",
    "tests/training/test_robustness.py",
    "tests/sweeps/test_sweep_flow.py",
    "tests/test_progress_cli.py",
    "tests/test_training_cli.py",
    "tests/training/test_resume.py",
    "tests/training/test_distributed.py",
    "tests/test_background_server.py",
    "tests/team/test_server_auth.py",
    "tests/team/test_service_errors.py",
    "tests/team/test_deploy_templates.py",
    "tests/team/test_deploy_validation.py",
    "tests/test_flows_and_cli.py",
)


_PREFECT_HOME_KEY = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Import Prefect before pytest's logging plugin installs its handlers.

    Prefect configures logging when it is first imported, with ``logging.config.dictConfig``, which
    closes every handler already on the root logger, pytest's own log-file and capture handlers
    included. Imported first inside a test, it left that worker's pytest writing to closed files
    ("I/O operation on closed file" in every later test, then "lost sys.stderr"), depending on which
    test happened to import Prefect first. This hook runs before the logging plugin's
    ``pytest_configure`` (which is ``trylast``). Prefect's state goes to a temporary home of this
    test process, removed at the end.
    """
    if "PREFECT_HOME" not in os.environ:
        home = tempfile.mkdtemp(prefix="assay-tests-prefect-")
        config.stash[_PREFECT_HOME_KEY] = home
        os.environ["PREFECT_HOME"] = home
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_TO_API_ENABLED", "false")
    # Prefect reads its settings once, here: a test that runs a flow without the harness gets
    # Prefect's temporary server, whose start Prefect waits 20 s for by default. Beside the other
    # workers of a 2-core CI machine that start once took longer ("Timed out while attempting to
    # connect to ephemeral Prefect API server"); the CLI's own default is 120 s (assay.flows.engine).
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    # One compute thread per process. The suite runs three xdist workers (and their servers, workers
    # and command subprocesses, which inherit this) on two cores; torch's default of one OpenMP thread
    # per core oversubscribes them, and the idle threads spin. Measured on WMT17's 3,920 judged
    # segments (BERTScore, MiniLM layer 4) on the idle machine: 62.8 s of CPU with two threads, 49.8 s
    # with one. Users' runs keep torch's default.
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import prefect.main  # noqa: F401  (prefect/__init__ is lazy; prefect.main configures its logging)

    _start_shared_prefect_server(config)


#: the API URL of the Prefect server that the xdist workers' :func:`prefect_engine` share
SHARED_PREFECT_URL_VARIABLE = "ASSAY_TEST_PREFECT_API_URL"
#: the shared server's loops that nothing on it uses: it serves flows run in the test processes and in
#: their ``assay`` commands, with no deployment, schedule, work pool or automation (the team tests,
#: which have those, run servers of their own with every service). Each loop queries the database
#: every few seconds: idle, the server used 2.2-2.4 CPU-s a minute with them and 1.3 without (one
#: minute each on this machine), over the whole session, on a 2-core machine where the suite is
#: CPU-bound. The task-run recorder and the event persister, which flows need, stay on.
SHARED_SERVER_SERVICES_OFF = {f"PREFECT_SERVER_SERVICES_{service}_ENABLED": "false" for service in (
    "SCHEDULER", "LATE_RUNS", "FOREMAN", "TRIGGERS", "REPOSSESSOR", "CANCELLATION_CLEANUP", "PAUSE_EXPIRATIONS",
    "CLEANUP_RECONCILER")}
_SHARED_SERVER_KEY = pytest.StashKey[object]()


def _start_shared_prefect_server(config: pytest.Config) -> None:
    """Under xdist, the controller starts one Prefect server for every worker's :func:`prefect_engine`.

    Each worker used to start Prefect's test harness of its own (a temporary SQLite server): three
    servers, each about 20 s of CPU to start (Prefect's migrations) and 1.5 s per minute to keep, on a
    2-core machine where the suite is CPU-bound. One ``prefect server start`` on a PostgreSQL database
    (tests/team_server.py; PostgreSQL takes the workers' concurrent writes, SQLite would lock) serves
    them all. It is spawned here without waiting (the workers wait for it when a test first needs it),
    its URL goes to the workers in :data:`SHARED_PREFECT_URL_VARIABLE`, and it is stopped and its
    database dropped in :func:`pytest_unconfigure`. Without xdist or PostgreSQL, each process keeps
    the harness of its own.
    """
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return  # an xdist worker, or one process (-n 0)
    if SHARED_PREFECT_URL_VARIABLE in os.environ or _pg_available() is not None:
        return
    from tests.team_server import start_team_server

    root = Path(tempfile.mkdtemp(prefix="assay-tests-shared-prefect-"))
    server = start_team_server(root, wait=False, extra_env=SHARED_SERVER_SERVICES_OFF)
    config.stash[_SHARED_SERVER_KEY] = (server, root)
    os.environ[SHARED_PREFECT_URL_VARIABLE] = server.url


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(_PREFECT_HOME_KEY, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)
    shared = config.stash.get(_SHARED_SERVER_KEY, None)
    if shared is not None:
        server, root = shared
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {module: i for i, module in enumerate(SLOW_MODULES_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable sort


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real human-judgment datasets beside the repository."""
    if not SHARED_DATA.is_dir():
        if services_required():
            pytest.fail(f"shared data not found at {SHARED_DATA}")
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@contextmanager
def assay_home_at(home: Path) -> Iterator[Path]:
    """``ASSAY_HOME`` pointed at ``home`` while a module- or session-scoped fixture builds it (the
    autouse :func:`isolated_assay_home` is per test and cannot serve one); the catalog engines are
    reset on entry and exit and the previous value is restored."""
    from assay.catalog.engine import reset_engines

    before = os.environ.get("ASSAY_HOME")
    os.environ["ASSAY_HOME"] = str(home)
    reset_engines()
    try:
        yield home
    finally:
        reset_engines()
        if before is None:
            os.environ.pop("ASSAY_HOME", None)
        else:
            os.environ["ASSAY_HOME"] = before


@pytest.fixture(autouse=True)
def isolated_assay_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own ASSAY_HOME so nothing leaks into ~/.assay."""
    home = tmp_path_factory.mktemp("assay_home")
    monkeypatch.setenv("ASSAY_HOME", str(home))
    monkeypatch.delenv("ASSAY_CATALOG_URL", raising=False)
    monkeypatch.delenv("ASSAY_DATA_DIR", raising=False)
    from assay.catalog.engine import reset_engines

    reset_engines()
    return home


@pytest.fixture
def ingested(tmp_path_factory: pytest.TempPathFactory, shared_data: Path,
             isolated_assay_home: Path) -> Callable[..., Path]:
    """``ingested("wmt16-da-seg", Ingest("wmt17-da", name="mixed"), ...)`` fills this test's home
    with a copy of a home where those datasets of ``../shared/data`` were ingested in that order
    (tests/ingested_homes.py: built once for the suite) and returns the home."""
    from tests.ingested_homes import copy_ingested

    return functools.partial(copy_ingested, isolated_assay_home, tmp_path_factory, shared_data)


@pytest.fixture(scope="session")
def prefect_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The real Prefect engine on a temporary local server: the one the xdist controller started for
    every worker (:func:`_start_shared_prefect_server`), else Prefect's test harness, one per process.

    The harness's API URL is also exported as ``PREFECT_API_URL``: Assay respects a configured URL,
    so commands run in these tests use the harness and never start the background server of
    :mod:`assay.cli.background_server` (which ``tests/test_background_server.py`` tests on its own).
    """
    os.environ.setdefault("PREFECT_HOME", str(tmp_path_factory.mktemp("prefect_home")))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_TO_API_ENABLED", "false")
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    shared_url = os.environ.get(SHARED_PREFECT_URL_VARIABLE)
    with _shared_prefect_server(shared_url) if shared_url else prefect_test_harness(server_startup_timeout=180):
        before = os.environ.get("PREFECT_API_URL")
        os.environ["PREFECT_API_URL"] = str(PREFECT_API_URL.value())
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("PREFECT_API_URL", None)
            else:
                os.environ["PREFECT_API_URL"] = before


@contextmanager
def _shared_prefect_server(url: str) -> Iterator[None]:
    """This process's Prefect client pointed at the shared server at ``url`` (waiting until it
    answers), as :func:`prefect.testing.utilities.prefect_test_harness` points it at its own; logs and
    events are drained before the client lets go."""
    import prefect.context
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from tests.team_server import wait_until_healthy

    wait_until_healthy(url)
    with temporary_settings(updates={PREFECT_API_URL: url}), \
            prefect.context._temporary_global_settings_context(prefect.context.get_settings_context()):
        try:
            yield
        finally:
            with suppress(RuntimeError):  # the log worker may never have started
                APILogWorker.drain_all()
            EventsWorker.drain_all()


@pytest.fixture(scope="session", autouse=True)
def no_background_prefect_servers_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A safety net: stop any background Prefect server that a test started in its ASSAY_HOME and
    did not stop (tests that start one stop it themselves; this catches a command that started
    one unexpectedly, so no server outlives the test session)."""
    yield
    from dataclasses import replace

    from assay.cli.background_server import STATE_FILE, stop_server
    from assay.config import load_settings

    for state in tmp_path_factory.getbasetemp().glob(f"**/server/{STATE_FILE}"):
        stop_server(replace(load_settings(), home=state.parent.parent))


# PostgreSQL: a fresh database per test on the server at 127.0.0.1:5432 (trust authentication),
# dropped afterwards. Without the server the test skips, unless ASSAY_REQUIRE_SERVICES is set (CI).
PG_ADMIN_URL = os.environ.get("ASSAY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def _pg_available() -> str | None:
    try:
        engine = create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
        return None
    except Exception as exc:  # any driver/connection failure means "not available"
        return str(exc).splitlines()[0]


@pytest.fixture
def postgres_url() -> Iterator[str]:
    problem = _pg_available()
    if problem is not None:
        if services_required():
            pytest.fail(f"PostgreSQL at {PG_ADMIN_URL} is required (ASSAY_REQUIRE_SERVICES): {problem}")
        pytest.skip(f"PostgreSQL not available: {problem}")
    from tests.team_server import create_database, drop_database

    name = f"assay_test_{uuid.uuid4().hex[:12]}"
    create_database(name)
    try:
        yield PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        drop_database(name)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'catalog.sqlite'}"


