"""``assay deploy`` validates before it changes anything (issue 17, findings 2 and 3).

Against one real ``prefect server start`` on PostgreSQL (the ``team_server`` fixture) and a real
SQLite catalog holding the suite ``nightly`` (WMT16 DA from the shared data), ``assay deploy`` runs
as a user runs it (a subprocess). Each test starts from an empty server (every work pool,
deployment, automation and flow deleted) and compares the server's whole state, read with
Prefect's client, before and after:

1. ``--dry-run`` on an empty server lists every pool, deployment and automation it would create
   (exit 0) and creates none of them;
2. ``--suite nosuchsuite`` after a good deploy: exit 2, one error line naming the suite and how to
   define it, and the nightly deployment and the automations are as they were;
3. a bad cron and a bad time zone are both reported (exit 2), a six-field cron is refused; nothing
   is written;
4. a ``gpu`` pool of another type (``kubernetes``, which the server accepts without its worker
   package) is named (exit 2), and the ``cpu`` pool, the deployments and automations are not created;
5. a server that does not answer is one line, not a traceback.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.team_server import TeamServer

pytestmark = [pytest.mark.prefect, pytest.mark.postgres]

BIN = Path(sys.executable).parent
POOLS = {"cpu", "gpu"}
DEPLOYMENTS = {"nightly", "evaluate-checkpoint", "train", "score", "evaluate", "ingest", "report"}
AUTOMATIONS = {"assay: crash zombie flow runs", "assay: evaluate registered checkpoints",
               "assay: retry crashed evaluations"}


@pytest.fixture(scope="module")
def team(team_server: TeamServer, tmp_path_factory: pytest.TempPathFactory,
         shared_data: Path) -> Iterator[dict[str, Any]]:
    """The client environment: the server's API URL, an ASSAY_HOME whose SQLite catalog holds WMT16
    and the suite ``nightly`` on it (defined in process, as ``assay suite define`` does)."""
    root = tmp_path_factory.mktemp("deploy_validation")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASSAY_HOME", str(root / "home"))
        patch.delenv("ASSAY_CATALOG_URL", raising=False)
        from assay.catalog.engine import reset_engines
        from assay.config import load_settings
        from assay.jobs.ingest import ingest_path
        from assay.nightly.suites import define_suite

        reset_engines()
        try:
            label = ingest_path(shared_data / "wmt16-da-seg").label
            define_suite(load_settings(), "nightly", [{"dataset": label, "levels": ["seg"],
                                                      "statistics": ["kendall"]}])
        finally:
            reset_engines()
    env = team_server.client_env()
    for key in [k for k in env if k.startswith("ASSAY_")]:
        env.pop(key)
    env.update({"ASSAY_HOME": str(root / "home"), "PREFECT_HOME": str(root / "prefect_client")})
    yield {"server": team_server, "env": env}


def _deploy(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "assay"), "deploy", *args], env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def _state(server: TeamServer) -> dict[str, Any]:
    """Everything ``assay deploy`` could write, as the server holds it (timestamps included, so an
    update that writes the same values still shows)."""
    from prefect.client.orchestration import get_client

    with server.settings(), get_client(sync_client=True) as client:
        return {
            "work pools": {p.name: p.model_dump(mode="json") for p in client.read_work_pools()},
            "deployments": {d.name: d.model_dump(mode="json") for d in client.read_deployments()},
            "automations": {a.name: a.model_dump(mode="json") for a in client.read_automations()},
            "flows": sorted(f.name for f in client.read_flows()),
        }


EMPTY: dict[str, Any] = {"work pools": {}, "deployments": {}, "automations": {}, "flows": []}


@pytest.fixture
def empty_server(team: dict[str, Any]) -> dict[str, Any]:
    """The module's server with nothing on it: each test starts from the state a new team has."""
    from prefect.client.orchestration import get_client

    with team["server"].settings(), get_client(sync_client=True) as client:
        for automation in client.read_automations():
            client.delete_automation(automation.id)
        for deployment in client.read_deployments():
            client.delete_deployment(deployment.id)
        for flow in client.read_flows():
            client.delete_flow(flow.id)
        for pool in client.read_work_pools():
            client.delete_work_pool(pool.name)
    assert _state(team["server"]) == EMPTY
    return team


def _explain(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"


def _error_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.strip()]


