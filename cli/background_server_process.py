"""The background Prefect server's process: Prefect's API app with an activity meter in front of it
and a watchdog beside it, so that the server stops by itself when it is no longer used.

Started by :mod:`assay.cli.background_server` as
``python -m assay.cli.background_server_process --host H --port P --home ASSAY_HOME --idle SECONDS``
(the rules it follows are that module's doc). It serves what ``prefect server start`` serves in its
foreground: ``create_app(final=True)`` (the API, the UI and Prefect's services) under uvicorn, with
Prefect's keep-alive, websocket-ping and log-level settings.

:class:`ActivityMeter` (ASGI middleware) counts the requests in progress and when the last one
ended; it answers ``GET /assay/idle`` itself. :class:`Watchdog` (a thread) checks once a second
whether the home is gone, the state file names another process, or the server has been idle for
the limit, and then stops uvicorn gracefully (the lifespan stops Prefect's services), with a hard
exit as a backstop.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import IO, Any

from assay.cli.background_server import (
    FLOW_LEASE_FILE,
    IDLE_PATH,
    LOCK_FILE,
    PASSIVE_HEADER,
    STATE_FILE,
    file_identity,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

#: seconds between the watchdog's checks (each is a stat and, when idle, two non-blocking flocks)
CHECK_EVERY_S = 1.0
#: uvicorn's graceful shutdown waits this long for open connections
GRACEFUL_SHUTDOWN_S = 10
#: after deciding to stop, the process exits by force if it has not exited this much later
HARD_EXIT_AFTER_S = 60.0

_PASSIVE = (PASSIVE_HEADER.lower().encode(), b"1")


class ActivityMeter:
    """ASGI middleware: requests in progress and the monotonic time the last one ended.

    Requests with the passive header and ``GET /assay/idle`` do not count. Once :meth:`close_if_idle`
    has decided, every new request is answered 503 (a websocket is closed), so that no client
    starts using a server that is about to stop.
    """

    def __init__(self, app: App, idle_limit_s: float) -> None:
        self.app = app
        self.idle_limit_s = idle_limit_s
        self._lock = threading.Lock()
        self._in_progress = 0
        self._last = time.monotonic()
        self._closing = False
        self.flow_in_progress = False

    def touch(self) -> None:
        """Count now as activity (the watchdog's call while a flow holds the lease)."""
        with self._lock:
            self._last = time.monotonic()

    def idle_s(self) -> float:
        with self._lock:
            return 0.0 if self._in_progress else max(0.0, time.monotonic() - self._last)

    def close_if_idle(self) -> bool:
        """Decide to stop, atomically with the requests' counting, when idle for the limit."""
        with self._lock:
            idle = not self._in_progress and time.monotonic() - self._last >= self.idle_limit_s
            self._closing = self._closing or idle
            return self._closing

    def report(self) -> dict[str, Any]:
        with self._lock:
            in_progress = self._in_progress
        idle = self.idle_s()
        return {"idle_limit_s": self.idle_limit_s, "idle_s": round(idle, 3),
                "remaining_s": round(max(0.0, self.idle_limit_s - idle), 3),
                "requests_in_progress": in_progress, "flow_in_progress": self.flow_in_progress}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http" and scope.get("path") == IDLE_PATH:
            await _respond(send, 200, json.dumps(self.report()).encode())
            return
        if _PASSIVE in scope.get("headers", []):
            await self.app(scope, receive, send)
            return
        with self._lock:
            closing = self._closing
            if not closing:
                self._in_progress += 1
        if closing:
            if scope["type"] == "http":
                await _respond(send, 503, b'{"detail": "this background server is stopping"}')
            else:
                await send({"type": "websocket.close", "code": 1013})
            return
        try:
            await self.app(scope, receive, send)
        finally:
            with self._lock:
                self._in_progress -= 1
                self._last = time.monotonic()


async def _respond(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class Watchdog:
    """Checks once a second why the server should stop; see :mod:`assay.cli.background_server`."""

    def __init__(self, meter: ActivityMeter, home: Path, stop: Callable[[], None]) -> None:
        self.meter = meter
        self.home = home
        self.server_dir = home / "server"
        self.stop = stop
        self._home_identity = file_identity(home)
        self._held: list[IO[str]] = []  # the locks taken on deciding: released when the process exits

    def reason_to_stop(self) -> str | None:
        """Why the server should stop now, or None."""
        if self._home_identity is None or file_identity(self.home) != self._home_identity:
            return f"its ASSAY_HOME {self.home} is gone"
        if _recorded_pid(self.server_dir) != os.getpid():
            return f"its state file {self.server_dir / STATE_FILE} no longer names it"
        if self.meter.idle_s() < self.meter.idle_limit_s:
            return None
        return self._decide_idle_stop()

    def _decide_idle_stop(self) -> str | None:
        """Idle for the limit: stop, unless a command is starting a server or a flow holds the
        lease. On stopping, the start lock and the lease stay held until the process exits, so a
        command that comes now waits and then starts a new server."""
        lock = _try_flock(self.server_dir / LOCK_FILE)
        if lock is None:
            return None
        lease = _try_flock(self.server_dir / FLOW_LEASE_FILE)
        self.meter.flow_in_progress = lease is None
        if lease is None:
            self.meter.touch()
            lock.close()
            return None
        if not self.meter.close_if_idle():
            lease.close()
            lock.close()
            return None
        self._held += [lock, lease]
        with contextlib.suppress(OSError):
            if _recorded_pid(self.server_dir) == os.getpid():
                (self.server_dir / STATE_FILE).unlink()
        return f"idle for {self.meter.idle_limit_s:g} s"

    def watch(self, started: Callable[[], bool]) -> None:
        """The thread's loop: wait for uvicorn to serve, then check every :data:`CHECK_EVERY_S`."""
        while not started():
            time.sleep(0.1)
        self.meter.touch()  # idleness counts from when requests can arrive
        while True:
            time.sleep(CHECK_EVERY_S)
            self._note_flow_lease()
            reason = self.reason_to_stop()
            if reason is not None:
                print(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} assay stops the server: {reason}", flush=True)
                self.stop()
                time.sleep(HARD_EXIT_AFTER_S)
                print("=== the server did not stop in time: exiting", flush=True)
                os._exit(1)

    def _note_flow_lease(self) -> None:
        """A flow in progress counts as activity, checked each second, not only at the limit, so
        that its server has a whole idle period after the flow ends."""
        lease = _try_flock(self.server_dir / FLOW_LEASE_FILE)
        self.meter.flow_in_progress = lease is None
        if lease is None:
            self.meter.touch()
        else:
            lease.close()


def _recorded_pid(server_dir: Path) -> int | None:
    try:
        return int(json.loads((server_dir / STATE_FILE).read_text(encoding="utf-8"))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _try_flock(path: Path) -> IO[str] | None:
    """The file, locked exclusively without waiting, or None when someone holds it (or it cannot
    be opened). Closing the file releases the lock."""
    try:
        handle = open(path, "a+")  # noqa: SIM115 - returned open, closed by the caller
    except OSError:
        return None
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name if __spec__ else __name__}",
                                     description="Assay's background Prefect server (started by assay itself).")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--home", type=Path, required=True, help="its ASSAY_HOME: it stops when that is gone")
    parser.add_argument("--idle", type=float, required=True, help="seconds idle after which it stops")
    args = parser.parse_args(argv)

    import uvicorn
    from prefect.server.api.server import create_app
    from prefect.settings import get_current_settings

    settings = get_current_settings().server
    meter = ActivityMeter(create_app(final=True), args.idle)
    server = uvicorn.Server(uvicorn.Config(
        meter, host=args.host, port=args.port, timeout_keep_alive=settings.api.keepalive_timeout,
        ws_ping_interval=settings.api.websocket_ping_interval, ws_ping_timeout=settings.api.websocket_ping_timeout,
        log_level=str(settings.logging_level).lower(), timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    ))

    def stop() -> None:
        server.should_exit = True

    watchdog = Watchdog(meter, args.home, stop)
    threading.Thread(target=watchdog.watch, args=(lambda: server.started,), name="assay-watchdog", daemon=True).start()
    server.run()
    sys.exit(0)


if __name__ == "__main__":
    main()
