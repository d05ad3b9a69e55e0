"""The team setup end to end on loopback, nothing mocked (issue 9's "Done when").

One real ``prefect server start`` on its own PostgreSQL database, the catalog on another PostgreSQL
database, a shared store in a temporary folder, ``assay deploy``, and two real process workers
(``cpu`` and ``gpu``; the ``gpu`` one runs on this machine's CPU). Then:

1. **event**: ``assay checkpoints register`` announces checkpoint A; the deployment trigger runs the
   ``nightly`` deployment for it, which dispatches ``evaluate-checkpoint`` to the ``gpu`` pool. No
   manual run.
2. **schedule**: checkpoint B is written into a watched folder (not registered), and ``assay deploy
   --cron`` moves the nightly schedule to the next minutes. The schedule fires (a real scheduled
   run, not ``prefect deployment run``): the sweep registers B and evaluates it.
3. **leaderboard**: both checkpoints, with their lineage; the ledger holds one completed row each.
4. **kill**: checkpoint C (the real MiniLM encoder, so scoring takes a while) is registered; while its
   evaluation is scoring, the ``gpu`` worker and its flow-run process get SIGKILL. The zombie
   automation marks the run Crashed (the time is printed and bounded); a restarted worker completes
   the retry; the store holds exactly one row per (signature, segment); the catalog records the
   killed scoring run as crashed.

The checkpoints A and B are tiny RANDOM BERT models (tests/robustness_support.py); C wraps the real
embedded MiniLM with a randomly initialised rating head. Their correlations mean nothing; the
plumbing is what is tested.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.conftest import PG_ADMIN_URL
from tests.robustness_support import save_tiny_encoder
from tests.team.workers import Worker, read_flow_runs, run_assay, wait_for
from tests.team_platform.nightly_support import negated_checkpoint
from tests.team_server import create_database, drop_database, start_team_server

pytestmark = pytest.mark.timeout(900)

#: the zombie automation's window (seconds without a heartbeat); heartbeats come every 30 s
ZOMBIE_AFTER_S = 60
HEARTBEAT_S = 30
#: docs/TEAM.md's bound for a lost host: its runs are marked Crashed between Z - 30 s and Z + 10 s after
#: it dies (Z = --zombie-after: the window starts at the last heartbeat, at most 30 s before the
#: death; the server evaluates the proactive trigger every 5 s and then runs the action). The test
#: allows 10 s more on top for this busy 2-core machine and its 2 s polling.
CRASH_EARLIEST_S = ZOMBIE_AFTER_S - HEARTBEAT_S - 2
CRASH_BOUND_S = ZOMBIE_AFTER_S + 10 + 10


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("team")
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
            "PREFECT_WORKER_QUERY_SECONDS": "2",
            "PREFECT_WORKER_HEARTBEAT_SECONDS": "10",
            "PREFECT_LOGGING_LEVEL": "INFO",
        })
        run_assay(env, "db", "upgrade")
        ingested = json.loads(run_assay(env, "ingest", str(shared_data / "wmt16-da-seg"), "--json").stdout)
        dataset = ingested["label"]
        run_assay(env, "suite", "define", "nightly", "--entry", f"{dataset}:seg:kendall,pearson")
        deployed = json.loads(run_assay(env, "deploy", "--zombie-after", str(ZOMBIE_AFTER_S), "--debounce", "30",
                                        "--settle", "2", "--json").stdout)
        for pool in ("cpu", "gpu"):
            log = root / f"worker-{pool}.log"
            workers.append(Worker(pool, env, log).start())
        yield {"server": server, "env": env, "root": root, "dataset": dataset, "deployed": deployed,
               "workers": {w.pool: w for w in workers}}
    finally:
        for worker in workers:
            worker.stop()
        server.stop()
        drop_database(catalog_db)


def _make_checkpoint(folder: Path, *, seed: int, encoder: Path | None) -> Path:
    from assay.workers.checkpoint import create_from_encoder

    return create_from_encoder(encoder, folder, seed=seed)


def _status(env: dict[str, str]) -> dict[str, Any]:
    return json.loads(run_assay(env, "nightly", "status", "--json").stdout)  # type: ignore[no-any-return]


def _completed(env: dict[str, str], name: str) -> dict[str, Any] | None:
    return next((row for row in _status(env)["completed"] if row["checkpoint_name"] == name), None)


def test_deploy_is_idempotent(team: dict[str, Any]) -> None:
    first = {(c["kind"], c["name"]): c["action"] for c in team["deployed"]["changes"]}
    assert {"created"} == set(first.values()), first
    assert ("work pool", "gpu") in first and ("deployment", "nightly/nightly") in first
    again = json.loads(run_assay(team["env"], "deploy", "--zombie-after", str(ZOMBIE_AFTER_S), "--debounce", "30",
                                 "--settle", "2", "--json").stdout)
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
    a = _make_checkpoint(tmp_path / "ckpt-a", seed=1, encoder=encoder)
    registered = time.monotonic()
    run_assay(env, "checkpoints", "register", str(a), "--name", "nightly-a")
    row = wait_for(lambda: _completed(env, "nightly-a"), 300, "checkpoint A's evaluation through the event trigger",
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
    fire = datetime.now(UTC) + timedelta(minutes=2)
    run_assay(env, "deploy", "--zombie-after", str(ZOMBIE_AFTER_S), "--debounce", "30", "--settle", "2",
              "--cron", f"{fire.minute} {fire.hour} * * *")
    scheduled = wait_for(lambda: [r for r in read_flow_runs(server.url, "nightly/nightly")
                                  if r.auto_scheduled and r.state and r.state.is_completed()],
                         240, "the scheduled nightly run to complete", interval=5)
    assert scheduled[0].parameters["reason"] == "schedule"
    b_row = wait_for(lambda: _completed(env, "nightly-b"), 120, "checkpoint B's evaluation", interval=3)
    assert b_row["attempts"] == 1

    # 3. the leaderboard names both checkpoints with their lineage
    board = json.loads(run_assay(env, "leaderboard", "--dataset", team["dataset"], "--json").stdout)
    labels = {r["checkpoint"] for r in board if r.get("checkpoint")}
    assert "nightly-a (create_from_encoder)" in labels and "nightly-b (finetune of nightly-a)" in labels
    # exactly once: one completed ledger row per checkpoint, however many sweeps ran
    names = [r["checkpoint_name"] for r in _status(env)["completed"]]
    assert names.count("nightly-a") == 1 and names.count("nightly-b") == 1


def test_killed_gpu_worker_crashes_and_the_retry_completes(team: dict[str, Any], tmp_path: Path) -> None:
    import pyarrow.dataset as ds

    env, server, gpu = team["env"], team["server"], team["workers"]["gpu"]
    c = _make_checkpoint(tmp_path / "ckpt-c", seed=3, encoder=None)  # the real MiniLM: slower scoring
    run_assay(env, "checkpoints", "register", str(c), "--name", "nightly-c")
    store = Path(env["ASSAY_HOME"])

    def scoring_run() -> Any:
        runs = [r for r in read_flow_runs(server.url, "evaluate-checkpoint/evaluate-checkpoint")
                if "nightly-c" in (r.name or "") and r.state and r.state.is_running()]
        return runs[0] if runs else None

    victim = wait_for(scoring_run, 300, "checkpoint C's evaluation to start", interval=2)
    before = set(store.glob("results/segment_scores/metric=bleurt/sig=*/part-*.parquet"))
    wait_for(lambda: set(store.glob("results/segment_scores/metric=bleurt/sig=*/part-*.parquet")) - before, 300,
             "the first scored part of checkpoint C", interval=0.5)
    gpu.kill_hard([str(victim.id)])
    killed = time.monotonic()

    def crashed() -> Any:
        from prefect.client.orchestration import get_client

        with server.settings(), get_client(sync_client=True) as client:
            state = client.read_flow_run(victim.id).state
        return state if state and state.is_crashed() else None

    state = wait_for(crashed, CRASH_BOUND_S, "the killed run to be marked Crashed", interval=2)
    crashed_after = time.monotonic() - killed
    print(f"killed -> Crashed in {crashed_after:.1f} s (bound {CRASH_EARLIEST_S}-{CRASH_BOUND_S} s): {state.message}")
    assert CRASH_EARLIEST_S <= crashed_after <= CRASH_BOUND_S
    gpu.start()
    row = wait_for(lambda: _completed(env, "nightly-c"), 420, "the retry of checkpoint C to complete", interval=3)
    assert row["attempts"] == 2

    signature = row["summary"]["signature"]
    parts = [str(p) for p in store.glob("results/segment_scores/metric=bleurt/sig=*/part-*.parquet")]
    table = ds.dataset(parts, format="parquet").to_table(columns=["signature", "key"],
                                                         filter=ds.field("signature") == signature)
    keys = table.column("key").to_pylist()
    assert len(keys) == len(set(keys)) > 0, "exactly one row per (signature, segment)"
    catalog = create_engine(env["ASSAY_CATALOG_URL"])
    with catalog.connect() as conn:
        statuses = [r[0] for r in conn.execute(text(
            "SELECT status FROM runs WHERE kind = 'score' AND CAST(inputs AS TEXT) LIKE :sig"),
            {"sig": f"%{signature}%"})]
    catalog.dispose()
    assert "crashed" in statuses and "completed" in statuses, statuses
    assert "running" not in statuses
    # the killed run's slot on the gpu pool was released: nothing of it is left running
    from prefect.client.orchestration import get_client

    with server.settings(), get_client(sync_client=True) as client:
        assert client.read_work_pool("gpu").concurrency_limit == 1
    assert not [r for r in read_flow_runs(server.url, "evaluate-checkpoint/evaluate-checkpoint")
                if r.state and r.state.is_running()]


def test_team_md_check_and_user_section_on_the_team_server(team: dict[str, Any], tmp_path: Path) -> None:
    """docs/TEAM.md §6 and "The nightly evaluation, as a user sees it", in the doc's order, on the
    team server with its workers (issue 17: the doc true step by step; tests/test_docs_commands.py
    checks that every command it shows parses)."""
    import os

    env = team["env"]
    # §6: the pools and their online workers (there is no `prefect worker ls`)
    pools = {p["pool"]: p for p in json.loads(run_assay(env, "workers", "--json").stdout)}
    for name in ("cpu", "gpu"):
        assert pools[name]["status"] == "READY" and pools[name]["type"] == "process"
        assert "ONLINE" in {w["status"] for w in pools[name]["workers"]}
    assert pools["gpu"]["concurrency_limit"] == 1
    run_assay(env, "datasets", "list")
    status = _status(env)
    assert status["counts"]["owed"] == 0 and status["counts"]["pending"] == 0
    assert status["counts"]["completed"] >= 3  # A, B and C of the tests before

    # a folder dropped into a watched folder; `assay nightly run` evaluates it now (no 02:00 wait)
    watched = tmp_path / "drop"
    watched.mkdir()
    run_assay(env, "checkpoints", "watch", str(watched))
    d = _make_checkpoint(watched / "nightly-d", seed=4, encoder=save_tiny_encoder(tmp_path / "tiny-encoder"))
    old = time.time() - 300  # copied with its old times (as `cp -a` keeps them): complete at once
    for path in [d, *d.rglob("*")]:
        os.utime(path, (old, old))
    swept = run_assay(env, "nightly", "run", "--no-report")
    assert "registered nightly-d from a watched folder" in swept.stdout, swept.stdout
    assert "1 item(s) evaluated" in swept.stdout, swept.stdout
    assert _completed(env, "nightly-d") is not None
    scan = run_assay(env, "checkpoints", "scan")  # what a scan sees now, and why
    assert "already registered" in scan.stdout and "nightly-d" in scan.stdout

    # the leaderboard and the report, as the doc shows them
    # checkpoint C (MiniLM, 512-token limit) was evaluated on another item set than the tiny ones,
    # which the leaderboard refuses to rank together unless asked (its error says so)
    board = run_assay(env, "leaderboard", "--dataset", team["dataset"], "--level", "seg", "--allow-mixed")
    assert "nightly-d" in board.stdout
    run_assay(env, "report", "--out", str(tmp_path / "report"))
    assert "nightly-d" in (tmp_path / "report" / "index.html").read_text(encoding="utf-8")


SWEEP_SPACE = """\
[trial]
data = ["{dataset}"]
init = "{init}"
[trial.config]
max_steps = 20
eval_every = 10
save_every = 10
batch_size = 8
[params.learning_rate]
choices = [1e-4, 1e-3]
[pruner]
kind = "none"
"""


def test_a_sweep_runs_its_trials_as_train_runs_on_the_gpu_pool(team: dict[str, Any], tmp_path: Path) -> None:
    """Issue 18: with the team's deployments, each trial of `assay sweep run` is a run of the
    `train/train` deployment on the `gpu` pool (limit 1 here, so one at a time); the trial's
    flow-run process (started by the gpu worker) reads its values from, and reports to, the study in
    the PostgreSQL catalog's schema `optuna`, which the sweep's own process shares."""
    env, server = team["env"], team["server"]
    space = tmp_path / "space.toml"
    space.write_text(SWEEP_SPACE.format(dataset=team["dataset"], init=save_tiny_encoder(tmp_path / "tiny")),
                     encoding="utf-8")
    summary = json.loads(run_assay(env, "sweep", "run", str(space), "--name", "team-lr", "--trials", "2", "--json",
                                   timeout=600).stdout)
    trials = summary["trials"]
    assert [(t["state"], t["runner"], t["steps"]) for t in trials] == [("COMPLETE", "deployment", 20)] * 2
    assert sorted(t["params"]["learning_rate"] for t in trials) == [1e-4, 1e-3]
    runs = {str(r.id): r for r in read_flow_runs(server.url, "train/train")}
    for trial in trials:
        run = runs[trial["flow_run_id"]]
        assert run.state_name == "Completed" and run.work_pool_name == "gpu"
        assert run.parameters == {"sweep_trial": {"sweep": "team-lr", "trial": trial["number"]}}
    first, second = (runs[t["flow_run_id"]] for t in trials)
    assert first.end_time <= second.start_time  # the pool's concurrency limit (1): one trial at a time
    catalog = create_engine(env["ASSAY_CATALOG_URL"])
    with catalog.connect() as conn:
        stored = conn.execute(text("SELECT count(*) FROM optuna.trials t JOIN optuna.studies s "
                                   "ON s.study_id = t.study_id WHERE s.study_name = 'team-lr'")).scalar_one()
    catalog.dispose()
    assert stored == 2
    best = summary["best"]["checkpoint"]
    info = json.loads(run_assay(env, "checkpoints", "show", best, "--json").stdout)
    assert info["lineage"]["hyperparameters"]["extra"]["sweep"] == "team-lr"
