"""A job's steps are declared once and made Prefect tasks by one adapter (:mod:`assay.flows.step_tasks`);
every flow installs what it needs when it starts running (:mod:`assay.flows.hooks`), never on import."""

from __future__ import annotations

import importlib
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from assay.fixtures import fixtures_dir

DEMO_WMT = fixtures_dir() / "demo-wmt"


@dataclass(frozen=True)
class ToyPlan:
    name: str
    shards: int


@dataclass
class ToySteps:
    """A job's steps as a job declares them: plain methods; ``work`` fails once, transiently."""

    calls: list[str] = field(default_factory=list)
    failures: int = 1

    def plan(self, name: str) -> ToyPlan:
        self.calls.append(f"plan {name}")
        return ToyPlan(name, 2)

    def work(self, plan: ToyPlan, shard: int) -> int:
        self.calls.append(f"work {plan.name} {shard}")
        if self.failures:
            self.failures -= 1
            raise sqlite3.OperationalError("database is locked")  # transient (assay.transient)
        return shard * 10

    def finish(self, results: list[int]) -> int:
        return sum(results)


def test_as_tasks_makes_the_named_steps_tasks_and_leaves_the_rest() -> None:
    from prefect import Task

    from assay.flows.step_tasks import as_tasks

    steps = ToySteps()
    adapted = as_tasks(steps, {"plan": {"name": "toy-plan", "task_run_name": "plan {name}", "retries": 3}},
                       subflows={"finish": len})
    assert isinstance(adapted.plan, Task)
    assert (adapted.plan.name, adapted.plan.task_run_name, adapted.plan.retries) == ("toy-plan", "plan {name}", 3)
    assert adapted.plan.fn(name="x") == ToyPlan("x", 2)  # the task calls the object's own method
    assert adapted.work == steps.work and adapted.calls is steps.calls  # not named: the object's own
    assert adapted.finish([1, 2, 3]) == 3  # a subflow replaces the step


@pytest.mark.parametrize(("tasks", "subflows", "message"), [
    ({"plna": {"name": "x"}}, {}, "has no step 'plna'"),
    ({"calls": {"name": "x"}}, {}, "has no step 'calls'"),
    ({"_private": {"name": "x"}}, {}, "has no step '_private'"),
    ({"plan": {"name": "x"}}, {"plan": len}, "plan cannot be both"),
])
def test_as_tasks_refuses_what_is_no_step(tasks: dict[str, Any], subflows: dict[str, Any], message: str) -> None:
    from assay.flows.step_tasks import as_tasks

    with pytest.raises(TypeError, match=message):
        as_tasks(ToySteps(), tasks, subflows=subflows)


def test_every_flow_installs_its_hooks_when_it_starts() -> None:
    from prefect import Flow

    import assay.flows
    from assay.flows.hooks import install_flow_hooks

    modules = [importlib.import_module(f"assay.flows.{name}") for name in assay.flows.__all__]
    flows = [obj for module in modules for obj in vars(module).values() if isinstance(obj, Flow)]
    assert len({f.name for f in flows}) >= 19
    assert [f.name for f in flows if install_flow_hooks not in f.on_running_hooks] == []


def test_importing_the_flow_layer_installs_nothing() -> None:
    """Importing every flow module leaves the flow-run id provider and the registration listeners
    as they were: a process that runs no flow never asks Prefect for a flow run."""
    code = ("import importlib, assay.flows, assay.flow_context as fc, assay.checkpoints.registry as r\n"
            "default = fc._provider\n"
            "[importlib.import_module('assay.flows.' + m) for m in assay.flows.__all__]\n"
            "assert fc._provider is default and r._registration_listeners == [], r._registration_listeners\n"
            "from assay.flows.hooks import install_flow_hooks, prefect_flow_run_id\n"
            "install_flow_hooks(); install_flow_hooks()\n"
            "assert fc._provider is prefect_flow_run_id and len(r._registration_listeners) == 1\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def _task_runs(flow_run_id: str, count: int, timeout_s: float = 120) -> dict[str, Any]:
    """The flow run's task runs by name, once the server holds ``count`` of them: task run states
    reach the server as events, recorded a moment after the flow returns."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.client.schemas.objects import StateType

    deadline = time.monotonic() + timeout_s
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            if len(runs) >= count and all(run.state_type == StateType.COMPLETED for run in runs):
                return {run.name: run for run in runs}
            assert time.monotonic() < deadline, f"{len(runs)} task runs recorded, expected {count}"
            time.sleep(0.5)


@pytest.mark.prefect
def test_steps_run_as_tasks_with_their_names_retries_and_plans(prefect_engine: None) -> None:
    """Plans cross the task boundary as dataclasses (tasks run in the flow's process), a run name
    formats their attributes, and a transient failure is retried where the options say so."""
    from prefect import flow
    from prefect.runtime import flow_run

    from assay.flows.retry_policy import RETRY_TRANSIENT
    from assay.flows.step_tasks import as_tasks

    steps = ToySteps()

    @flow(name="toy-steps")
    def toy_flow() -> tuple[ToyPlan, list[int], str]:
        tasks = as_tasks(steps, {
            "plan": {"name": "toy-plan", "task_run_name": "plan {name}"},
            "work": {"name": "toy-work", "task_run_name": "work {plan.name} {shard}",
                     **RETRY_TRANSIENT, "retry_delay_seconds": 0},
        })
        plan = tasks.plan("a")
        return plan, [tasks.work(plan, shard) for shard in range(plan.shards)], str(flow_run.id)

    plan, results, flow_run_id = toy_flow()
    assert plan == ToyPlan("a", 2) and results == [0, 10]
    assert steps.calls == ["plan a", "work a 0", "work a 0", "work a 1"]
    runs = _task_runs(flow_run_id, 3)
    assert set(runs) == {"plan a", "work a 0", "work a 1"}
    assert (runs["work a 0"].run_count, runs["work a 1"].run_count) == (2, 1)


@pytest.mark.prefect
def test_the_score_flow_runs_each_scoring_step_as_its_named_task(prefect_engine: None) -> None:
    """The task names the Prefect UI shows are the ones the score flow always had; each run row
    records its flow run (installed when the flow starts, not on import)."""
    from sqlalchemy import select

    from assay.catalog.engine import session_scope
    from assay.catalog.models import Run
    from assay.flows.score import score_flow
    from assay.jobs.ingest import ingest_path

    ingest_path(DEMO_WMT)
    summary = score_flow("wmt99", {"name": "rouge2", "params": {}}, shard_size=10, progress=False)
    assert summary["computed"] == 36 and len(summary["files"]) == 4
    with session_scope() as session:
        flow_run_id = session.scalar(select(Run.flow_run_id).where(Run.id == summary["run_id"]))
    assert flow_run_id
    # a task run without a run name is named "<task name>-<3 characters of a uuid>" by Prefect
    names = {n if n.startswith("score shard") else n.rsplit("-", 1)[0] for n in _task_runs(flow_run_id, 8)}
    assert names == {"plan-scoring", "resume-scoring-plan", "start-scoring-run", "record-scoring-run",
                     "score shard 0", "score shard 1", "score shard 2", "score shard 3"}
