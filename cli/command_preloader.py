"""The command preloader: one interpreter per ASSAY_HOME with Prefect, the CLI and the flows of the
everyday flow commands already imported, which runs each such command in a process forked from it.

Why: with the background server up, ``assay score`` of a 20-segment dataset took 3.4-3.7 s for
milliseconds of scoring (issue 29). Most of it was importing: Prefect's SDK alone (``import
prefect``) takes longer than the 1.5 s target of a flow command with little work, then the flow's
modules, pyarrow and SciPy, and the interpreter's teardown of all of it. Flows and what Prefect
records do not change: the forked process runs the same command, the same flow, on the same server.

How:

* The first command that runs a flow on the background server (:mod:`assay.cli.runner`, from the
  ``assay`` entry point only, after its flow) starts ``python -m assay.cli.command_preloader`` in a
  session of its own, with the environment the command was started with. The preloader points
  Prefect at the server as :func:`assay.cli.runner.choose_prefect_api` does, imports
  :data:`PRELOAD_MODULES` and nothing more (no Python thread, no connection, no catalog engine; the
  native pools of OpenBLAS and pyarrow's jemalloc handle a fork themselves), then listens on
  ``ASSAY_HOME/server/preloader.sock`` (mode 0600; a child also refuses a peer of another user).
* ``assay <command>`` for a command of :data:`PRELOADED_COMMANDS` connects there first
  (:func:`run_preloaded`) and hands over its arguments, environment, working directory, umask and
  its standard input, output and error (the descriptors themselves, ``SCM_RIGHTS``). The preloader
  forks; the child checks that it may run the command (:meth:`Preloader.refusal`), takes the descriptors as
  its own and runs the command exactly as the ``assay`` process would; once the exit handlers have
  run (Prefect's flush its events), it sends its exit status.
  The ``assay`` process waits, forwards SIGINT, SIGTERM and SIGHUP to the child, and exits with its
  status. A child whose ``assay`` process disappears terminates itself (as a killed command would).
* Anything else runs in the ``assay`` process itself, as before: no preloader yet (the first
  command), ``ASSAY_PRELOAD=0``, a configured ``PREFECT_API_URL``, or a child's refusal, before
  it ran anything: another environment (an ``ASSAY_*``, ``PREFECT_*`` or ``DO_NOT_TRACK`` variable
  differs from the preloader's), another interpreter, a changed Assay source file (the preloader
  then exits and the next flow command starts a new one), or a server that is not the preloader's.

The preloader exits when its server stops or is replaced (the state file no longer names the server
it was started for), when its home disappears, or when Assay's code changed. One runs per home
(``preloader.lock``); it serves no request of its own over the network and is not activity to the
server's idle watch (:mod:`assay.cli.background_server`).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

from assay.config import Settings, load_settings

#: the commands a preloader runs: their flows are among :data:`PRELOAD_MODULES`, and so is the
#: leaderboard's query (it runs no flow, but DuckDB, NumPy and pyarrow cost it as long as its answer)
PRELOADED_COMMANDS = frozenset({"score", "evaluate", "ingest", "rerun", "select", "leaderboard"})
#: what the preloader imports before it serves (the CLI, Prefect, those commands' flows and what
#: their commands and tasks import on the way)
PRELOAD_MODULES = (
    "assay.cli.main", "assay.cli.runner", "assay.cli.background_server", "assay.migrations", "assay.flows.hooks",
    "assay.flows.events", "assay.flows.score", "assay.flows.evaluate", "assay.flows.ingest", "assay.flows.rerun",
    "assay.flows.select", "assay.jobs.scoring", "assay.jobs.evaluation", "assay.jobs.ingest",
    "assay.metrics.lexical", "assay.progress", "assay.query.leaderboard", "duckdb", "scipy.stats", "pyarrow.dataset",
    "pyarrow.parquet", "sacrebleu",
    "sqlalchemy.dialects.sqlite",
    "rich.console", "rich.table", "prefect", "prefect.runtime.flow_run", "prefect.engine", "prefect.flow_engine",
    "prefect.task_engine", "prefect.concurrency.sync", "prefect.telemetry.run_telemetry",
    "prefect.utilities.visualization", "fastapi.encoders", "anyio._backends._asyncio", "encodings.idna",
)
SOCKET_FILE = "preloader.sock"
LOCK_FILE = "preloader.lock"
LOG_FILE = "preloader.log"
PROCESS_MODULE = "assay.cli.command_preloader"
#: ``ASSAY_PRELOAD=0`` runs every command in its own process
SWITCH = "ASSAY_PRELOAD"
#: the variables that must be the same in the command's environment and the preloader's (Prefect
#: and Assay read them when they are imported or set up)
ENVIRONMENT_PREFIXES = ("ASSAY_", "PREFECT_")
ENVIRONMENT_KEYS = ("DO_NOT_TRACK", "PYTHONPATH", "PYTHONHASHSEED")
#: seconds between the preloader's checks of its server and home
CHECK_EVERY_S = 1.0
#: a child answers whether it runs the command within milliseconds; this bounds a hung preloader
FIRST_ANSWER_TIMEOUT_S = 30.0
#: forwarded by the ``assay`` process to the child that runs its command
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_HEADER = struct.Struct("!I")
CODE_CHANGED = "Assay's code changed"

#: the environment this process started with (set by the ``assay`` entry point before a command
#: changes it), which a preloader it starts inherits; None: not started from the entry point
_entry_environment: list[dict[str, str]] = []


def socket_path(settings: Settings) -> Path:
    return settings.server_dir / SOCKET_FILE


def relevant_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` that must match between a command and the preloader."""
    return {key: value for key, value in env.items()
            if key.startswith(ENVIRONMENT_PREFIXES) or key in ENVIRONMENT_KEYS}


