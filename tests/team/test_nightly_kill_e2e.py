"""The team setup end to end on loopback, nothing mocked: a lost ``gpu`` host, and a sweep whose
trials run on the ``gpu`` pool (issues 9 and 18).

The setup is tests/team/nightly_team.py's (a real server on PostgreSQL, the catalog on PostgreSQL,
a shared store, ``assay deploy``, a ``cpu`` and a ``gpu`` process worker), a second one beside
tests/team/test_nightly_e2e.py's. Then:

1. **kill**: checkpoint C (the real MiniLM encoder, so scoring takes a while) is registered; while its
   evaluation is scoring, the ``gpu`` worker and its flow-run process get SIGKILL. The zombie
   automation marks the run Crashed (the time is printed and bounded); a restarted worker completes
   the retry; the store holds exactly one row per (signature, segment); the catalog records the
   killed scoring run as crashed.
2. **sweep**: ``assay sweep run`` runs each trial as a run of the ``train/train`` deployment on the
   ``gpu`` pool, one at a time.

C wraps the real embedded MiniLM with a randomly initialised rating head; the sweep trains a tiny
RANDOM BERT (tests/robustness_support.py). Their correlations mean nothing; the plumbing is what is
tested.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.robustness_support import save_tiny_encoder
from tests.team.nightly_team import (
    CRASH_BOUND_S,
    CRASH_EARLIEST_S,
    DEPLOY_ARGS,
    completed,
    make_checkpoint,
    nightly_team,
)
from tests.team.workers import read_flow_runs, run_assay, wait_for

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Iterator[dict[str, Any]]:
    # one pair (de-en, 560 judged segments) in shards of 150: the worker is killed between two stored
    # shards, and the real MiniLM scores about half of what two pairs cost it
    with nightly_team(tmp_path_factory.mktemp("team"), shared_data, pairs=("de-en",),
                      deploy_args=(*DEPLOY_ARGS, "--shard-size", "150")) as setup:
        yield setup


def test_killed_gpu_worker_crashes_and_the_retry_completes(team: dict[str, Any], tmp_path: Path) -> None:
    import pyarrow.dataset as ds

    env, server, gpu = team["env"], team["server"], team["workers"]["gpu"]
    c = make_checkpoint(tmp_path / "ckpt-c", seed=3, encoder=None)  # the real MiniLM: slower scoring
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
    row = wait_for(lambda: completed(env, "nightly-c"), 420, "the retry of checkpoint C to complete", interval=3)
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
    # the trials' checkpoints are registered, and each registration would start their nightly
    # evaluation on the same one-slot gpu pool, between the trials: the trigger is paused here, as a
    # team pauses an automation in Prefect's UI (the event path is tests/team/test_nightly_e2e.py's)
    from prefect.client.orchestration import get_client

    with server.settings(), get_client(sync_client=True) as client:
        [trigger] = client.read_automations_by_name("assay: evaluate registered checkpoints")
        client.pause_automation(trigger.id)
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
