"""The background local Prefect server: start, reuse, recover from stale state, one server for
racing starters, stop; stopping by itself (idle, its home deleted) but not while a flow is in
progress; and which Prefect API a command chooses.

The tests share one ASSAY_HOME (module scope) so that Prefect's database migrations, the slow part
of a first start, run once; tests that need a home of their own start from a copy of its Prefect
database. Every server a test starts is stopped by the module fixture's finalizer, also when a
test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from assay.cli import background_server
from assay.cli.background_server import ServerState, ensure_server, read_state, server_status, stop_server
from assay.config import Settings, load_settings

pytestmark = pytest.mark.prefect

REPO = Path(__file__).resolve().parent.parent
ASSAY = Path(sys.executable).parent / "assay"


def _environment(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "ASSAY_HOME": str(home), **extra}
    for key in ("PREFECT_API_URL", "PREFECT_HOME", "PREFECT_PROFILES_PATH", "ASSAY_PREFECT_SERVER"):
        if key not in extra:
            env.pop(key, None)
    return env


def _assay(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ASSAY), *args], capture_output=True, text=True, env=_environment(home, **extra),
                          timeout=300, cwd=REPO)


def _is_prefect_server(pid: int) -> bool:
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if state == "Z":  # exited, waiting for its parent (this test process, when it started it)
        return False
    return background_server.PROCESS_MODULE.encode() in args or (b"prefect" in args and b"server" in args)


def _gone_within(pid: int, seconds: float) -> float | None:
    """Seconds until ``pid`` stopped being a server process, or None if it still is after ``seconds``."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)  # reap it when this process started it
        if not _is_prefect_server(pid):
            return time.monotonic() - started
        time.sleep(0.2)
    return None


