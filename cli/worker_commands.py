"""``assay workers``: the team server's work pools and the workers polling them.

Prefect 3.8.8 has no ``prefect worker ls``, and ``prefect work-pool ls`` lists pools without their
workers; this asks the server (``read_work_pools``, ``read_workers_for_work_pool``) and shows, per
pool, its type, status (``READY`` once a worker polls it), concurrency limit and Running flow runs,
and each worker with its status (``ONLINE`` while its heartbeats arrive) and last heartbeat.
"""

from __future__ import annotations

from datetime import UTC, datetime
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


@click.command("workers")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def workers_command(as_json: bool) -> None:
    """The team server's work pools and their workers: which are online, and when they were last heard from."""
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
            click.echo("  no worker has polled it: start one with `prefect worker start --pool "
                       f"{pool['pool']}`")
        for worker in pool["workers"]:
            age = worker["last_heartbeat_age_s"]
            heard = "never" if age is None else f"{age:.0f} s ago"
            click.echo(f"  {worker['name']:<32} {worker['status']:<8} last heartbeat {heard}")


def register(cli: click.Group) -> None:
    cli.add_command(workers_command)
