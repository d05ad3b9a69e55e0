"""What ``assay deploy`` creates on a Prefect server, and how it does so idempotently.

Against the configured server (``PREFECT_API_URL``), :func:`apply` makes the server hold exactly the
team setup, touching only what differs, so a second ``assay deploy`` changes nothing:

* **Work pools** ``cpu`` and ``gpu``, both of type ``process``. Their base job template is Prefect's
  own default for process workers, with ``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` set in the flow runs'
  environment (the heartbeats the zombie automation watches). ``gpu`` has a concurrency limit of one
  run per GPU (``--gpus``). A pool's limit counts its Running runs; a run marked Crashed no longer
  counts, so a killed worker's run frees its slot as soon as the zombie automation marks it
  (Prefect #16746: no deployment concurrency slots are used, which a killed process would keep).
* **Deployments** (entrypoints are module paths: workers run the installed ``assay`` package):
  ``nightly`` (cron, 02:00 by default, in ``--timezone``), ``evaluate-checkpoint`` (one work item
  of the nightly sweep, on ``gpu``), ``train`` and ``score`` (``gpu``), ``evaluate``, ``ingest``
  and ``report`` (``cpu``).
* **Automations**:

  - *crash zombie flow runs*: a flow run whose heartbeats stop for ``--zombie-after`` seconds
    without a final state is marked Crashed (Prefect's "detect zombie flows" pattern);
  - *evaluate registered checkpoints*: each ``assay.checkpoint.registered`` event runs the
    ``nightly`` deployment for that checkpoint, debounced per checkpoint (a reactive trigger with
    ``for_each`` the checkpoint and a ``--debounce`` window: repeated announcements of one
    checkpoint within the window start one run);
  - *retry crashed evaluations*: an ``evaluate-checkpoint`` run that crashed starts a ``nightly``
    sweep, which reconciles the ledger and dispatches the item again (attempts are limited).

The cron sweep catches anything a trigger missed (the server was down, an event was lost).
"""

from __future__ import annotations

import uuid
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.actions import DeploymentScheduleCreate, DeploymentUpdate, WorkPoolCreate, WorkPoolUpdate
from prefect.client.schemas.objects import StateType
from prefect.client.schemas.schedules import CronSchedule
from prefect.events.actions import ChangeFlowRunState, RunDeployment
from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture
from prefect.exceptions import ObjectNotFound

from assay.errors import UsageError
from assay.flows.events import CHECKPOINT_REGISTERED, RESOURCE_PREFIX

HEARTBEAT_SECONDS = 30
"""``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` of the flow runs (Prefect's minimum is 30)."""
AUTOMATION_PREFIX = "assay: "


@dataclass(frozen=True)
class TeamConfig:
    """The knobs of ``assay deploy``."""

    timezone: str = "UTC"
    nightly_cron: str = "0 2 * * *"
    gpus: int = 1
    suite: str = "nightly"
    debounce_seconds: int = 60
    zombie_after_seconds: int = 90
    settle_seconds: float = 60.0
    report_dir: str | None = None

    def check(self) -> TeamConfig:
        try:
            zoneinfo.ZoneInfo(self.timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
            raise UsageError(f"--timezone {self.timezone!r} is not an IANA time zone "
                             "(e.g. Europe/Berlin, UTC)") from exc
        try:
            CronSchedule(cron=self.nightly_cron, timezone=self.timezone)
        except ValueError as exc:
            raise UsageError(f"--cron {self.nightly_cron!r} is not a cron expression (e.g. '0 2 * * *')") from exc
        if self.gpus < 1:
            raise UsageError(f"--gpus must be at least 1, got {self.gpus}")
        if self.debounce_seconds < 0:
            raise UsageError("--debounce must not be negative")
        if self.zombie_after_seconds < 2 * HEARTBEAT_SECONDS:
            raise UsageError(f"--zombie-after must be at least {2 * HEARTBEAT_SECONDS} s (two heartbeats of "
                             f"{HEARTBEAT_SECONDS} s), got {self.zombie_after_seconds}")
        from assay.nightly.suites import validate_suite_name

        validate_suite_name(self.suite)
        return self


@dataclass(frozen=True)
class DeploymentSpec:
    name: str
    entrypoint: str
    pool: str
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)
    cron: str | None = None

    @property
    def flow_name(self) -> str:
        return self.name

    @property
    def full_name(self) -> str:
        return f"{self.flow_name}/{self.name}"


