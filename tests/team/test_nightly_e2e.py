"""The team setup end to end on loopback, nothing mocked (issue 9's "Done when"): deploy, the event
and the schedule paths, and docs/TEAM.md's user section.

One real ``prefect server start`` on its own PostgreSQL database, the catalog on another PostgreSQL
database, a shared store in a temporary folder, ``assay deploy``, and two real process workers
(``cpu`` and ``gpu``; the ``gpu`` one runs on this machine's CPU): tests/team/nightly_team.py. Then:

1. **deploy** is idempotent and creates the pools, the deployment, its schedule and the automations.
2. **event**: ``assay checkpoints register`` announces checkpoint A; the deployment trigger runs the
   ``nightly`` deployment for it, which dispatches ``evaluate-checkpoint`` to the ``gpu`` pool. No
   manual run.
3. **schedule**: checkpoint B is written into a watched folder (not registered), and ``assay deploy
   --cron`` moves the nightly schedule to the next minutes. The schedule fires (a real scheduled
   run, not ``prefect deployment run``): the sweep registers B and evaluates it.
4. **leaderboard**: both checkpoints, with their lineage; the ledger holds one completed row each.
5. **docs/TEAM.md**: §6 and the user's section, in the doc's order (checkpoint D), then §7: `assay
   serve` on the team's catalog behind basic auth, its leaderboard link equal to the CLI's.

tests/team/test_nightly_kill_e2e.py runs the killed worker and the sweep on a setup of its own, beside
this one. The checkpoints are tiny RANDOM BERT models (tests/robustness_support.py); their
correlations mean nothing; the plumbing is what is tested.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.robustness_support import save_tiny_encoder
from tests.team.nightly_team import DEPLOY_ARGS, completed, make_checkpoint, nightly_team, status
from tests.team.workers import read_flow_runs, run_assay, wait_for
from tests.team_platform.nightly_support import negated_checkpoint

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Iterator[dict[str, Any]]:
    with nightly_team(tmp_path_factory.mktemp("team"), shared_data) as setup:
        yield setup


def test_deploy_is_idempotent(team: dict[str, Any]) -> None:
    first = {(c["kind"], c["name"]): c["action"] for c in team["deployed"]["changes"]}
    assert {"created"} == set(first.values()), first
    assert ("work pool", "gpu") in first and ("deployment", "nightly/nightly") in first
    again = json.loads(run_assay(team["env"], *DEPLOY_ARGS, "--json").stdout)
    assert {c["action"] for c in again["changes"]} == {"unchanged"}
    from prefect.client.orchestration import get_client

    with team["server"].settings(), get_client(sync_client=True) as client:
        gpu = client.read_work_pool("gpu")
        assert gpu.type == "process" and gpu.concurrency_limit == 1
        nightly = client.read_deployment_by_name("nightly/nightly")
        schedules = [(getattr(s.schedule, "cron", None), getattr(s.schedule, "timezone", None))
                     for s in nightly.schedules]
        assert schedules == [("0 2 * * *", "UTC")]
        names = {a.name for a in client.read_automations()}
        assert {"assay: crash zombie flow runs", "assay: evaluate registered checkpoints",
                "assay: retry crashed evaluations"} <= names


def test_event_then_schedule_then_leaderboard(team: dict[str, Any], tmp_path: Path) -> None:
    env, server = team["env"], team["server"]
    encoder = save_tiny_encoder(tmp_path / "tiny-encoder")

    # 1. the event path: registering announces the checkpoint; nothing is run by hand
    a = make_checkpoint(tmp_path / "ckpt-a", seed=1, encoder=encoder)
    registered = time.monotonic()
    run_assay(env, "checkpoints", "register", str(a), "--name", "nightly-a")
    row = wait_for(lambda: completed(env, "nightly-a"), 300, "checkpoint A's evaluation through the event trigger",
                   interval=3)
    print(f"event -> evaluated: {time.monotonic() - registered:.1f} s")
    event_runs = [r for r in read_flow_runs(server.url, "nightly/nightly") if r.parameters.get("reason") == "event"]
    assert event_runs and not any(r.auto_scheduled for r in event_runs)
    assert row["attempts"] == 1

    # 2. the schedule path: B lands in a watched folder; the nightly schedule is moved to the next minutes
    watched = tmp_path / "watched"
    watched.mkdir()
    run_assay(env, "checkpoints", "watch", str(watched))
    # B is derived from A (its head negated), so the registry records it as "finetune of nightly-a"
    negated_checkpoint(a, watched / "nightly-b")
    # the first minute that starts at least 40 s from now: time to deploy, and for the scheduler
    # (a 5 s loop here) to create the run before it is due
    fire = (datetime.now(UTC) + timedelta(seconds=40 + 59)).replace(second=0, microsecond=0)
    run_assay(env, *DEPLOY_ARGS, "--cron", f"{fire.minute} {fire.hour} * * *")
    scheduled = wait_for(lambda: [r for r in read_flow_runs(server.url, "nightly/nightly")
                                  if r.auto_scheduled and r.state and r.state.is_completed()],
                         240, "the scheduled nightly run to complete", interval=5)
    assert scheduled[0].parameters["reason"] == "schedule"
    b_row = wait_for(lambda: completed(env, "nightly-b"), 120, "checkpoint B's evaluation", interval=3)
    assert b_row["attempts"] == 1

    # 3. the leaderboard names both checkpoints with their lineage
    board = json.loads(run_assay(env, "leaderboard", "--dataset", team["dataset"], "--json").stdout)
    labels = {r["checkpoint"] for r in board if r.get("checkpoint")}
    assert "nightly-a (create_from_encoder)" in labels and "nightly-b (finetune of nightly-a)" in labels
    # exactly once: one completed ledger row per checkpoint, however many sweeps ran
    names = [r["checkpoint_name"] for r in status(env)["completed"]]
    assert names.count("nightly-a") == 1 and names.count("nightly-b") == 1


def test_team_md_check_and_user_section_on_the_team_server(team: dict[str, Any], tmp_path: Path) -> None:
    """docs/TEAM.md §6, "The nightly evaluation, as a user sees it" and §7, in the doc's order, on the
    team server with its workers (issue 17: the doc true step by step; tests/test_docs_commands.py
    checks that every command it shows parses)."""
    env = team["env"]
    # §6: the pools and their online workers (there is no `prefect worker ls`)
    pools = {p["pool"]: p for p in json.loads(run_assay(env, "workers", "--json").stdout)}
    for name in ("cpu", "gpu"):
        assert pools[name]["status"] == "READY" and pools[name]["type"] == "process"
        assert "ONLINE" in {w["status"] for w in pools[name]["workers"]}
    assert pools["gpu"]["concurrency_limit"] == 1
    run_assay(env, "datasets", "list")
    shown = status(env)
    assert shown["counts"]["owed"] == 0 and shown["counts"]["pending"] == 0
    assert shown["counts"]["completed"] >= 2  # A and B of the test before

    # a folder dropped into a watched folder; `assay nightly run` evaluates it now (no 02:00 wait)
    watched = tmp_path / "drop"
    watched.mkdir()
    run_assay(env, "checkpoints", "watch", str(watched))
    d = make_checkpoint(watched / "nightly-d", seed=4, encoder=save_tiny_encoder(tmp_path / "tiny-encoder"))
    old = time.time() - 300  # copied with its old times (as `cp -a` keeps them): complete at once
    for path in [d, *d.rglob("*")]:
        os.utime(path, (old, old))
    swept = run_assay(env, "nightly", "run", "--no-report")
    assert "registered nightly-d from a watched folder" in swept.stdout, swept.stdout
    assert "1 item(s) evaluated" in swept.stdout, swept.stdout
    assert completed(env, "nightly-d") is not None
    scan = run_assay(env, "checkpoints", "scan")  # what a scan sees now, and why
    assert "already registered" in scan.stdout and "nightly-d" in scan.stdout

    # the leaderboard and the report, as the doc shows them
    board = run_assay(env, "leaderboard", "--dataset", team["dataset"], "--level", "seg")
    assert "nightly-d" in board.stdout
    run_assay(env, "report", "--out", str(tmp_path / "report"))
    assert "nightly-d" in (tmp_path / "report" / "index.html").read_text(encoding="utf-8")

    # §7: the shared leaderboard, `assay serve` on the team's PostgreSQL catalog and store, behind
    # basic auth; the link a colleague opens answers what `assay leaderboard --json` prints
    import base64
    import urllib.request

    from tests.report_support import start_serve

    password = "team-" + os.urandom(8).hex()
    process, line = start_serve({**env, "ASSAY_SERVE_AUTH": f"team:{password}"})
    try:
        assert "HTTP basic auth" in line and password not in line
        url = line[line.index("http://"):].split()[0]
        request = urllib.request.Request(f"{url}leaderboard.json?dataset={team['dataset']}&level=seg", headers={
            "Authorization": "Basic " + base64.b64encode(f"team:{password}".encode()).decode()})
        with urllib.request.urlopen(request, timeout=30) as response:
            served = json.loads(response.read())
        board = json.loads(run_assay(env, "leaderboard", "--dataset", team["dataset"], "--level", "seg",
                                     "--json").stdout)
        assert served == board and any("nightly-d" in (r.get("checkpoint") or "") for r in served)
    finally:
        process.terminate()
        process.communicate(timeout=20)