def test_dry_run_on_an_empty_server_lists_everything_and_creates_nothing(empty_server: dict[str, Any]) -> None:
    done = _deploy(empty_server["env"], "--dry-run")
    assert done.returncode == 0, _explain(done)
    lines = done.stdout.splitlines()
    assert len(lines) == len(POOLS) + len(DEPLOYMENTS) + len(AUTOMATIONS) + 1, _explain(done)
    for pool in POOLS:
        assert any(line.startswith("work pool") and f" {pool} " in line and line.endswith("would be created")
                   for line in lines), (pool, _explain(done))
    for deployment in DEPLOYMENTS:
        assert any(line.startswith("deployment") and f" {deployment}/{deployment} " in line
                   and line.endswith("would be created") for line in lines), (deployment, _explain(done))
    for automation in AUTOMATIONS:
        assert any(line.startswith("automation") and automation in line and line.endswith("would be created")
                   for line in lines), (automation, _explain(done))
    assert lines[-1].startswith(f"{len(POOLS) + len(DEPLOYMENTS) + len(AUTOMATIONS)} change(s) on ")
    assert lines[-1].endswith("(dry run)")
    assert _state(empty_server["server"]) == EMPTY


def test_an_unknown_suite_is_refused_and_nothing_changes(empty_server: dict[str, Any]) -> None:
    env, server = empty_server["env"], empty_server["server"]
    good = _deploy(env)
    assert good.returncode == 0, _explain(good)
    before = _state(server)
    assert set(before["deployments"]) == DEPLOYMENTS and set(before["automations"]) == AUTOMATIONS
    assert before["deployments"]["nightly"]["parameters"]["suite"] == "nightly"

    done = _deploy(env, "--suite", "nosuchsuite")
    assert done.returncode == 2, _explain(done)
    errors = _error_lines(done)
    assert len(errors) == 1, _explain(done)
    assert "'nosuchsuite'" in errors[0]
    assert "assay suite define nosuchsuite --all-datasets" in errors[0] and "--entry" in errors[0]
    assert "known suites: nightly" in errors[0]
    assert done.stdout == ""
    assert _state(server) == before


def test_a_bad_cron_and_a_bad_time_zone_are_both_reported_and_nothing_is_written(
        empty_server: dict[str, Any]) -> None:
    env, server = empty_server["env"], empty_server["server"]
    done = _deploy(env, "--cron", "61 2 * * *", "--timezone", "Mars/Olympus_Mons")
    assert done.returncode == 2, _explain(done)
    assert "--cron '61 2 * * *'" in done.stderr and "--timezone 'Mars/Olympus_Mons'" in done.stderr, _explain(done)
    assert _state(server) == EMPTY

    # croniter reads a sixth field as seconds: "0 2 * * * *" would start a sweep every second of 02:00
    six = _deploy(env, "--cron", "0 2 * * * *")
    assert six.returncode == 2, _explain(six)
    assert "--cron '0 2 * * * *'" in six.stderr and "five fields" in six.stderr, _explain(six)
    assert _state(server) == EMPTY

    # after a good deploy, the same refusals leave the schedule as it was
    good = _deploy(env, "--timezone", "Europe/Berlin")
    assert good.returncode == 0, _explain(good)
    before = _state(server)
    again = _deploy(env, "--cron", "every night", "--timezone", "Europe/Berlín")
    assert again.returncode == 2, _explain(again)
    assert "every night" in again.stderr and "Europe/Berlín" in again.stderr, _explain(again)
    assert _state(server) == before


def test_a_gpu_pool_of_another_type_is_named_and_nothing_is_written(empty_server: dict[str, Any]) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    env, server = empty_server["env"], empty_server["server"]
    with server.settings(), get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name="gpu", type="kubernetes"))
    before = _state(server)
    assert set(before["work pools"]) == {"gpu"}

    done = _deploy(env)
    assert done.returncode == 2, _explain(done)
    errors = _error_lines(done)
    assert len(errors) == 1, _explain(done)
    assert "work pool 'gpu'" in errors[0] and "'kubernetes'" in errors[0] and "'process'" in errors[0]
    assert _state(server) == before  # in particular: no cpu pool, no deployment, no automation

    dry = _deploy(env, "--dry-run")
    assert dry.returncode == 2, _explain(dry)
    assert "work pool 'gpu'" in dry.stderr
    assert _state(server) == before


def test_a_server_that_does_not_answer_is_one_service_line(team: dict[str, Any]) -> None:
    from assay.ports import free_port

    env = {**team["env"], "PREFECT_API_URL": f"http://127.0.0.1:{free_port()}/api"}
    done = _deploy(env, "--dry-run")
    assert done.returncode == 3, _explain(done)  # a service unreachable (tests/team/test_service_errors.py)
    errors = _error_lines(done)
    assert len(errors) == 1 and "connection refused" in errors[0] and "PREFECT_API_URL" in errors[0], _explain(done)