@dataclass(frozen=True)
class Change:
    kind: str
    name: str
    action: str
    """created, updated or unchanged"""

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "action": self.action}


def process_job_template() -> dict[str, Any]:
    """Prefect's default base job template for process workers, with the heartbeat set in the
    flow runs' environment."""
    from prefect.workers.process import ProcessWorker

    template = ProcessWorker.get_default_base_job_template()
    env = template["variables"]["properties"]["env"]
    env["default"] = {**(env.get("default") or {}), "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": str(HEARTBEAT_SECONDS)}
    return template


def pool_specs(config: TeamConfig) -> list[dict[str, Any]]:
    return [
        {"name": "cpu", "type": "process", "concurrency_limit": None,
         "description": "Assay: ingestion, lexical metrics, evaluation, the nightly sweep and the report"},
        {"name": "gpu", "type": "process", "concurrency_limit": config.gpus,
         "description": f"Assay: learned-metric scoring and training, one run per GPU ({config.gpus})"},
    ]


def deployment_specs(config: TeamConfig) -> list[DeploymentSpec]:
    nightly_parameters = {"suite": config.suite, "reason": "schedule", "settle_seconds": config.settle_seconds}
    if config.report_dir:
        nightly_parameters["report_dir"] = config.report_dir
    return [
        DeploymentSpec("nightly", "assay.flows.nightly:nightly_flow", "cpu",
                       "Evaluate new checkpoints on the suite, flag regressions, write the report",
                       nightly_parameters, cron=config.nightly_cron),
        DeploymentSpec("evaluate-checkpoint", "assay.flows.checkpoint_eval:evaluate_checkpoint_flow", "gpu",
                       "One checkpoint x suite dataset of the nightly sweep, exactly once"),
        DeploymentSpec("train", "assay.flows.train:train_flow", "gpu",
                       "The BLEURT recipe: synthesize, pre-train, fine-tune"),
        DeploymentSpec("score", "assay.flows.score:score_flow", "gpu", "Score a dataset version with a metric"),
        DeploymentSpec("evaluate", "assay.flows.evaluate:evaluate_flow", "cpu", "Meta-evaluate scored metrics"),
        DeploymentSpec("ingest", "assay.flows.ingest:ingest_flow", "cpu", "Ingest human-judgment datasets"),
        DeploymentSpec("report", "assay.flows.report:report_flow", "cpu", "Write the HTML report"),
    ]


def automation_specs(config: TeamConfig, deployment_ids: dict[str, Any]) -> list[AutomationCore]:
    nightly = deployment_ids["nightly"]
    return [
        AutomationCore(
            name=AUTOMATION_PREFIX + "crash zombie flow runs",
            description="Mark a flow run Crashed when its heartbeats stop (Prefect: detect zombie flows)",
            trigger=EventTrigger(
                after={"prefect.flow-run.heartbeat"},
                expect={"prefect.flow-run.heartbeat", "prefect.flow-run.Completed", "prefect.flow-run.Failed",
                        "prefect.flow-run.Cancelled", "prefect.flow-run.Crashed"},
                match={"prefect.resource.id": ["prefect.flow-run.*"]},
                for_each={"prefect.resource.id"},
                posture=Posture.Proactive,
                threshold=1,
                within=timedelta(seconds=config.zombie_after_seconds),
            ),
            actions=[ChangeFlowRunState(name=None, force=False, state=StateType.CRASHED,
                                        message="marked Crashed by Assay: no heartbeat for "
                                                f"{config.zombie_after_seconds} s")],
        ),
        AutomationCore(
            name=AUTOMATION_PREFIX + "evaluate registered checkpoints",
            description="Run the nightly sweep for a newly registered checkpoint (debounced per checkpoint)",
            trigger=EventTrigger(
                expect={CHECKPOINT_REGISTERED},
                match={"prefect.resource.id": f"{RESOURCE_PREFIX}*"},
                for_each={"prefect.resource.id"},
                posture=Posture.Reactive,
                threshold=1,
                within=timedelta(seconds=config.debounce_seconds),
            ),
            actions=[RunDeployment(source="selected", deployment_id=nightly, job_variables=None,
                                   parameters={"suite": config.suite, "checkpoint": "{{ event.resource.id }}",
                                               "reason": "event", "scan": False})],
        ),
        AutomationCore(
            name=AUTOMATION_PREFIX + "retry crashed evaluations",
            description="A crashed evaluate-checkpoint run starts a sweep, which retries its item",
            trigger=EventTrigger(
                expect={"prefect.flow-run.Crashed"},
                match={"prefect.resource.id": "prefect.flow-run.*"},
                match_related={"prefect.resource.id": f"prefect.deployment.{deployment_ids['evaluate-checkpoint']}"},
                posture=Posture.Reactive,
                threshold=1,
                within=timedelta(seconds=0),
            ),
            actions=[RunDeployment(source="selected", deployment_id=nightly, job_variables=None,
                                   parameters={"suite": config.suite, "reason": "retry", "scan": False})],
        ),
    ]