class Servers:
    """The module's ASSAY_HOME, the other homes its tests start servers in and every server pid seen
    in them, so that all can be stopped."""

    def __init__(self, home: Path, factory: pytest.TempPathFactory) -> None:
        self.home = home
        self.settings: Settings = replace(load_settings(), home=home)
        self.pids: set[int] = set()
        self.factory = factory
        self.homes: list[Settings] = []

    def ensure(self, settings: Settings | None = None) -> tuple[ServerState, bool]:
        state, started = ensure_server(settings or self.settings, announce=False)
        self.pids.add(state.pid)
        return state, started

    def new_home(self, name: str, **changes: object) -> Settings:
        """A fresh ASSAY_HOME with a copy of the module home's Prefect database (migrated by the first
        start, so this start is quick); the module's server is stopped for the copy."""
        settings = replace(self.settings, home=self.factory.mktemp(name), **changes)  # type: ignore[arg-type]
        self.homes.append(settings)
        if (self.settings.prefect_home / "prefect.db").exists():
            stop_server(self.settings)
            shutil.copytree(self.settings.prefect_home, settings.prefect_home, dirs_exist_ok=True)
        return settings

    def stop_all(self) -> None:
        for settings in [self.settings, *self.homes]:
            if settings.home.exists():
                stop_server(settings)
        for pid in self.pids:
            if _is_prefect_server(pid):
                os.killpg(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    tracked = Servers(tmp_path_factory.mktemp("server_home"), tmp_path_factory)
    try:
        yield tracked
    finally:
        tracked.stop_all()


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_start_status_and_reuse(servers: Servers) -> None:
    first, started = servers.ensure()
    assert started
    assert first.url == f"http://127.0.0.1:{first.port}/api" and background_server.healthy(first.url)
    recorded = json.loads((servers.home / "server" / "state.json").read_text())
    assert {"pid", "port", "url", "started_at", "prefect_version"} <= set(recorded)
    assert recorded["pid"] == first.pid and (servers.home / "server" / "server.log").exists()
    status = server_status(servers.settings)
    assert status.running and status.state == first

    again, started_again = servers.ensure()
    assert not started_again and (again.pid, again.port) == (first.pid, first.port)

    shown = _assay(servers.home, "server", "status", "--json")
    assert shown.returncode == 0, shown.stderr
    payload = json.loads(shown.stdout)
    assert payload["running"] and payload["pid"] == first.pid and payload["url"] == first.url
    assert payload["uptime_s"] >= 0
    assert payload["idle_limit_s"] == servers.settings.server_idle_s == first.idle_limit_s
    restarted = _assay(servers.home, "server", "start")
    assert restarted.returncode == 0 and "already running" in restarted.stdout and first.url in restarted.stdout


def test_a_command_uses_the_running_server(servers: Servers) -> None:
    from assay.fixtures import fixtures_dir

    state, _ = servers.ensure()
    done = _assay(servers.home, "ingest", str(fixtures_dir() / "demo-wmt"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["created"]
    assert "starting a local Prefect server" not in done.stderr  # reused, so nothing to announce
    assert read_state(servers.settings) == state


def test_status_shows_the_remaining_idle_time_and_looking_does_not_reset_it(servers: Servers) -> None:
    state, _ = servers.ensure()
    first = server_status(servers.settings)
    assert first.running and first.idle is not None
    assert first.idle.idle_limit_s == servers.settings.server_idle_s
    time.sleep(2.0)
    shown = _assay(servers.home, "server", "status", "--json")
    assert shown.returncode == 0, shown.stderr
    payload = json.loads(shown.stdout)
    assert payload["idle_limit_s"] == servers.settings.server_idle_s and payload["flow_in_progress"] is False
    # the earlier look did not count as activity: the idle time kept running
    assert payload["idle_s"] >= first.idle.idle_s + 1.5
    assert payload["idle_remaining_s"] == pytest.approx(payload["idle_limit_s"] - payload["idle_s"], abs=0.2)
    text = _assay(servers.home, "server", "status")
    assert text.returncode == 0 and "stops in" in text.stdout and "ASSAY_SERVER_IDLE" in text.stdout
    # a use of the server (an API request) starts the idle time again
    assert background_server.healthy(state.url)
    after = server_status(servers.settings)
    assert after.idle is not None and after.idle.idle_s < 1.0


def test_server_killed_with_sigkill_is_replaced(servers: Servers) -> None:
    old, _ = servers.ensure()
    os.killpg(old.pid, signal.SIGKILL)
    deadline = time.time() + 10
    while _is_prefect_server(old.pid) and time.time() < deadline:
        time.sleep(0.1)
    assert not server_status(servers.settings).running
    new, started = servers.ensure()
    assert started and new.pid != old.pid and background_server.healthy(new.url)


def test_state_with_a_dead_pid_is_recovered(servers: Servers) -> None:
    stop_server(servers.settings)
    stale = ServerState(pid=_dead_pid(), port=1, url="http://127.0.0.1:1/api", started_at=time.time() - 3600,
                        prefect_version=background_server._prefect_version())
    servers.settings.server_dir.mkdir(parents=True, exist_ok=True)
    (servers.settings.server_dir / "state.json").write_text(json.dumps(stale.as_dict()))
    status = server_status(servers.settings)
    assert not status.running and status.problem and str(stale.pid) in status.problem
    new, started = servers.ensure()
    assert started and new.pid != stale.pid and background_server.healthy(new.url)


def test_a_reused_pid_is_never_signalled(servers: Servers) -> None:
    stop_server(servers.settings)
    bystander = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        stale = ServerState(pid=bystander.pid, port=1, url="http://127.0.0.1:1/api", started_at=time.time(),
                            prefect_version=background_server._prefect_version())
        (servers.settings.server_dir / "state.json").write_text(json.dumps(stale.as_dict()))
        new, started = servers.ensure()
        assert started and new.pid != bystander.pid
        assert bystander.poll() is None  # the other program still runs
        # and stopping stops the server, not the program that took over the old pid
        assert stop_server(servers.settings) == new
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


RACER = """
import json, sys, time
from dataclasses import replace
from pathlib import Path
from assay.config import load_settings
from assay.cli.background_server import ensure_server
at = float(sys.argv[1])
time.sleep(max(0.0, at - time.time()))
state, started = ensure_server(replace(load_settings(), home=Path(sys.argv[2])))
print(json.dumps({"pid": state.pid, "url": state.url, "started": started}))
"""


def test_two_racing_starters_start_one_server(servers: Servers) -> None:
    stop_server(servers.settings)
    at = time.time() + 3  # both are past their imports by then, and call ensure_server together
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(at), str(servers.home)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=_environment(servers.home))
              for _ in range(2)]
    outputs = [racer.communicate(timeout=300) for racer in racers]
    answers = [json.loads(out) for out, _ in outputs]
    servers.pids.update(a["pid"] for a in answers)
    assert all(r.returncode == 0 for r in racers), [err for _, err in outputs]
    assert answers[0]["pid"] == answers[1]["pid"] and answers[0]["url"] == answers[1]["url"]
    assert sorted(a["started"] for a in answers) == [False, True]
    announcements = sum(err.count("starting a local Prefect server") for _, err in outputs)
    assert announcements == 1


def test_stop(servers: Servers) -> None:
    state, _ = servers.ensure()
    assert stop_server(servers.settings) == state
    assert not _is_prefect_server(state.pid) and read_state(servers.settings) is None
    assert stop_server(servers.settings) is None  # nothing to stop: no error
    done = _assay(servers.home, "server", "stop")
    assert done.returncode == 0 and "no local Prefect server" in done.stdout
    shown = _assay(servers.home, "server", "status", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["running"] is False


# --- stopping by itself ---------------------------------------------------------------------

#: seconds a test allows a server to stop in once it should: the watchdog checks every second, then
#: uvicorn shuts down gracefully (Prefect's services stop); generous for a busy 2-core machine
STOPS_WITHIN_S = 45.0


def test_a_bad_idle_limit_is_a_clear_error(tmp_path: Path) -> None:
    for bad in ("abc", "0", "-5", "nan"):
        done = _assay(tmp_path, "server", "start", ASSAY_SERVER_IDLE=bad)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"ASSAY_SERVER_IDLE is {bad!r}" in done.stderr and "seconds greater than 0" in done.stderr
    assert not (tmp_path / "server" / "state.json").exists()


def test_it_stops_when_idle_and_the_next_command_starts_a_new_one(servers: Servers) -> None:
    settings = servers.new_home("idle_home")
    started = _assay(settings.home, "server", "start", ASSAY_SERVER_IDLE="3")
    assert started.returncode == 0, started.stderr
    state = read_state(settings)
    assert state is not None and state.idle_limit_s == 3.0
    servers.pids.add(state.pid)
    took = _gone_within(state.pid, 3.0 + STOPS_WITHIN_S)
    assert took is not None, "the idle server did not stop"
    assert read_state(settings) is None  # no stale state left behind
    assert "assay stops the server: idle for 3 s" in (settings.server_dir / "server.log").read_text()
    again, started_again = servers.ensure(settings)
    assert started_again and again.pid != state.pid and background_server.healthy(again.url)
    assert stop_server(settings) == again


HOLD_A_FLOW = """
import sys, time
from assay.cli.runner import choose_prefect_api
with choose_prefect_api():
    print("in the flow", flush=True)
    time.sleep(120)
"""


def test_a_flow_in_progress_keeps_it_up_and_a_killed_one_does_not(servers: Servers) -> None:
    """A command that runs a flow (here: the runner's own context, held as a long task holds it,
    with no API request) keeps an idle server up past its limit; killed, it no longer does."""
    settings = servers.new_home("flow_home")
    command = subprocess.Popen([sys.executable, "-c", HOLD_A_FLOW], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=_environment(settings.home, ASSAY_SERVER_IDLE="2"))
    state: ServerState | None = None
    try:
        assert command.stdout is not None and command.stdout.readline().strip() == "in the flow", command.stderr
        state = read_state(settings)
        assert state is not None and state.idle_limit_s == 2.0
        servers.pids.add(state.pid)
        time.sleep(5.0)  # more than twice the limit without a request
        status = server_status(settings)
        assert status.running and status.idle is not None and status.idle.flow_in_progress
        assert status.idle.idle_s < 1.5 and status.idle.remaining_s > 0.5
    finally:
        command.kill()
        command.communicate()
    assert state is not None
    took = _gone_within(state.pid, 2.0 + STOPS_WITHIN_S)
    assert took is not None, "the server outlived the killed command by more than its idle limit"
    assert read_state(settings) is None


def test_deleting_its_home_stops_it(servers: Servers) -> None:
    settings = servers.new_home("doomed_home")
    state, started = servers.ensure(settings)
    assert started and background_server.healthy(state.url)
    shutil.rmtree(settings.home)
    took = _gone_within(state.pid, STOPS_WITHIN_S)
    assert took is not None, "the server outlived its deleted ASSAY_HOME"
    assert not background_server.healthy(state.url)


# --- which API a command chooses (no server is started by these) ------------------------------

CHOOSE = ("from assay.cli.runner import choose_prefect_api; import os\nwith choose_prefect_api(): "
          "print(os.environ.get('PREFECT_API_URL', ''))")


def _choose(home: Path, **extra: str) -> str:
    done = subprocess.run([sys.executable, "-c", CHOOSE], capture_output=True, text=True,
                          env=_environment(home, **extra), timeout=120, check=True)
    return done.stdout.strip()


def test_a_configured_api_url_is_used_as_it_is(tmp_path: Path) -> None:
    assert _choose(tmp_path, PREFECT_API_URL="http://prefect.example:4200/api") == "http://prefect.example:4200/api"
    assert not (tmp_path / "server" / "state.json").exists()


def test_a_profile_api_url_is_used_as_it_is(tmp_path: Path) -> None:
    profiles = tmp_path / "prefect" / "profiles.toml"
    profiles.parent.mkdir(parents=True)
    profiles.write_text('active = "team"\n\n[profiles.team]\nPREFECT_API_URL = "http://team:4200/api"\n')
    assert _choose(tmp_path) == ""  # left to Prefect, which reads its profile itself
    assert not (tmp_path / "server" / "state.json").exists()


def test_ephemeral_keeps_prefects_temporary_server(tmp_path: Path) -> None:
    assert _choose(tmp_path, ASSAY_PREFECT_SERVER="ephemeral") == ""
    assert not (tmp_path / "server" / "state.json").exists()
