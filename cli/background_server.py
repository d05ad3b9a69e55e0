"""One local Prefect server in the background, started on first use and shared by every command,
stopping by itself when it is no longer used.

Why: with no ``PREFECT_API_URL``, Prefect 3 starts a temporary server inside every process that
runs a flow, which costs 5-10 s per command here (about 25 s the first time, for the database
migrations). A server in the background pays that once; later commands only set
``PREFECT_API_URL`` before importing Prefect and talk to it over HTTP. Only the CLI starts it
(:mod:`assay.cli.runner`, before a flow runs, and ``assay server start``): flows never start processes.

The process is :mod:`assay.cli.background_server_process`: Prefect's own API app (what ``prefect
server start`` serves, with the same settings) run by uvicorn, with an activity meter in front of it
and a watchdog thread beside it. Measured here (2 cores, warm database), ``prefect server start``
answered its health check after 4.3 s, ``uvicorn`` with Prefect's app after 4.1 s; idle, the server
used no CPU over 30 s and about 200 MB of memory. The meter is why the app is run directly: only the
server sees the requests it serves.

It stops by itself (the watchdog, in the server process, checks once a second):

* after ``ASSAY_SERVER_IDLE`` seconds (default 900, :attr:`assay.config.Settings.server_idle_s`)
  with no API request in progress or started, and no flow in progress. A flow in progress is one
  whose command holds the flow lease (:func:`flow_in_progress`, taken by :mod:`assay.cli.runner`
  around every flow): a long scoring or training task may make no API request for many minutes, and
  the lease keeps its server up. The lease is a shared ``flock`` that the kernel releases when the
  command ends, so a killed command (whose flow run Prefect may still list as Running) does not keep
  the server up for ever. The decision is taken holding the start lock and the lease exclusively,
  and a request that arrives after it is answered 503, so a command never gets a server that is
  about to go: it finds the state gone and starts a new server;
* when ``ASSAY_HOME`` disappears (deleted, or replaced by another folder of the same name), or its
  state file no longer names it (so nothing could find it to stop it).

A stopped server removes its state file (when its home still exists); a server that died without
doing so (killed) leaves a state that the next command recognises as stale and replaces.

State lives in ``ASSAY_HOME/server/`` (:attr:`assay.config.Settings.server_dir`):

``state.json``
    ``{"pid", "port", "url", "started_at", "prefect_version", "idle_limit_s"}`` of the running
    server; ``url`` is the API URL (``http://127.0.0.1:PORT/api``), what ``PREFECT_API_URL`` is set to.
``lock``
    ``fcntl.flock``-ed while a command checks or starts the server, so that commands started at
    the same moment start one server between them (and while the server decides to stop).
``flows``
    The flow lease: ``flock``-ed shared by every command while its flow runs.
``server.log``
    The server's stdout and stderr (appended to; each start writes a header line, each stop a line
    saying why).

The server binds 127.0.0.1 only, on a port the kernel chose as free, runs in its own session
(Ctrl-C in the terminal that started it does not reach it) with ``PREFECT_HOME`` set to
``ASSAY_HOME/prefect`` and analytics off. Stale state is recovered: a dead pid, a pid reused by
another program (its command line is checked before anything is signalled) and a server that
stopped answering are cleaned up and a new server started. A server started by an older Assay
(``prefect server start``, without the watchdog) is replaced like one of another Prefect version.
``GET /assay/idle`` on the server answers its idle time (:func:`idle_report`), without counting as
a request; so does any request with the header ``X-Assay-Passive: 1`` (``assay server status``).

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
from assay.errors import ServerError
from assay.flows.engine import TELEMETRY_OPT_OUT
from assay.ports import LOOPBACK, free_port

HOST = LOOPBACK
STATE_FILE = "state.json"
LOCK_FILE = "lock"
FLOW_LEASE_FILE = "flows"
LOG_FILE = "server.log"
#: the server process's module (``python -m``), how its command line is recognised
PROCESS_MODULE = "assay.cli.background_server_process"
#: answered by the server itself (not Prefect): its idle time; never counts as a request
IDLE_PATH = "/assay/idle"
#: a request with this header (value ``1``) does not count as activity (``assay server status``)
PASSIVE_HEADER = "X-Assay-Passive"
#: first start runs Prefect's database migrations (about 25 s here, longer on a loaded machine)
START_TIMEOUT_S = 120.0
#: a running server answers its health check in milliseconds; this only bounds a hung one
HEALTH_TIMEOUT_S = 2.0
#: SIGTERM, then SIGKILL after this long
STOP_TIMEOUT_S = 15.0


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
    idle_limit_s: float | None = None
    """Seconds idle after which it stops; None: started by an older Assay, without the watchdog."""

    @property
    def uptime_s(self) -> float:
        return max(0.0, time.time() - self.started_at)

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT``, where :data:`IDLE_PATH` is answered."""
        return self.url.removesuffix("/api")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerState:
        idle = data.get("idle_limit_s")
        return cls(int(data["pid"]), int(data["port"]), str(data["url"]), float(data["started_at"]),
                   str(data["prefect_version"]), None if idle is None else float(idle))


