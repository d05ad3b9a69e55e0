"""The command preloader (:mod:`assay.cli.command_preloader`): after the first flow command of a home,
``assay score`` and ``assay evaluate`` run in a process forked from a preloaded interpreter, with
the same output and exit status as in their own process; another environment, or
``ASSAY_PRELOAD=0``, runs the command in its own process; the preloader goes with its server.

The commands run as a user types them (subprocesses of the installed ``assay`` entry point) in one
fresh ASSAY_HOME with the default background server, stopped at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.cli import command_preloader
from assay.cli.command_preloader import Preloader, command_name, enabled, relevant_environment
from assay.config import load_settings

REPO = Path(__file__).resolve().parent.parent
ASSAY = Path(sys.executable).parent / "assay"
DEMO_CAPTIONS = REPO / "platform" / "assay" / "fixtures" / "data" / "demo-captions.tsv"


def test_which_commands_and_environments_may_use_it() -> None:
    assert command_name(["score", "--dataset", "x"]) == "score"
    assert command_name(["--help"]) is None and command_name([]) is None
    assert {"score", "evaluate", "leaderboard"} <= command_preloader.PRELOADED_COMMANDS
    assert enabled({}) and enabled({"ASSAY_PRELOAD": "1"})
    assert not enabled({"ASSAY_PRELOAD": "0"})
    assert not enabled({"PREFECT_API_URL": "http://team:4200/api"})  # a configured server: no preloader
    env = {"ASSAY_HOME": "/h", "PREFECT_HOME": "/p", "DO_NOT_TRACK": "1", "PATH": "/bin", "TERM": "xterm"}
    assert relevant_environment(env) == {"ASSAY_HOME": "/h", "PREFECT_HOME": "/p", "DO_NOT_TRACK": "1"}


def test_a_child_refuses_another_environment_interpreter_or_changed_code(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    settings.home.mkdir(parents=True, exist_ok=True)
    env = {"ASSAY_HOME": str(settings.home), "PATH": "/bin"}
    preloader = Preloader(settings, os.getpid(), "http://127.0.0.1:1/api", relevant_environment(env))
    request = {"executable": sys.executable, "env": {**env, "PATH": "/usr/bin", "TERM": "dumb"}}
    assert preloader.refusal(request) is None  # other variables are the command's own
    assert preloader.refusal({**request, "env": {**env, "ASSAY_SERVER_IDLE": "5"}}) == \
        "another environment (ASSAY_SERVER_IDLE)"
    assert preloader.refusal({**request, "env": {**env, "PREFECT_API_URL": "http://team/api"}}) == \
        "another environment (PREFECT_API_URL)"
    assert preloader.refusal({**request, "executable": "/other/python"}) == "another interpreter (/other/python)"
    changed = {**preloader.sources, next(iter(preloader.sources)): 0}
    monkeypatch.setattr(command_preloader, "_assay_sources", lambda: changed)
    assert preloader.refusal(request) == command_preloader.CODE_CHANGED


def _environment(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "ASSAY_HOME": str(home), **extra}
    for key in ("PREFECT_API_URL", "PREFECT_HOME", "PREFECT_PROFILES_PATH", "ASSAY_PREFECT_SERVER", "ASSAY_PRELOAD"):
        if key not in extra:
            env.pop(key, None)
    return env


def _assay(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ASSAY), *args], capture_output=True, text=True, env=_environment(home, **extra),
                          timeout=600, cwd=REPO)


def _forked(home: Path) -> int:
    """How many commands the home's preloader has run (its log's lines)."""
    log = home / "server" / command_preloader.LOG_FILE
    return log.read_text(encoding="utf-8").count(" runs `assay ") if log.exists() else 0


def _without_timing(summary: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in summary.items() if key != "seconds"}


def _wait_for(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A home where a first flow command (the ingest) started the server and the preloader."""
    home = tmp_path_factory.mktemp("preloader_home")
    try:
        done = _assay(home, "ingest", str(DEMO_CAPTIONS), "--format", "generic", "--name", "captions",
                      "-o", "group=task", "-o", "system=model", "-o", "segment_id=id", "-o", "candidate=caption",
                      "-o", "references=reference", "-o", "human_raw=rating", "-o", "scale=1,5")
        assert done.returncode == 0, done.stderr
        socket = home / "server" / command_preloader.SOCKET_FILE
        assert _wait_for(socket.exists, 180), (home / "server" / command_preloader.LOG_FILE).read_text()
        yield home
    finally:
        _assay(home, "server", "stop")


@pytest.mark.prefect
@pytest.mark.slow
def test_a_flow_command_runs_in_a_forked_process_with_the_same_result(home: Path) -> None:
    before = _forked(home)
    preloaded = _assay(home, "score", "--dataset", "captions", "--metric", "chrf", "--json")
    assert preloaded.returncode == 0, preloaded.stderr
    assert _forked(home) == before + 1
    summary = json.loads(preloaded.stdout)
    assert summary["computed"] == summary["unique_segments"] > 0 and summary["run_id"]

    # the same request in its own process: the same answer (every segment cached now)
    own = _assay(home, "score", "--dataset", "captions", "--metric", "chrf", "--json", ASSAY_PRELOAD="0")
    assert own.returncode == 0 and _forked(home) == before + 1
    again = _assay(home, "score", "--dataset", "captions", "--metric", "chrf", "--json")
    assert _without_timing(json.loads(again.stdout)) == _without_timing(json.loads(own.stdout))

    evaluated = _assay(home, "evaluate", "--dataset", "captions", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert {row["metric"] for row in json.loads(evaluated.stdout)} == {"chrf"}

    # the leaderboard (a query, no flow) is forked too, with the answer of its own process
    before = _forked(home)
    board = _assay(home, "leaderboard", "--dataset", "captions", "--group", "captions", "--json")
    assert board.returncode == 0 and _forked(home) == before + 1, board.stderr
    own_board = _assay(home, "leaderboard", "--dataset", "captions", "--group", "captions", "--json",
                       ASSAY_PRELOAD="0")
    assert own_board.returncode == 0 and _forked(home) == before + 1
    assert json.loads(board.stdout) == json.loads(own_board.stdout) and json.loads(board.stdout)


@pytest.mark.prefect
@pytest.mark.slow
def test_exit_status_and_errors_come_back_and_another_environment_runs_on_its_own(home: Path) -> None:
    before = _forked(home)
    refused = _assay(home, "evaluate", "--dataset", "nosuch")
    assert refused.returncode == 2 and refused.stderr.startswith("error: ") and "nosuch" in refused.stderr
    assert _forked(home) == before + 1

    # another ASSAY_* variable than the preloader's: refused by the child, run in this process
    other = _assay(home, "evaluate", "--dataset", "nosuch", ASSAY_SERVER_IDLE="901")
    assert other.returncode == 2 and "nosuch" in other.stderr
    assert _forked(home) == before + 1


@pytest.mark.prefect
@pytest.mark.slow
def test_the_preloader_goes_with_its_server(home: Path) -> None:
    socket = home / "server" / command_preloader.SOCKET_FILE
    assert socket.exists()
    assert _assay(home, "server", "stop").returncode == 0
    assert _wait_for(lambda: not socket.exists(), 30)
    log = (home / "server" / command_preloader.LOG_FILE).read_text(encoding="utf-8")
    assert "stops: its server stopped or was replaced" in log