def enabled(env: Mapping[str, str]) -> bool:
    """Whether commands may use a preloader: not switched off, and no configured Prefect API."""
    return env.get(SWITCH, "").strip() != "0" and not env.get("PREFECT_API_URL", "").strip()


# --- the assay process's side ------------------------------------------------------------------


def remember_entry_environment() -> None:
    """Note the environment the ``assay`` entry point started with: a preloader this process
    starts gets it, and only the entry point starts one (not a test calling the CLI in-process)."""
    _entry_environment[:] = [dict(os.environ)]


def command_name(argv: list[str]) -> str | None:
    """The subcommand of an ``assay`` command line (its first argument when that is no option)."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def run_preloaded(argv: list[str]) -> int | None:
    """Run ``assay <argv>`` in a process forked from this home's preloader; its exit status, or
    None when this process must run the command itself (see the module doc). Never raises for a
    missing or refusing preloader; once the child has started the command, its status is final."""
    if command_name(argv) not in PRELOADED_COMMANDS or not enabled(os.environ):
        return None
    try:
        path = socket_path(load_settings())
    except Exception:  # a bad ASSAY_* setting: the command itself says what is wrong
        return None
    if not path.exists():
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(5.0)
        connection.connect(str(path))
        header = json.dumps({
            "argv": argv, "env": dict(os.environ), "cwd": os.getcwd(), "umask": _umask(),
            "executable": sys.executable,
            "streams": {name: [getattr(stream, "encoding", None), getattr(stream, "errors", None)]
                        for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout), ("stderr", sys.stderr))},
        }).encode()
        socket.send_fds(connection, [_HEADER.pack(len(header)) + header], [0, 1, 2])
        connection.settimeout(FIRST_ANSWER_TIMEOUT_S)
        reader = connection.makefile("rb")
        answer = reader.readline().decode().split(" ", 1)
        connection.settimeout(None)
    except OSError:
        connection.close()
        return None
    if answer[0] != "RUN":  # refused (or the child died) before it ran anything
        connection.close()
        return None
    child = int(answer[1])
    previous = {sig: signal.signal(sig, lambda number, _frame: _forward(child, number)) for sig in FORWARDED_SIGNALS}
    try:
        line = reader.readline().decode().split()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        connection.close()
    if len(line) == 2 and line[0] == "EXIT" and line[1].lstrip("-").isdigit():
        return int(line[1])
    print("error: the process running this command ended without an exit status (killed?)", file=sys.stderr)
    return 1


def _forward(child: int, number: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(child, number)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def start_preloader(settings: Settings) -> None:
    """Start this home's preloader in the background, unless one runs or this process was not
    started from the ``assay`` entry point; returns at once (the preloader imports on its own)."""
    if not _entry_environment or not enabled(_entry_environment[0]):
        return
    lock = settings.server_dir / LOCK_FILE
    with contextlib.suppress(OSError), _flock_nowait(lock) as free:
        if not free:
            return  # one runs (or is starting)
    import subprocess

    from assay.cli.background_server import DETACHED_STARTER

    settings.server_dir.mkdir(parents=True, exist_ok=True)
    with open(settings.server_dir / LOG_FILE, "a", encoding="utf-8") as log:
        subprocess.run([sys.executable, "-c", DETACHED_STARTER, sys.executable, "-m", PROCESS_MODULE,
                        "--home", str(settings.home)],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, cwd=settings.server_dir,
                       env=_entry_environment[0], check=False, timeout=60)


@contextlib.contextmanager
def _flock_nowait(path: Path) -> Iterator[bool]:
    """Try to lock ``path`` exclusively without waiting; yields whether it was free (then held
    for the block)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True