@dataclass(frozen=True)
class IdleReport:
    """What the server says about its idleness (``GET /assay/idle``)."""

    idle_limit_s: float
    idle_s: float
    """Seconds since the last request ended; 0 while one is in progress or a flow holds the lease."""
    remaining_s: float
    """Seconds until it stops if nothing happens (``idle_limit_s - idle_s``, at least 0)."""
    requests_in_progress: int
    flow_in_progress: bool
    """A command held the flow lease at the watchdog's last check."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IdleReport:
        return cls(float(data["idle_limit_s"]), float(data["idle_s"]), float(data["remaining_s"]),
                   int(data["requests_in_progress"]), bool(data["flow_in_progress"]))


@dataclass(frozen=True)
class ServerStatus:
    """The answer of :func:`server_status`."""

    running: bool
    state: ServerState | None
    """The recorded state, also when the server it names is not running (then ``problem`` says why)."""
    problem: str | None = None
    idle: IdleReport | None = None
    """The running server's idle time (None when it is not running or did not say)."""

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
            "idle_limit_s": self.idle.idle_limit_s if self.idle else None,
            "idle_s": round(self.idle.idle_s, 1) if self.idle else None,
            "idle_remaining_s": round(self.idle.remaining_s, 1) if self.idle else None,
            "flow_in_progress": self.idle.flow_in_progress if self.idle else None,
            "problem": self.problem,
        }


# --- state ------------------------------------------------------------------------------------


def file_identity(path: Path) -> tuple[int, int] | None:
    """``(device, inode)`` of ``path``, or None when it is gone: how the server and the command
    preloader notice that their ``ASSAY_HOME`` was deleted or replaced by another folder."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


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
def _flocked(path: Path, operation: int) -> Iterator[None]:
    """Hold an ``flock`` (``LOCK_SH`` or ``LOCK_EX``) on ``path`` for the block; the kernel releases it
    when the process ends, however it ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), operation)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def flow_in_progress(settings: Settings) -> Iterator[None]:
    """Hold the flow lease (a shared lock on ``server_dir/flows``) while a flow runs: the background
    server does not stop for idleness while any command holds it."""
    with _flocked(settings.server_dir / FLOW_LEASE_FILE, fcntl.LOCK_SH):
        yield


@contextlib.contextmanager
def _locked(settings: Settings) -> Iterator[None]:
    """Hold ``server_dir/lock`` exclusively: one process at a time checks, starts or stops."""
    with _flocked(settings.server_dir / LOCK_FILE, fcntl.LOCK_EX):
        yield


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
    if not args or "--port" not in args or str(state.port) not in args:
        return False
    # this module's process, or ``prefect server start`` as an older Assay started it
    return PROCESS_MODULE in args or ("prefect" in args and "server" in args)


def _outdated(state: ServerState) -> bool:
    """A server of another Prefect version (it would speak its old API), or one an older Assay
    started without the watchdog (it would never stop)."""
    return state.prefect_version != _prefect_version() or state.idle_limit_s is None


def healthy(url: str, timeout: float = HEALTH_TIMEOUT_S, *, passive: bool = False) -> bool:
    """GET ``<url>/health``: Prefect's API answers ``true`` once it has started. ``passive``: the
    request does not count as activity (a look at the server, not a use of it)."""
    request = urllib.request.Request(f"{url}/health", headers={PASSIVE_HEADER: "1"} if passive else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError, http.client.HTTPException, ValueError):
        return False  # nothing listens, something else listens, it is stopping, or too busy to answer


def idle_report(state: ServerState, timeout: float = HEALTH_TIMEOUT_S) -> IdleReport | None:
    """The server's idle time (``GET /assay/idle``, which does not count as activity), or None
    when it does not answer (not running, or a server without the watchdog)."""
    try:
        with urllib.request.urlopen(f"{state.root_url}{IDLE_PATH}", timeout=timeout) as response:
            return IdleReport.from_dict(json.loads(response.read()))
    except (OSError, urllib.error.URLError, http.client.HTTPException, ValueError, KeyError, TypeError):
        return None


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
    env.setdefault(*TELEMETRY_OPT_OUT)  # and the SDK's telemetry (its notice, its events)
    return env