# --- apply ------------------------------------------------------------------------------------


def apply(config: TeamConfig, *, dry_run: bool = False) -> list[Change]:
    """Make the server hold the team setup; returns what was created, updated or left unchanged."""
    config.check()
    changes: list[Change] = []
    with get_client(sync_client=True) as client:
        # a Prefect API that lets us in, before anything is read: on a wrong path every read would
        # answer "not found", and a dry run would promise to create everything
        client.api_version()
        for pool in pool_specs(config):
            changes.append(_apply_pool(client, pool, dry_run))
        ids: dict[str, Any] = {}
        for spec in deployment_specs(config):
            change, ids[spec.name] = _apply_deployment(client, spec, config, dry_run)
            changes.append(change)
        if dry_run and any(v is None for v in ids.values()):
            changes += [Change("automation", a, "created") for a in _automation_names()]
            return changes
        for automation in automation_specs(config, ids):
            changes.append(_apply_automation(client, automation, dry_run))
    return changes


def _automation_names() -> list[str]:
    placeholder = uuid.UUID(int=0)  # the specs validate deployment ids as UUIDs; only the names are used
    ids = {"nightly": placeholder, "evaluate-checkpoint": placeholder}
    return [a.name for a in automation_specs(TeamConfig(), ids)]


def _apply_pool(client: SyncPrefectClient, pool: dict[str, Any], dry_run: bool) -> Change:
    template = process_job_template()
    try:
        existing = client.read_work_pool(pool["name"])
    except ObjectNotFound:
        if not dry_run:
            client.create_work_pool(WorkPoolCreate(
                name=pool["name"], type=pool["type"], description=pool["description"], base_job_template=template,
                concurrency_limit=pool["concurrency_limit"]))
        return Change("work pool", pool["name"], "created")
    if existing.type != pool["type"]:
        raise UsageError(f"work pool {pool['name']!r} exists with type {existing.type!r}, not {pool['type']!r}; "
                         "delete it (`prefect work-pool delete`) or use another server")
    same = (existing.base_job_template == template and existing.concurrency_limit == pool["concurrency_limit"]
            and (existing.description or "") == pool["description"])
    if same:
        return Change("work pool", pool["name"], "unchanged")
    if not dry_run:
        update = WorkPoolUpdate(description=pool["description"], base_job_template=template,
                                concurrency_limit=pool["concurrency_limit"])
        client.update_work_pool(pool["name"], update)
        if pool["concurrency_limit"] is None and existing.concurrency_limit is not None:
            # WorkPoolUpdate drops None fields: clear the limit explicitly
            client.update_work_pool(pool["name"], WorkPoolUpdate.model_validate({"concurrency_limit": None}))
    return Change("work pool", pool["name"], "updated")


def _flow_function(entrypoint: str) -> Callable[..., Any]:
    import importlib

    module, function = entrypoint.split(":")
    return getattr(importlib.import_module(module), function)


