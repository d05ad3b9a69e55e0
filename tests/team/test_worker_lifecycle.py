"""Issue 17, finding 7: stopping a team's worker and server ends cleanly in either order, within 30 s,
with a flow run in progress; `assay workers` shows the workers a server has (finding 8: there is no
`prefect worker ls`).

Real parts: ``prefect server start`` on PostgreSQL (tests/team_server.py), a real process worker
started the way TEAM.md says (``assay workers start --pool cpu``, which runs ``prefect worker start``)
and real flow runs on it: a flow that sleeps, deployed from a temporary folder with Prefect's
``flow.from_source``. The worker first completes one short run: a plain ``prefect worker start``
that has run flows did not exit after its first SIGTERM on this machine (13 minutes in the issue's
walk-through, until a second SIGTERM); the wrapper bounds the stop. Each order gets its own server.

A third case is the server that stops answering without closing its port (frozen, or its host gone
from the network): a plain ``prefect worker start`` sent SIGTERM then took 30.3 s to exit here
(twice; 28.0 s when the server had frozen 10 s earlier), over the bound; the wrapper forces it out
after its ``--stop-timeout`` (20 s).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.team.workers import Worker, flow_run_pids, wait_for
from tests.team_server import TeamServer, require_postgres, start_team_server

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

BIN = Path(sys.executable).parent
#: the bound TEAM.md states for either order (each process, from its SIGTERM to its exit)
STOP_BOUND_S = 30.0
SLEEPY = """
import time
from prefect import flow

@flow
def sleepy(seconds: int = 300) -> None:
    for _ in range(seconds):
        time.sleep(1)
"""
class WrappedWorker(Worker):
    """``assay workers start`` (the wrapper) instead of ``prefect worker start``; signals go to the
    wrapper's process only (it forwards them)."""

    def start(self) -> WrappedWorker:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [str(BIN / "assay"), "workers", "start", "--pool", self.pool, "--stop-timeout", "20"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                cwd=self.log_path.parent, start_new_session=True)
        self.started.append(time.monotonic())
        return self


def _setup(root: Path) -> tuple[TeamServer, dict[str, str], Worker, str]:
    """A server, the ``cpu`` pool, one worker that has completed a flow run, and a flow run in
    progress on it (its id)."""
    server = start_team_server(root / "server")
    env = server.client_env()
    env.update({"PREFECT_HOME": str(root / "client"), "PREFECT_WORKER_QUERY_SECONDS": "5",
                "PREFECT_WORKER_HEARTBEAT_SECONDS": "5"})
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.workers.process import ProcessWorker

    with server.settings(), get_client(sync_client=True) as client:  # `prefect work-pool create cpu --type process`
        client.create_work_pool(WorkPoolCreate(name="cpu", type="process",
                                               base_job_template=ProcessWorker.get_default_base_job_template()))
    source = root / "flows"
    source.mkdir()
    (source / "sleepy.py").write_text(SLEEPY, encoding="utf-8")
    worker = WrappedWorker("cpu", env, root / "worker.log").start()
    # deployed and run from this process, which has Prefect imported already (a `python -c` for it
    # cost an import of Prefect, seconds of CPU, per case)
    from prefect import flow
    from prefect.deployments import run_deployment

    with server.settings():
        flow.from_source(source=str(source), entrypoint="sleepy.py:sleepy").deploy(
            name="sleepy", work_pool_name="cpu", build=False, push=False, print_next_steps=False)
        first = run_deployment("sleepy/sleepy", parameters={"seconds": 1}, timeout=120)
        assert first.state is not None and first.state.name == "Completed", first.state
        run_id = str(run_deployment("sleepy/sleepy", timeout=0).id)
    wait_for(lambda: flow_run_pids(run_id) or None, 120, "the flow run's process to start")
    wait_for(lambda: _flow_run_state(server, run_id) == "Running" or None, 120, "the flow run to be Running")
    return server, env, worker, run_id


