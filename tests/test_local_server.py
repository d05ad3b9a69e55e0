"""The background local Prefect server: start, reuse, recover from stale state, one server for
racing starters, stop; and which Prefect API a command chooses.

The tests share one ASSAY_HOME (module scope) so that Prefect's database migrations, the slow part
of a first start, run once. Every server a test starts is stopped by the module fixture's
finalizer, also when a test fails.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from assay.config import Settings, load_settings
from assay.flows import local_server
from assay.flows.local_server import ServerState, ensure_server, read_state, server_status, stop_server

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
    except OSError:
        return False
    return b"prefect" in args and b"server" in args


class Servers:
    """The module's ASSAY_HOME and every server pid seen in it, so that all can be stopped."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.settings: Settings = replace(load_settings(), home=home)
        self.pids: set[int] = set()

    def ensure(self) -> tuple[ServerState, bool]:
        state, started = ensure_server(self.settings, announce=False)
        self.pids.add(state.pid)
        return state, started

    def stop_all(self) -> None:
        stop_server(self.settings)
        for pid in self.pids:
            if _is_prefect_server(pid):
                os.killpg(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    tracked = Servers(tmp_path_factory.mktemp("server_home"))
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
    assert first.url == f"http://127.0.0.1:{first.port}/api" and local_server.healthy(first.url)
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


def test_server_killed_with_sigkill_is_replaced(servers: Servers) -> None:
    old, _ = servers.ensure()
    os.killpg(old.pid, signal.SIGKILL)
    deadline = time.time() + 10
    while _is_prefect_server(old.pid) and time.time() < deadline:
        time.sleep(0.1)
    assert not server_status(servers.settings).running
    new, started = servers.ensure()
    assert started and new.pid != old.pid and local_server.healthy(new.url)


def test_state_with_a_dead_pid_is_recovered(servers: Servers) -> None:
    stop_server(servers.settings)
    stale = ServerState(pid=_dead_pid(), port=1, url="http://127.0.0.1:1/api", started_at=time.time() - 3600,
                        prefect_version=local_server._prefect_version())
    servers.settings.server_dir.mkdir(parents=True, exist_ok=True)
    (servers.settings.server_dir / "state.json").write_text(json.dumps(stale.as_dict()))
    status = server_status(servers.settings)
    assert not status.running and status.problem and str(stale.pid) in status.problem
    new, started = servers.ensure()
    assert started and new.pid != stale.pid and local_server.healthy(new.url)


def test_a_reused_pid_is_never_signalled(servers: Servers) -> None:
    stop_server(servers.settings)
    bystander = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        stale = ServerState(pid=bystander.pid, port=1, url="http://127.0.0.1:1/api", started_at=time.time(),
                            prefect_version=local_server._prefect_version())
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
from assay.flows.local_server import ensure_server
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


# --- which API a command chooses (no server is started by these) ------------------------------

CHOOSE = ("from assay.flows.engine import configure_prefect_defaults; import os; configure_prefect_defaults(); "
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
