"""Issue 17, findings 1 and 6: a checkpoint registered while Prefect is unreachable is owed, shown,
announced by a later command, and evaluated by the next sweep; `assay nightly status` shows every
state with counts and ages.

Real parts: the `assay` CLI in a subprocess (its own Prefect settings), the session's temporary
Prefect server (``prefect_engine``), a dead port for "unreachable", WMT16 DA (real data) and
checkpoints on a tiny RANDOMLY initialised BERT (tests/robustness_support.py; no metric checkpoint
is available offline, and the scores' meaning is not what is tested).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from assay.ports import free_port
from tests.robustness_support import save_tiny_encoder, subset


def assay(*args: str, api_url: str) -> subprocess.CompletedProcess[str]:
    """The installed CLI, as a user runs it, with ``PREFECT_API_URL`` set to ``api_url``."""
    env = {**os.environ, "PREFECT_API_URL": api_url}
    return subprocess.run([str(Path(sys.executable).parent / "assay"), *args], env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def status(api_url: str) -> dict[str, Any]:
    shown = assay("nightly", "status", "--json", api_url=api_url)
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_engine")
def test_a_lost_announcement_is_owed_shown_delivered_and_evaluated(shared_data: Path, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter

    from assay.checkpoints import outbox
    from assay.cli.runner import run_flow
    from assay.config import load_settings
    from assay.flows.events import CHECKPOINT_REGISTERED, deliver_owed
    from assay.jobs.ingest import ingest_path
    from assay.nightly import ledger
    from assay.nightly.suites import define_suite, get_suite
    from assay.workers.checkpoint import create_from_encoder
    from assay.workers.checkpoint_registration import register_folder

    settings = load_settings()
    dead = f"http://127.0.0.1:{free_port()}/api"
    parent = ingest_path(shared_data / "wmt16-da-seg", settings=settings).version.name
    dataset = subset(parent, "wmt16-outbox", n_items=40)  # a small real sample: the sweep scores it twice
    define_suite(settings, "nightly", [{"dataset": dataset, "levels": ["seg"], "statistics": ["pearson"]}])
    encoder = save_tiny_encoder(tmp_path / "tiny")
    folders = {name: create_from_encoder(encoder, tmp_path / name, seed=seed)
               for seed, name in enumerate(("one", "two", "three", "four"))}

    # 1. Prefect unreachable: registered (exit 0), ONE warning line, and the announcement is owed
    registered = assay("checkpoints", "register", str(folders["one"]), "--name", "one", api_url=dead)
    assert registered.returncode == 0, registered.stderr
    assert "one" in registered.stdout and "registered" in registered.stdout
    warnings = [line for line in registered.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1, registered.stderr
    assert warnings[0].startswith("warning: checkpoint one: registered, but the announcement could not reach "
                                  f"Prefect at {dead}") and "the next nightly sweep will evaluate it" in warnings[0]
    [owed] = outbox.owed(settings)
    assert owed.name == "one" and owed.attempts == 1 and owed.last_error
    # registering again says "already registered", tries the owed announcement again, and it stays owed
    again = assay("checkpoints", "register", str(folders["one"]), api_url=dead)
    assert "already registered" in again.stdout and again.stderr.count("warning: checkpoint one:") == 1
    assert [o.attempts for o in outbox.owed(settings)] == [2]

    # 2. `assay nightly status` shows it owed, with its age, in every output form
    shown = status(dead)
    assert set(shown["counts"]) == {"owed", "pending", "running", "crashed", "failed", "completed"}
    assert shown["counts"]["owed"] == 1 and shown["owed"][0]["checkpoint_name"] == "one"
    assert shown["owed"][0]["age_s"] >= 0 and shown["owed"][0]["error"]
    text = assay("nightly", "status", api_url=dead).stdout
    assert "1 owed" in text and "assay nightly run" in text

    # 3. a later command that reaches the server delivers what is owed (here: a no-op ingest flow)
    run_flow("ingest", [str(shared_data / "wmt16-da-seg")])
    assert outbox.owed(settings) == []

    async def announced() -> list[str]:
        async with get_client() as client:
            page = await client.read_events(EventFilter(event=EventNameFilter(name=[CHECKPOINT_REGISTERED])),
                                            limit=50)
            return [e.resource.id for e in page.events]

    import asyncio

    one = ledger.pending_items(settings, get_suite(settings, "nightly"))[0].checkpoint
    deadline = time.monotonic() + 30  # the server persists received events in the background
    while one.resource not in asyncio.run(announced()):
        assert time.monotonic() < deadline, "the announcement never reached the server's event store"
        time.sleep(0.5)

    # 4. lost again for "two"; the sweep (on the reachable server) delivers it and evaluates both
    assay("checkpoints", "register", str(folders["two"]), "--name", "two", api_url=dead)
    assert [o.name for o in outbox.owed(settings)] == ["two"]
    swept = run_flow("nightly", reason="manual", scan=False, report=False)
    assert swept["dispatched"] == 2 and sorted(swept["announced"]["delivered"]) == ["two"]
    assert outbox.owed(settings) == []

    # 5. every state: a running, a crashed and a failed row besides the completed ones, and one pending
    suite = get_suite(settings, "nightly")
    for name in ("three", "four"):  # in-process, then announced to the live server
        register_folder(settings, folders[name], name=name)
    assert deliver_owed().delivered == ["three", "four"]
    items = {i.checkpoint.name: i for i in ledger.pending_items(settings, suite)}
    crashed = ledger.claim(settings, items["three"], flow_run_id=None)
    assert crashed is not None and ledger.mark_crashed(settings, crashed.ledger_id, "killed in a test")
    failed = ledger.claim(settings, items["four"], flow_run_id=None)
    assert failed is not None and ledger.fail(settings, failed, "bad input in a test")
    register_folder(settings, create_from_encoder(encoder, tmp_path / "five", seed=9), name="five")
    deliver_owed()
    shown = status(os.environ["PREFECT_API_URL"])
    assert shown["counts"] == {"owed": 0, "pending": 1, "running": 0, "crashed": 1, "failed": 1, "completed": 2}
    assert shown["crashed"][0]["error"] == "killed in a test" and shown["failed"][0]["checkpoint_name"] == "four"
    assert all(shown["oldest_age_s"][s] is not None for s in ("pending", "crashed", "failed", "completed"))
    # finding 6: the completed rows' summaries carry their correlations
    done = ledger.history(settings, "nightly")
    assert all(r["summary"]["evaluations"][0]["correlations"] for r in done)
    assert all(r["summary"]["evaluations"][0]["correlations"] for r in shown["completed"])