def _parameter_schema(entrypoint: str) -> dict[str, Any]:
    from prefect.utilities.callables import parameter_schema

    flow = _flow_function(entrypoint)
    return parameter_schema(getattr(flow, "fn", flow)).model_dump_for_openapi()


def _schedules(spec: DeploymentSpec, config: TeamConfig) -> list[tuple[str, str]]:
    return [(spec.cron, config.timezone)] if spec.cron else []


def _apply_deployment(client: SyncPrefectClient, spec: DeploymentSpec, config: TeamConfig,
                      dry_run: bool) -> tuple[Change, Any]:
    schema = _parameter_schema(spec.entrypoint)
    wanted_schedules = _schedules(spec, config)
    try:
        existing = client.read_deployment_by_name(spec.full_name)
    except ObjectNotFound:
        existing = None
    if existing is None:
        if dry_run:
            return Change("deployment", spec.full_name, "created"), None
        flow_id = client.create_flow_from_name(spec.flow_name)
        deployment_id = client.create_deployment(
            flow_id=flow_id, name=spec.name, entrypoint=spec.entrypoint, work_pool_name=spec.pool,
            description=spec.description, parameters=spec.parameters, parameter_openapi_schema=schema,
            enforce_parameter_schema=True, tags=["assay"], pull_steps=[],
            schedules=[DeploymentScheduleCreate(schedule=CronSchedule(cron=c, timezone=tz), active=True)
                       for c, tz in wanted_schedules],
        )
        return Change("deployment", spec.full_name, "created"), deployment_id
    have_schedules = sorted((s.schedule.cron, s.schedule.timezone) for s in existing.schedules
                            if isinstance(s.schedule, CronSchedule) and s.active)
    same = (existing.entrypoint == spec.entrypoint and existing.work_pool_name == spec.pool
            and (existing.description or "") == spec.description and existing.parameters == spec.parameters
            and existing.parameter_openapi_schema == schema and sorted(existing.tags) == ["assay"]
            and have_schedules == sorted(wanted_schedules) and len(existing.schedules) == len(wanted_schedules)
            and existing.enforce_parameter_schema)
    if same:
        return Change("deployment", spec.full_name, "unchanged"), existing.id
    if not dry_run:
        client.update_deployment(existing.id, DeploymentUpdate(
            entrypoint=spec.entrypoint, work_pool_name=spec.pool, description=spec.description,
            parameters=spec.parameters, parameter_openapi_schema=schema, enforce_parameter_schema=True,
            tags=["assay"]))
        if have_schedules != sorted(wanted_schedules) or len(existing.schedules) != len(wanted_schedules):
            for schedule in existing.schedules:
                client.delete_deployment_schedule(existing.id, schedule.id)
            if wanted_schedules:
                client.create_deployment_schedules(existing.id, [
                    DeploymentScheduleCreate(schedule=CronSchedule(cron=c, timezone=tz), active=True)
                    for c, tz in wanted_schedules])
    return Change("deployment", spec.full_name, "updated"), existing.id


def _comparable(automation: Any) -> dict[str, Any]:
    data = AutomationCore.model_validate(automation.model_dump()).model_dump(mode="json")
    return _drop_ids(data)


def _drop_ids(value: Any) -> Any:
    """``value`` without server-assigned ``id`` fields, and with lists of plain values sorted: a
    trigger's ``expect``/``after`` are sets, serialised in an order that varies between processes."""
    if isinstance(value, dict):
        return {k: _drop_ids(v) for k, v in value.items() if k != "id"}
    if isinstance(value, list):
        items = [_drop_ids(v) for v in value]
        return sorted(items) if all(isinstance(v, str | int | float) for v in items) else items
    return value


def _apply_automation(client: SyncPrefectClient, automation: AutomationCore, dry_run: bool) -> Change:
    existing = client.read_automations_by_name(automation.name)
    if not existing:
        if not dry_run:
            client.create_automation(automation)
        return Change("automation", automation.name, "created")
    first, extra = existing[0], existing[1:]
    if not extra and _comparable(first) == _comparable(automation):
        return Change("automation", automation.name, "unchanged")
    if not dry_run:
        for duplicate in extra:
            client.delete_automation(duplicate.id)
        client.update_automation(first.id, automation)
    return Change("automation", automation.name, "updated")
