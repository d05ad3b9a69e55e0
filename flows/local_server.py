"""One local Prefect server in the background, started on first use and shared by every command.

Why: with no ``PREFECT_API_URL``, Prefect 3 starts a temporary server inside every process that
runs a flow, which costs 5-10 s per command here (about 25 s the first time, for the database
migrations). ``prefect server start`` in the background pays that once; later commands only set
``PREFECT_API_URL`` before importing Prefect and talk to it over HTTP.

Measured here (2 cores, warm database): ``python -m prefect server start`` answers its health check
after 4.3 s, ``uvicorn --factory prefect.server.api.server:create_app`` after 4.1 s. The difference
is noise beside the migrations, so the server is started the supported way. Idle, it used no CPU
over 30 s and about 200 MB of memory.

State lives in ``ASSAY_HOME/server/`` (:attr:`assay.config.Settings.server_dir`):

``state.json``
    ``{"pid", "port", "url", "started_at", "prefect_version"}`` of the running server; ``url`` is
    the API URL (``http://127.0.0.1:PORT/api``), what ``PREFECT_API_URL`` is set to.
``lock``
    ``fcntl.flock``-ed while a command checks or starts the server, so that commands started at
    the same moment start one server between them.
``server.log``
    The server's stdout and stderr (appended to; each start writes a header line).

The server binds 127.0.0.1 only, on a port the kernel chose as free, runs in its own session
(Ctrl-C in the terminal that started it does not reach it) with ``PREFECT_HOME`` set to
``ASSAY_HOME/prefect`` and analytics off. Stale state is recovered: a dead pid, a pid reused by
another program (its command line is checked before anything is signalled) and a server that
stopped answering are cleaned up and a new server started.

This module imports nothing from Prefect: it runs before Prefect is imported, because Prefect reads
``PREFECT_API_URL`` once, at import.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from assay.config import Settings
from assay.errors import AssayError

HOST = "127.0.0.1"
STATE_FILE = "state.json"
LOCK_FILE = "lock"
LOG_FILE = "server.log"
#: first start runs Prefect's database migrations (about 25 s here, longer on a loaded machine)
START_TIMEOUT_S = 120.0
#: a running server answers its health check in milliseconds; this only bounds a hung one
HEALTH_TIMEOUT_S = 2.0
#: SIGTERM, then SIGKILL after this long
STOP_TIMEOUT_S = 15.0


class ServerError(AssayError):
    """The background Prefect server could not be started (the message points at its log)."""


@dataclass(frozen=True)
class ServerState:
    """What ``state.json`` records about the running server."""

    pid: int
    port: int
    url: str
    """The API URL, ``http://127.0.0.1:PORT/api``: what ``PREFECT_API_URL`` is set to."""
    started_at: float
    """Seconds since the epoch."""
    prefect_version: str

    @property
    def uptime_s(self) -> float:
        return max(0.0, time.time() - self.started_at)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerState:
        return cls(int(data["pid"]), int(data["port"]), str(data["url"]), float(data["started_at"]),
                   str(data["prefect_version"]))


@dataclass(frozen=True)
class ServerStatus:
    """The answer of :func:`server_status`."""

    running: bool
    state: ServerState | None
    """The recorded state, also when the server it names is not running (then ``problem`` says why)."""
    problem: str | None = None

    def as_dict(self) -> dict[str, Any]:
        state = self.state
        return {
            "running": self.running,
            "url": state.url if state else None,
            "pid": state.pid if state else None,
            "port": state.port if state else None,
            "uptime_s": round(state.uptime_s, 1) if state and self.running else None,
            "started_at": state.started_at if state else None,
            "prefect_version": state.prefect_version if state else None,
            "problem": self.problem,
        }


# --- state ------------------------------------------------------------------------------------


def state_path(settings: Settings) -> Path:
    return settings.server_dir / STATE_FILE


def log_path(settings: Settings) -> Path:
    return settings.server_dir / LOG_FILE


