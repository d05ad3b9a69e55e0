"""``assay workers [list|start]``: the team server's work pools and workers, and a worker that stops.

``assay workers`` (``list``): Prefect 3.8.8 has no ``prefect worker ls``, and ``prefect work-pool
ls`` lists pools without their workers; this asks the server (``read_work_pools``,
``read_workers_for_work_pool``) and shows, per pool, its type, status (``READY`` once a worker polls
it), concurrency limit and Running flow runs, and each worker with its status (``ONLINE`` while its
heartbeats arrive) and last heartbeat.

``assay workers start --pool gpu`` runs ``prefect worker start --pool gpu`` and bounds its stop.
Prefect's worker takes a first SIGTERM as "stop polling, let the runs finish" and a second as
"SIGKILL yourself"; on this Prefect (3.8.8) a worker that has already run flows may never finish the
first (seen on this machine: still waiting 13 minutes after SIGTERM, with no run in progress).
The wrapper turns SIGTERM or SIGINT into Prefect's first SIGTERM, waits ``--stop-timeout`` seconds
(default 20), then sends the second, so the worker is gone within about that time, whichever of the
server and the workers is stopped first.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from assay.cli.output import emit_json


def _age(when: datetime | None) -> float | None:
    if when is None:
        return None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return round((datetime.now(UTC) - when).total_seconds(), 1)


def pools_and_workers() -> list[dict[str, Any]]:
    """Every work pool on the configured server, with its workers (newest heartbeat first)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
        WorkPoolFilter,
        WorkPoolFilterName,
    )
    from prefect.client.schemas.objects import StateType

    from assay.cli.deploy_commands import api_or_refuse

    api_or_refuse([])
    out = []
    with get_client(sync_client=True) as client:
        client.api_version()  # a dead, refusing or misplaced server: one line, exit 3 (assay.cli.main)
        for pool in sorted(client.read_work_pools(), key=lambda p: p.name):
            running = client.count_flow_runs(
                work_pool_filter=WorkPoolFilter(name=WorkPoolFilterName(any_=[pool.name])),
                flow_run_filter=FlowRunFilter(state=FlowRunFilterState(
                    type=FlowRunFilterStateType(any_=[StateType.RUNNING]))))
            workers = sorted(client.read_workers_for_work_pool(pool.name),
                             key=lambda w: w.last_heartbeat_time or datetime.min.replace(tzinfo=UTC), reverse=True)
            out.append({"pool": pool.name, "type": pool.type, "status": str(pool.status.value if pool.status else None),
                        "paused": pool.is_paused, "concurrency_limit": pool.concurrency_limit, "running": running,
                        "workers": [{"name": w.name, "status": str(w.status.value if w.status else None),
                                     "last_heartbeat_age_s": _age(w.last_heartbeat_time)} for w in workers]})
    return out


@click.group("workers", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def workers_command(ctx: click.Context, as_json: bool) -> None:
    """The team server's work pools and their workers (`assay workers` lists them); `start` runs one."""
    if ctx.invoked_subcommand is None:
        _list(as_json)


@workers_command.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_command(as_json: bool) -> None:
    """The pools and the workers polling them: which are online, and when they were last heard from."""
    _list(as_json)


@workers_command.command("start")
@click.option("--pool", required=True, help="The work pool to poll (cpu or gpu).")
@click.option("--name", help="The worker's name (default: Prefect's).")
@click.option("--stop-timeout", type=click.FloatRange(1, 3600), default=20.0, show_default=True,
              help="Seconds a stopping worker may take before it is made to exit.")
def start_command(pool: str, name: str | None, stop_timeout: float) -> None:
    """Run `prefect worker start --pool POOL` (a process worker), and make SIGTERM or SIGINT end it
    within --stop-timeout seconds: Prefect's graceful stop first, its forced stop after."""
    command = [str(Path(sys.executable).parent / "prefect"), "worker", "start", "--pool", pool]
    command += ["--name", name] if name else []
    worker = subprocess.Popen(command, start_new_session=True)  # signals reach it only through this wrapper
    stopping = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stopping.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    while worker.poll() is None and not stopping.wait(0.5):
        pass
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)  # Prefect: stop polling, let the runs finish
        try:
            worker.wait(timeout=stop_timeout)
        except subprocess.TimeoutExpired:
            click.echo(f"assay: the worker did not stop within {stop_timeout:g} s; forcing it", err=True)
            worker.send_signal(signal.SIGTERM)  # Prefect's second SIGTERM: it SIGKILLs itself
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
    sys.exit(0 if stopping.is_set() else worker.returncode)


def _list(as_json: bool) -> None:
    found = pools_and_workers()
    if as_json:
        emit_json(found)
        return
    if not found:
        click.echo("no work pools on the server; `assay deploy` creates cpu and gpu")
    for pool in found:
        limit = pool["concurrency_limit"] if pool["concurrency_limit"] is not None else "none"
        paused = ", paused" if pool["paused"] else ""
        click.echo(f"{pool['pool']}  ({pool['type']}, {pool['status']}{paused}, limit {limit}, "
                   f"{pool['running']} running)")
        if not pool["workers"]:
            click.echo("  no worker has polled it: start one with `assay workers start --pool "
                       f"{pool['pool']}`")
        for worker in pool["workers"]:
            age = worker["last_heartbeat_age_s"]
            heard = "never" if age is None else f"{age:.0f} s ago"
            click.echo(f"  {worker['name']:<32} {worker['status']:<8} last heartbeat {heard}")


def register(cli: click.Group) -> None:
    cli.add_command(workers_command)
