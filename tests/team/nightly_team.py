"""The team setup that the nightly end-to-end modules share (tests/team/test_nightly_e2e.py and
tests/team/test_nightly_kill_e2e.py), and the small reads around it.

Each module builds its own setup (a real ``prefect server start``, a PostgreSQL catalog, a shared
store, ``assay deploy`` and two process workers), so the two chains of waits run side by side on
the suite's workers instead of one after the other. The catalog's migration, the ingest and the
suite's definition run in the test's process, on the team's catalog and store (the same functions
``assay db upgrade``, ``assay ingest`` and ``assay suite define`` call; tests/test_flows_and_cli.py
and tests/team_platform run those commands): each as a command cost a second or more of CPU to
import, on a 2-core machine where the suite is CPU-bound. ``assay deploy`` and everything the
modules test run as a user runs them.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

from tests.conftest import PG_ADMIN_URL
from tests.team.workers import Worker, run_assay
from tests.team_server import create_database, drop_database, start_team_server

if TYPE_CHECKING:
    from assay.config import Settings

#: the zombie automation's window (seconds without a heartbeat); heartbeats come every 30 s
ZOMBIE_AFTER_S = 60
HEARTBEAT_S = 30
#: docs/TEAM.md's bound for a lost host: its runs are marked Crashed between Z - 30 s and Z + 10 s after
#: it dies (Z = --zombie-after: the window starts at the last heartbeat, at most 30 s before the
#: death; the server evaluates the proactive trigger every 5 s and then runs the action). The test
#: allows 10 s more on top for this busy 2-core machine and its 2 s polling.
CRASH_EARLIEST_S = ZOMBIE_AFTER_S - HEARTBEAT_S - 2
CRASH_BOUND_S = ZOMBIE_AFTER_S + 10 + 10

DEPLOY_ARGS = ("deploy", "--zombie-after", str(ZOMBIE_AFTER_S), "--debounce", "30", "--settle", "2")
"""``assay deploy`` as both modules run it."""

#: the WMT16 pairs the nightly suite holds here (1,120 judged segments of the real release, ``-o groups``):
#: the plumbing is what is tested, and every checkpoint is scored on all of them
WMT16_PAIRS = ("cs-en", "de-en")


@contextmanager
def nightly_team(root: Path, shared_data: Path, deploy_args: tuple[str, ...] = DEPLOY_ARGS,
                 pairs: tuple[str, ...] = WMT16_PAIRS) -> Iterator[dict[str, Any]]:
    """The team setup of the nightly end-to-end modules, in ``root``: a real server on its own
    PostgreSQL database, the catalog on another, the WMT16 DA ``pairs`` ingested, the ``nightly``
    suite defined, ``assay deploy`` run (with ``deploy_args``), and a ``cpu`` and a ``gpu`` process
    worker. Everything is stopped and dropped on exit."""
    from assay.catalog.engine import upgrade
    from assay.jobs.ingest import ingest_path
    from assay.nightly.suites import define_suite

    server = start_team_server(root / "server", extra_env={"PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5"})
    catalog_db = f"assay_catalog_{uuid.uuid4().hex[:10]}"
    create_database(catalog_db)
    workers: list[Worker] = []
    try:
        env = server.client_env()
        for key in [k for k in env if k.startswith("ASSAY_")]:
            env.pop(key)
        env.update({
            "ASSAY_HOME": str(root / "store"),
            "ASSAY_CATALOG_URL": PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{catalog_db}",
            "PREFECT_HOME": str(root / "prefect_client"),
            # a poll every 5 s, not 2: a worker polling every 2 s cost its server 0.8 CPU-s a minute,
            # 0.2 at 5 s (measured on a quiet machine), on a 2-core machine where the suite is
            # CPU-bound; a dispatch waits at most 3 s longer
            "PREFECT_WORKER_QUERY_SECONDS": "5",
            "PREFECT_WORKER_HEARTBEAT_SECONDS": "10",
            "PREFECT_LOGGING_LEVEL": "INFO",
        })
        upgrade(env["ASSAY_CATALOG_URL"])
        with team_settings(env) as settings:
            dataset = ingest_path(shared_data / "wmt16-da-seg", options={"groups": ",".join(pairs)},
                                  settings=settings).label
            define_suite(settings, "nightly", [{"dataset": dataset, "levels": ["seg"],
                                                "statistics": ["kendall", "pearson"]}])
        deployed = json.loads(run_assay(env, *deploy_args, "--json").stdout)
        for pool in ("cpu", "gpu"):
            log = root / f"worker-{pool}.log"
            workers.append(Worker(pool, env, log).start())
        yield {"server": server, "env": env, "root": root, "dataset": dataset, "deployed": deployed,
               "workers": {w.pool: w for w in workers}}
    finally:
        # the graceful stop is not what these modules test (test_worker_lifecycle.py is): both workers
        # get it at once and are forced after a few seconds. They had run flows, so Prefect's graceful
        # stop alone did not end them: it cost the full 20 s each, one after the other (docs/TEAM.md)
        for worker in workers:
            worker.signal_stop()
        for worker in workers:
            worker.wait_stopped(grace_s=3.0)
        server.stop()
        drop_database(catalog_db)


def make_checkpoint(folder: Path, *, seed: int, encoder: Path | None) -> Path:
    from assay.workers.checkpoint import create_from_encoder

    return create_from_encoder(encoder, folder, seed=seed)


def status(env: dict[str, str]) -> dict[str, Any]:
    shown: dict[str, Any] = json.loads(run_assay(env, "nightly", "status", "--json").stdout)
    return shown


@contextmanager
def team_settings(env: dict[str, str]) -> Iterator[Settings]:
    """Assay's settings in this process for the team's store and catalog (``env``'s ``ASSAY_HOME``
    and ``ASSAY_CATALOG_URL``); the catalog engines are reset on entry and exit."""
    from assay.catalog.engine import reset_engines
    from assay.config import load_settings

    with mock.patch.dict(os.environ, {key: env[key] for key in ("ASSAY_HOME", "ASSAY_CATALOG_URL")}):
        reset_engines()
        try:
            yield load_settings()
        finally:
            reset_engines()


def completed(env: dict[str, str], name: str) -> dict[str, Any] | None:
    """The completed ledger row of checkpoint ``name``, read in this process from the team's catalog
    (``assay nightly status`` reads the same ledger, :func:`assay.nightly.ledger.history`). The waits
    poll it every few seconds for minutes: as a command each poll cost a second of CPU, more than the
    rest of the wait; the tests still run ``assay nightly status`` where they check what it shows."""
    from assay.nightly import ledger

    with team_settings(env) as settings:
        rows = ledger.history(settings)
    return next((row for row in rows if row["checkpoint_name"] == name), None)
