"""Real Prefect process workers for the team tests, and the small waits around them.

A worker is ``prefect worker start --pool POOL --type process`` in its own process group, with the
team's environment (the server's API URL, the shared ``ASSAY_HOME`` store, the PostgreSQL catalog).
Its flow runs are child processes (``python -m prefect.engine``); :meth:`Worker.kill_hard` SIGKILLs
the worker's group and every flow-run process it started, as a lost host would.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tests.team_server import end_process_group

T = TypeVar("T")
BIN = Path(sys.executable).parent


def wait_for(predicate: Callable[[], T | None], timeout: float, what: str, interval: float = 1.0) -> T:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def run_assay(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``assay ARGS`` as a user runs it; fails the test with its output when it exits non-zero."""
    done = subprocess.run([str(BIN / "assay"), *args], env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)
    assert done.returncode == 0, f"assay {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def flow_run_pids(flow_run_id: str) -> list[int]:
    """Processes whose environment names ``flow_run_id`` (the process worker sets
    ``PREFECT__FLOW_RUN_ID`` for the flow-run process it starts)."""
    marker = f"PREFECT__FLOW_RUN_ID={flow_run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
    return found


@dataclass(eq=False)
class Worker:
    pool: str
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    started: list[float] = field(default_factory=list)

    def start(self) -> Worker:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [str(BIN / "prefect"), "worker", "start", "--pool", self.pool, "--type", "process",
                 "--name", f"{self.pool}-worker-{len(self.started)}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                cwd=self.log_path.parent, start_new_session=True)
        self.started.append(time.monotonic())
        return self

    def kill_hard(self, flow_run_ids: list[str] = ()) -> None:  # type: ignore[assignment]
        """SIGKILL the worker's process group and the processes of ``flow_run_ids``."""
        assert self.process is not None
        for pid in [p for run in flow_run_ids for p in flow_run_pids(run)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self, grace_s: float = 20.0) -> None:
        """Prefect's graceful stop (SIGTERM), then, after ``grace_s``, its forced stop (a second
        SIGTERM: the worker SIGKILLs itself), then SIGKILL for the group. A worker that has run flows
        may never finish the graceful stop (docs/TEAM.md, *Stopping*)."""
        self.signal_stop()
        self.wait_stopped(grace_s)

    def signal_stop(self) -> None:
        """Send Prefect's graceful stop (SIGTERM to the worker's group) and return at once."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)

    def wait_stopped(self, grace_s: float) -> None:
        """Wait ``grace_s`` for the graceful stop :meth:`signal_stop` sent, then force it."""
        if self.process is None:
            return
        if not end_process_group(self.process, ((None, grace_s), (signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0))):
            raise AssertionError(f"the {self.pool} worker (PID {self.process.pid}) outlived SIGKILL")

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def read_flow_runs(server_url: str, deployment: str) -> list[Any]:
    """Every flow run of ``deployment`` (``flow/deployment``) on the server, newest first."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: server_url}), get_client(sync_client=True) as client:
        found = client.read_deployment_by_name(deployment)
        return list(client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[found.id])),
                                          sort=FlowRunSort.START_TIME_DESC, limit=200))