def _log_tail(settings: Settings, lines: int = 15) -> str:
    try:
        text = log_path(settings).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


#: The starter between a command and its server (or its command preloader,
#: :mod:`assay.cli.command_preloader`): it starts the server in a session of its own, prints
#: its pid and exits, so the server is reparented to init. The server outlives the command by design
#: and is never the command's child: nothing waits for it, it never lingers as a zombie in a
#: long-lived process that started it (a notebook, a test session), and no ``Popen`` object of a
#: running child is left behind (Python warns about one, ``ResourceWarning: subprocess N is still
#: running``). The daemon's classic double fork, with ``subprocess``.
DETACHED_STARTER = (
    "import subprocess, sys; "
    "p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=subprocess.STDOUT, "
    "start_new_session=True, close_fds=True); "
    "print(p.pid, flush=True)"
)


def _spawn(settings: Settings, port: int, log: TextIO) -> int:
    """Start the server process (through :data:`DETACHED_STARTER`) writing to ``log``; its pid."""
    command = [sys.executable, "-m", PROCESS_MODULE, "--host", HOST, "--port", str(port),
               "--home", str(settings.home), "--idle", f"{settings.server_idle_s:g}"]
    log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} assay starts: {' '.join(command)}\n")
    log.flush()
    # cwd: the server must not pick up a prefect.toml or .env from wherever the first command ran
    started = subprocess.run([sys.executable, "-c", DETACHED_STARTER, *command], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=log, cwd=settings.server_dir,
                             env=_server_environment(settings), text=True, check=False, timeout=60)
    if started.returncode != 0 or not started.stdout.strip().isdigit():
        raise ServerError(f"could not start the local Prefect server: its starter exited with status "
                          f"{started.returncode}; see {log_path(settings)}")
    return int(started.stdout.strip())


def _wait_ready(settings: Settings, state: ServerState, deadline: float) -> str | None:
    """Poll the health check until ``deadline``; None when ready, else why it is not."""
    delay = 0.1
    while True:
        if healthy(state.url):
            return None
        if not _alive(state.pid):
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
        port = free_port(HOST)
        state = ServerState(pid=0, port=port, url=f"http://{HOST}:{port}/api", started_at=time.time(),
                            prefect_version=_prefect_version(), idle_limit_s=settings.server_idle_s)
        if announce and attempt == 0:
            print(f"assay: starting a local Prefect server for this and later commands at "
                  f"http://{HOST}:{port} (state in {settings.server_dir}; it stops after "
                  f"{settings.server_idle_s:g} s idle, or now with `assay server stop`)",
                  file=sys.stderr, flush=True)
        with open(log_path(settings), "a", encoding="utf-8") as log:
            pid = _spawn(settings, port, log)
        state = ServerState(pid, port, state.url, state.started_at, state.prefect_version,
                            state.idle_limit_s)
        # recorded before it is ready: if this command is interrupted while the server starts,
        # the next one finds the server (and waits for it) instead of starting a second
        _write_state(settings, state)
        problem = _wait_ready(settings, state, state.started_at + START_TIMEOUT_S) or ""
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
    """Whether the recorded server runs and answers, and its idle time; reads only, never starts or
    cleans up, and does not count as activity (the idle time it shows keeps running)."""
    state = read_state(settings)
    if state is None:
        return ServerStatus(False, None, None)
    if not _is_our_server(state):
        return ServerStatus(False, state, f"process {state.pid} is not running the server any more")
    if not healthy(state.url, passive=True):
        return ServerStatus(False, state, f"process {state.pid} runs but {state.url} does not answer")
    return ServerStatus(True, state, idle=idle_report(state))


def ensure_server(settings: Settings, *, announce: bool = True) -> tuple[ServerState, bool]:
    """The running server, started first when there is none; returns it and whether this call
    started it. ``announce``: say so on stderr when starting (once, on the first start).

    The common case (a server that answers) takes one health check and no lock; the check counts
    as activity, so the server then has a whole idle period before it may stop. Otherwise the
    lock is taken and the state checked again, so that of several commands started together one
    starts the server and the others wait for it and reuse it. A new server stops after
    ``settings.server_idle_s`` idle; a running one keeps the limit it was started with.
    """
    state = read_state(settings)
    if state is not None and not _outdated(state) and healthy(state.url) and _is_our_server(state):
        return state, False
    with _locked(settings):
        state = read_state(settings)
        if state is not None:
            if not _is_our_server(state):
                _remove_state(settings)  # a dead pid, or one reused by another program: never signal it
            elif _outdated(state):
                _terminate(state.pid)  # Prefect was upgraded, or an older Assay started it
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