# --- the preloader -----------------------------------------------------------------------------


class Preloader:
    """The serving process: its home, its server and what it must still match to serve."""

    def __init__(self, settings: Settings, server_pid: int, server_url: str, environment: dict[str, str]) -> None:
        self.settings = settings
        self.server_pid = server_pid
        self.server_url = server_url
        from assay.cli.background_server import file_identity  # not on every command's import path

        self.environment = environment
        self.home_identity = file_identity(settings.home)
        self.sources = _assay_sources()  # after the import above, so the module is counted

    def reason_to_stop(self) -> str | None:
        from assay.cli.background_server import file_identity, read_state

        if file_identity(self.settings.home) != self.home_identity:
            return "its ASSAY_HOME is gone"
        state = read_state(self.settings)
        if state is None or state.pid != self.server_pid or not _alive(self.server_pid):
            return "its server stopped or was replaced"
        if not socket_path(self.settings).exists():
            return "its socket was removed"
        return None

    def refusal(self, request: dict[str, Any]) -> str | None:
        """Why the child must not run this request (None: it may)."""
        if request.get("executable") != sys.executable:
            return f"another interpreter ({request.get('executable')})"
        theirs = relevant_environment(request.get("env", {}))
        if theirs != self.environment:
            differ = sorted(k for k in set(theirs) | set(self.environment) if theirs.get(k) != self.environment.get(k))
            return f"another environment ({', '.join(differ)})"
        if _assay_sources() != self.sources:
            return CODE_CHANGED
        return None


def serve(home: Path) -> None:
    """The preloader's life (see the module doc); returns when it should stop."""
    from assay.cli.background_server import file_identity

    environment = relevant_environment(os.environ)
    settings = load_settings()
    if settings.home.resolve() != home.resolve():
        raise SystemExit(f"ASSAY_HOME is {settings.home}, not {home}")
    lock_path = settings.server_dir / LOCK_FILE
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = open(lock_path, "a+")  # noqa: SIM115 - held for the process's life
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another preloader serves this home
    from assay.cli import runner
    from assay.cli.background_server import healthy, read_state
    from assay.flows.engine import configure_prefect_defaults, point_at_background_server

    state = read_state(settings)
    if state is None or not healthy(state.url, passive=True):
        return
    # as choose_prefect_api does, before Prefect is imported: the background server is the API
    point_at_background_server(state.url)
    configure_prefect_defaults()
    import importlib

    started = time.monotonic()
    for module in PRELOAD_MODULES:
        importlib.import_module(module)
    runner.use_background_server(settings)
    preloader = Preloader(settings, state.pid, state.url, environment)
    path = socket_path(settings)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.unlink(missing_ok=True)
    listener.bind(str(temporary))
    os.chmod(temporary, 0o600)  # only this user may hand it a command
    listener.listen(16)
    os.replace(temporary, path)  # appears whole, once everything is imported
    identity = file_identity(path)
    print(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} preloader {os.getpid()} serves {path} "
          f"(imports took {time.monotonic() - started:.1f} s)", flush=True)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    signal.signal(signal.SIGTERM, lambda _number, _frame: sys.exit(0))  # stops through the finally below
    listener.settimeout(CHECK_EVERY_S)
    reason = None
    pid = os.getpid()
    try:
        while reason is None:
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                reason = preloader.reason_to_stop()
                continue
            if os.fork() == 0:
                listener.close()
                _child(preloader, connection)  # never returns
            connection.close()
    finally:
        if os.getpid() == pid:  # not in a child ending its command
            if file_identity(path) == identity:
                path.unlink(missing_ok=True)
            print(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} preloader {pid} stops: {reason or 'terminated'}",
                  flush=True)