def _sigterm_and_time(process: subprocess.Popen[Any]) -> float:
    """SIGTERM the process, wait for the exit (SIGKILL after the bound); seconds taken."""
    started = time.monotonic()
    os.kill(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_BOUND_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        return float("inf")
    return time.monotonic() - started


def _kill_flow_run(run_id: str) -> None:
    """The interrupted flow run's process outlives its worker by Prefect's design: end it here."""
    for pid in flow_run_pids(run_id):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _flow_run_state(server: TeamServer, run_id: str) -> str:
    """The run's state on the server, read with this process's Prefect client (a ``python -c`` per
    poll cost about two seconds of CPU each)."""
    from prefect.client.orchestration import get_client

    with server.settings(), get_client(sync_client=True) as client:
        state = client.read_flow_run(run_id).state
    return state.name if state is not None else ""


def test_workers_first_then_the_server(tmp_path: Path) -> None:
    require_postgres()
    server, env, worker, run_id = _setup(tmp_path)
    try:
        # `assay workers`: the pool is READY with one ONLINE worker and the run counted
        shown = subprocess.run([str(BIN / "assay"), "workers", "--json"], env=env, capture_output=True, text=True,
                               timeout=120)
        assert shown.returncode == 0, shown.stderr
        [pool] = [p for p in json.loads(shown.stdout) if p["pool"] == "cpu"]
        assert pool["status"] == "READY" and pool["running"] == 1
        assert [w["status"] for w in pool["workers"]] == ["ONLINE"]
        assert pool["workers"][0]["last_heartbeat_age_s"] < 30

        assert worker.process is not None
        took = _sigterm_and_time(worker.process)
        print(f"workers first: worker exited {took:.1f} s after SIGTERM; flow-run processes left: "
              f"{flow_run_pids(run_id)}")
        assert took <= STOP_BOUND_S
        # the server still shows the interrupted run Running: no heartbeat will come, and the zombie
        # automation that `assay deploy` installs marks it Crashed after --zombie-after s
        # (test_nightly_kill_e2e.py times it)
        assert _flow_run_state(server, run_id) == "Running"
    finally:
        worker.stop()
        _kill_flow_run(run_id)
        started = time.monotonic()
        server.stop()
        print(f"workers first: server stopped in {time.monotonic() - started:.1f} s")
    assert time.monotonic() - started <= STOP_BOUND_S


def test_the_server_first_then_the_workers(tmp_path: Path) -> None:
    require_postgres()
    server, _, worker, run_id = _setup(tmp_path)
    try:
        started = time.monotonic()
        server.stop()
        print(f"server first: server stopped in {time.monotonic() - started:.1f} s")
        assert time.monotonic() - started <= STOP_BOUND_S
        assert worker.process is not None
        took = _sigterm_and_time(worker.process)
        print(f"server first: worker exited {took:.1f} s after SIGTERM (its last events cannot be sent)")
        assert took <= STOP_BOUND_S
    finally:
        worker.stop()
        _kill_flow_run(run_id)
        server.stop()


def test_a_server_that_stops_answering_does_not_hold_the_worker(tmp_path: Path) -> None:
    """The server's processes are frozen (SIGSTOP): its port still accepts connections, nothing
    answers. The worker's graceful stop waits on the server; the wrapper forces it out."""
    require_postgres()
    server, _, worker, run_id = _setup(tmp_path)
    try:
        os.killpg(server.process.pid, signal.SIGSTOP)
        assert worker.process is not None
        took = _sigterm_and_time(worker.process)
        print(f"frozen server: worker exited {took:.1f} s after SIGTERM")
        assert took <= STOP_BOUND_S
        # the graceful stop did not finish within --stop-timeout: the forced stop ended it
        assert "did not stop within 20 s; forcing it" in worker.log_path.read_text(encoding="utf-8")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.process.pid, signal.SIGCONT)
        worker.stop()
        _kill_flow_run(run_id)
        server.stop()