def read_state(settings: Settings) -> ServerState | None:
    """The recorded state, or None when there is none or it is unreadable (a torn or foreign file)."""
    try:
        return ServerState.from_dict(json.loads(state_path(settings).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_state(settings: Settings, state: ServerState) -> None:
    # write-then-rename, so a reader never sees half a file
    path = state_path(settings)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state.as_dict(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _remove_state(settings: Settings) -> None:
    state_path(settings).unlink(missing_ok=True)


@contextlib.contextmanager
def _locked(settings: Settings) -> Iterator[None]:
    """Hold ``server_dir/lock`` exclusively: one process at a time checks, starts or stops."""
    settings.server_dir.mkdir(parents=True, exist_ok=True)
    with open(settings.server_dir / LOCK_FILE, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


# --- the process ------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not: it has exited and awaits its parent)."""
    with contextlib.suppress(ChildProcessError, OSError):
        # reap it if it is our own child that has exited (the test that started it, for example)
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, but belongs to another user: not ours
        return True
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _command_line(pid: int) -> list[str] | None:
    """The process's arguments (Linux ``/proc``; ``ps`` elsewhere), or None when unknown."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        return [part.decode(errors="replace") for part in raw.split(b"\0") if part]
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return None  # Linux, and the process is gone
    except OSError:
        return None
    try:
        done = subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True,
                              timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.split() or None


def _is_our_server(state: ServerState) -> bool:
    """Whether ``state.pid`` is still the ``prefect server start`` that was recorded (pids are reused)."""
    if not _alive(state.pid):
        return False
    args = _command_line(state.pid)
    if not args:
        return False
    return "prefect" in args and "server" in args and "--port" in args and str(state.port) in args


def healthy(url: str, timeout: float = HEALTH_TIMEOUT_S) -> bool:
    """GET ``<url>/health``: Prefect's API answers ``true`` once it has started."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError, http.client.HTTPException, ValueError):
        return False  # nothing listens, something else listens, or it is too busy to answer


def _free_port() -> int:
    """A port the kernel considers free on 127.0.0.1 (bind port 0). Another program could take it
    before the server binds it; :func:`_start` then tries again with a new one."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _prefect_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("prefect")
    except PackageNotFoundError:
        return "unknown"


def _server_environment(settings: Settings) -> dict[str, str]:
    env = dict(os.environ)
    # the server is the API; a client setting pointing elsewhere (or a client log level set for
    # quiet commands) must not leak into it
    for key in ("PREFECT_API_URL", "PREFECT_LOGGING_LEVEL"):
        env.pop(key, None)
    env["PREFECT_HOME"] = str(settings.prefect_home)
    env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    return env


def _log_tail(settings: Settings, lines: int = 15) -> str:
    try:
        text = log_path(settings).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _spawn(settings: Settings, port: int, log: TextIO) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "prefect", "server", "start", "--host", HOST, "--port", str(port)]
    log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} assay starts: {' '.join(command)}\n")
    log.flush()
    # cwd: the server must not pick up a prefect.toml or .env from wherever the first command ran
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            cwd=settings.server_dir, env=_server_environment(settings), start_new_session=True,
                            close_fds=True)


def _wait_ready(settings: Settings, state: ServerState, deadline: float,
                process: subprocess.Popen[bytes] | None = None) -> str | None:
    """Poll the health check until ``deadline``; None when ready, else why it is not."""
    delay = 0.1
    while True:
        if healthy(state.url):
            return None
        exited = process.poll() is not None if process is not None else not _alive(state.pid)
        if exited:
            return "the server process exited"
        if time.time() >= deadline:
            return f"it did not answer within {START_TIMEOUT_S:.0f} s"
        time.sleep(delay)
        delay = min(delay * 1.5, 1.0)


def _start(settings: Settings, announce: bool) -> ServerState:
    settings.server_dir.mkdir(parents=True, exist_ok=True)
    settings.prefect_home.mkdir(parents=True, exist_ok=True)
    problem = "it was not started"
    for attempt in range(3):
        port = _free_port()
        state = ServerState(pid=0, port=port, url=f"http://{HOST}:{port}/api", started_at=time.time(),
                            prefect_version=_prefect_version())
        if announce and attempt == 0:
            print(f"assay: starting a local Prefect server for this and later commands at "
                  f"http://{HOST}:{port} (state in {settings.server_dir}; stop it with `assay server stop`)",
                  file=sys.stderr, flush=True)
        with open(log_path(settings), "a", encoding="utf-8") as log:
            process = _spawn(settings, port, log)
        state = ServerState(process.pid, port, state.url, state.started_at, state.prefect_version)
        # recorded before it is ready: if this command is interrupted while the server starts,
        # the next one finds the server (and waits for it) instead of starting a second
        _write_state(settings, state)
        problem = _wait_ready(settings, state, state.started_at + START_TIMEOUT_S, process) or ""
        if not problem:
            return state
        _terminate(state.pid)
        _remove_state(settings)
        if "already in use" not in _log_tail(settings, 5).lower():
            break  # only a lost race for the port is worth another try
    raise ServerError(
        f"could not start the local Prefect server: {problem}. Its log, {log_path(settings)}, ends with:\n"
        f"{_log_tail(settings)}\n(set PREFECT_API_URL to use another server, or ASSAY_PREFECT_SERVER=ephemeral "
        "for Prefect's temporary one)"
    )


def _terminate(pid: int, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the server's process group (it leads its own session), SIGKILL after ``timeout``."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.time() + wait
        while time.time() < deadline:
            if not _alive(pid):
                return
            time.sleep(0.1)


# --- the API the commands use -----------------------------------------------------------------


def server_status(settings: Settings) -> ServerStatus:
    """Whether the recorded server runs and answers; reads only, never starts or cleans up."""
    state = read_state(settings)
    if state is None:
        return ServerStatus(False, None, None)
    if not _is_our_server(state):
        return ServerStatus(False, state, f"process {state.pid} is not running the server any more")
    if not healthy(state.url):
        return ServerStatus(False, state, f"process {state.pid} runs but {state.url} does not answer")
    return ServerStatus(True, state)


def ensure_server(settings: Settings, *, announce: bool = True) -> tuple[ServerState, bool]:
    """The running server, started first when there is none; returns it and whether this call
    started it. ``announce``: say so on stderr when starting (once, on the first start).

    The common case (a server that answers) takes one health check and no lock. Otherwise the
    lock is taken and the state checked again, so that of several commands started together one
    starts the server and the others wait for it and reuse it.
    """
    state = read_state(settings)
    if state is not None and state.prefect_version == _prefect_version() and healthy(state.url) \
            and _is_our_server(state):
        return state, False
    with _locked(settings):
        state = read_state(settings)
        if state is not None:
            if not _is_our_server(state):
                _remove_state(settings)  # a dead pid, or one reused by another program: never signal it
            elif state.prefect_version != _prefect_version():
                _terminate(state.pid)  # Prefect was upgraded: the old server would speak its old API
                _remove_state(settings)
            elif _wait_ready(settings, state, state.started_at + START_TIMEOUT_S) is None:
                return state, False  # still starting (its starter was interrupted), now ready
            else:
                _terminate(state.pid)  # runs but does not answer
                _remove_state(settings)
        return _start(settings, announce), True


def stop_server(settings: Settings, timeout: float = STOP_TIMEOUT_S) -> ServerState | None:
    """Stop the recorded server (SIGTERM its process group, SIGKILL after ``timeout``) and remove
    its state; returns the state it stopped, or None when none was running. Never an error."""
    with _locked(settings):
        state = read_state(settings)
        if state is None:
            return None
        running = _is_our_server(state)
        if running:
            _terminate(state.pid, timeout)
        _remove_state(settings)
        return state if running else None