def _child(preloader: Preloader, connection: socket.socket) -> NoReturn:
    """In the forked child: take over the request's process state and run the command; then the
    interpreter's exit handlers run (Prefect's flush its events), the last of them reports the exit
    status and ends the process (:func:`_report_exit`). Never returns."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the command's subprocesses are its to wait for
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # terminated, it ends as a command's own process would
        os.setsid()  # not in the server's process group: stopping the server does not stop the command
        request, fds = _read_request(connection)
        refusal = preloader.refusal(request) or _other_user(connection)
        if refusal is None and len(fds) != 3:
            refusal = "the standard streams did not arrive"
        # the child's output goes to the preloader's log until it takes over the command's streams
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        if refusal is not None:
            print(f"=== {stamp} child {os.getpid()} refuses `assay {' '.join(request['argv'])}`: {refusal}",
                  flush=True)
            connection.sendall(f"NO {refusal}\n".encode())
            if refusal == CODE_CHANGED:
                os.kill(os.getppid(), signal.SIGTERM)  # the next flow command starts a fresh preloader
            os._exit(0)
        print(f"=== {stamp} child {os.getpid()} runs `assay {' '.join(request['argv'])}`", flush=True)
        _take_over(request, fds)
        connection.sendall(f"RUN {os.getpid()}\n".encode())
        _watch_caller(connection)
    except BaseException:  # nothing ran: the assay process runs the command itself
        os._exit(1)
    status = _run_command(request["argv"])
    # after the handlers the command registered, instead of those inherited from the preloader's imports
    atexit.register(_report_exit, connection, status)
    sys.exit(status)


def _other_user(connection: socket.socket) -> str | None:
    """Why the peer may not hand over a command: it runs as another user (Linux ``SO_PEERCRED``;
    elsewhere the socket's mode, 0600, is the only guard)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    _, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return None if uid == os.getuid() else f"another user (uid {uid})"


def _read_request(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The request's header and the descriptors sent with it."""
    connection.settimeout(30.0)
    size_bytes, fds, _, _ = socket.recv_fds(connection, _HEADER.size, 3)
    (size,) = _HEADER.unpack(size_bytes)
    body = b""
    while len(body) < size:
        chunk = connection.recv(size - len(body))
        if not chunk:
            raise ConnectionError("the assay process left before its request arrived")
        body += chunk
    connection.settimeout(None)
    return json.loads(body), fds


def _report_exit(connection: socket.socket, status: int) -> None:
    """Flush what the command wrote, send its exit status to the ``assay`` process, and end."""
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(OSError):
        connection.sendall(f"EXIT {status}\n".encode())
    os._exit(status)


def _take_over(request: dict[str, Any], fds: list[int]) -> None:
    """Become the ``assay`` process: its standard streams, directory, umask, environment and
    arguments, and fresh random state."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    for name, (encoding, errors) in request["streams"].items():
        stream = getattr(sys, name)
        with contextlib.suppress(Exception):
            if name == "stdin":
                stream.reconfigure(encoding=encoding, errors=errors)
            else:  # as Python sets them up: a terminal's stdout and any stderr line-buffered
                stream.reconfigure(encoding=encoding, errors=errors,
                                   line_buffering=name == "stderr" or os.isatty(stream.fileno()))
    os.chdir(request["cwd"])
    os.umask(int(request["umask"]))
    from assay.flows.engine import configure_prefect_defaults, point_at_background_server

    url = os.environ["PREFECT_API_URL"]
    os.environ.clear()
    os.environ.update(request["env"])
    point_at_background_server(url)  # as choose_prefect_api does (its settings Prefect has read already)
    configure_prefect_defaults()
    sys.argv = ["assay", *request["argv"]]
    if "numpy" in sys.modules:  # forked children would otherwise share the global generator's state
        sys.modules["numpy"].random.seed()


def _watch_caller(connection: socket.socket) -> None:
    """Terminate this process when the ``assay`` process that handed over its command is gone."""
    import threading

    def watch() -> None:
        with contextlib.suppress(OSError):
            while connection.recv(1024):
                pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="assay-caller-watch", daemon=True).start()


def _run_command(argv: list[str]) -> int:
    """Run the CLI with ``argv`` as the ``assay`` entry point would; its exit status."""
    import traceback

    from assay.cli.main import cli

    try:
        cli.main(args=argv, prog_name="assay")
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _assay_sources() -> dict[str, int]:
    """Each imported Assay module's source file and its modification time (ns)."""
    sources = {}
    for name, module in list(sys.modules.items()):
        if name == "assay" or name.startswith("assay."):
            path = getattr(module, "__file__", None)
            if path:
                with contextlib.suppress(OSError):
                    sources[path] = os.stat(path).st_mtime_ns
    return sources


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog=f"python -m {PROCESS_MODULE}",
                                     description="Assay's command preloader (started by assay itself).")
    parser.add_argument("--home", type=Path, required=True, help="its ASSAY_HOME")
    serve(parser.parse_args(argv).home)


if __name__ == "__main__":
    main()
