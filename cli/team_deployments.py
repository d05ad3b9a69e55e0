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

Nothing is written until everything is checked (:func:`problems`): the settings themselves (a
five-field cron, an IANA time zone, the numbers), the suite (it must exist in the catalog, or the
first nightly run fails with ``SuiteNotFound`` hours later), and what the server already holds (a
``cpu`` or ``gpu`` pool of a type other than ``process`` cannot be changed into one). Every problem
found is reported at once (:class:`~assay.errors.DeployRefused`). A dry run does the same reads and
writes nothing, on an empty server too.
"""

from __future__ import annotations

import uuid
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.actions import DeploymentScheduleCreate, DeploymentUpdate, WorkPoolCreate, WorkPoolUpdate
from prefect.client.schemas.objects import StateType, WorkPool
from prefect.client.schemas.schedules import CronSchedule
from prefect.events.actions import ChangeFlowRunState, RunDeployment
from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture
from prefect.exceptions import ObjectNotFound

from assay.checkpoints.ref import RESOURCE_PREFIX
from assay.config import Settings, load_settings
from assay.errors import CatalogError, DeployRefused, SuiteNotFound, UsageError
from assay.flows.events import CHECKPOINT_REGISTERED
from assay.nightly.defaults import SETTLE_SECONDS, SHARD_SIZE

HEARTBEAT_SECONDS = 30
"""``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` of the flow runs (Prefect's minimum is 30)."""
AUTOMATION_PREFIX = "assay: "
CRON_FIELDS = "minute hour day-of-month month day-of-week"
NOT_CREATED_YET = uuid.UUID(int=0)
"""The id a dry run gives a deployment it would create, so that the automations that run it can be
planned (and compared with any the server holds, which necessarily differ)."""


@dataclass(frozen=True)
class TeamConfig:
    """The knobs of ``assay deploy``."""

    timezone: str = "UTC"
    nightly_cron: str = "0 2 * * *"
    gpus: int = 1
    suite: str = "nightly"
    debounce_seconds: int = 60
    zombie_after_seconds: int = 90
    settle_seconds: float = SETTLE_SECONDS
    shard_size: int = SHARD_SIZE
    report_dir: str | None = None

    def problems(self) -> list[str]:
        """What is wrong with the settings themselves (no catalog or server is read), one line each."""
        found = []
        if not _is_time_zone(self.timezone):
            found.append(f"--timezone {self.timezone!r} is not an IANA time zone (e.g. Europe/Berlin, UTC)")
        if not _is_cron(self.nightly_cron):
            found.append(f"--cron {self.nightly_cron!r} is not a cron expression of five fields ({CRON_FIELDS}), "
                         "e.g. '0 2 * * *'")
        if self.gpus < 1:
            found.append(f"--gpus must be at least 1, got {self.gpus}")
        if self.shard_size < 1:
            found.append(f"--shard-size must be at least 1, got {self.shard_size}")
        if self.debounce_seconds < 0:
            found.append("--debounce must not be negative")
        if self.zombie_after_seconds < 2 * HEARTBEAT_SECONDS:
            found.append(f"--zombie-after must be at least {2 * HEARTBEAT_SECONDS} s (two heartbeats of "
                         f"{HEARTBEAT_SECONDS} s), got {self.zombie_after_seconds}")
        from assay.nightly.suites import validate_suite_name

        try:
            validate_suite_name(self.suite)
        except UsageError as exc:
            found.append(str(exc))
        return found


def _is_time_zone(name: str) -> bool:
    """An IANA time zone that both the standard library and Prefect's schedules accept."""
    try:
        zoneinfo.ZoneInfo(name)
        CronSchedule(cron="0 0 * * *", timezone=name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


def _is_cron(expression: str) -> bool:
    """Five fields (or a nickname such as ``@daily``) that Prefect's schedule accepts. Prefect's
    croniter also takes a sixth field, as seconds: ``0 2 * * * *`` would start a sweep every second
    of 02:00, never what a team means."""
    if not expression.startswith("@") and len(expression.split()) != 5:
        return False
    try:
        CronSchedule(cron=expression, timezone="UTC")
    except ValueError:
        return False
    return True


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
    nightly_parameters = {"suite": config.suite, "reason": "schedule", "settle_seconds": config.settle_seconds,
                          "shard_size": config.shard_size}
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


# --- checks -----------------------------------------------------------------------------------


def catalog_problems(config: TeamConfig, settings: Settings) -> list[str]:
    """The suite must exist in the catalog the nightly runs read (else the first run fails with
    ``SuiteNotFound``); an unusable catalog is a problem too."""
    from sqlalchemy import make_url

    from assay.nightly.suites import get_suite, validate_suite_name

    try:
        validate_suite_name(config.suite)
    except UsageError:
        return []  # reported by TeamConfig.problems
    try:
        get_suite(settings, config.suite)
    except SuiteNotFound as exc:
        shown = make_url(settings.catalog_url).render_as_string(hide_password=True)
        return [f"--suite {config.suite!r}: {exc}; catalog {shown}"]
    except CatalogError as exc:
        return [str(exc)]
    return []


def server_problems(client: SyncPrefectClient, config: TeamConfig) -> list[str]:
    """What the server already holds that ``assay deploy`` cannot change: a ``cpu`` or ``gpu`` pool
    of another type (a pool's type is fixed when it is created). A server that cannot be read is a
    problem too."""
    found = []
    for pool in pool_specs(config):
        try:
            existing = client.read_work_pool(pool["name"])
        except ObjectNotFound:
            continue
        except httpx.HTTPError as exc:
            return [_unreadable(exc)]
        problem = _pool_problem(existing, pool)
        if problem:
            found.append(problem)
    return found


def _unreadable(exc: httpx.HTTPError) -> str:
    """One line for a server that did not answer, or refused (without the URL httpx puts in a
    status error's message: a URL may carry credentials)."""
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        hint = ": set PREFECT_API_AUTH_STRING to the server's auth string (docs/TEAM.md)" if status == 401 else ""
        return f"the Prefect server answered {status} {exc.response.reason_phrase}{hint}"
    return f"the Prefect server cannot be reached ({type(exc).__name__}: {exc}); is PREFECT_API_URL right?"


def _pool_problem(existing: WorkPool, pool: dict[str, Any]) -> str | None:
    if existing.type != pool["type"]:
        return (f"work pool {pool['name']!r} exists with type {existing.type!r}, not {pool['type']!r}: "
                "a pool's type cannot be changed; delete it (`prefect work-pool delete "
                f"{pool['name']}`) or use another server")
    return None


def problems(config: TeamConfig, client: SyncPrefectClient, settings: Settings) -> list[str]:
    """Every problem with ``config``, against the catalog and the server, one line each."""
    return config.problems() + catalog_problems(config, settings) + server_problems(client, config)


# --- apply ------------------------------------------------------------------------------------


def apply(config: TeamConfig, *, dry_run: bool = False, settings: Settings | None = None) -> list[Change]:
    """Make the server hold the team setup; returns what was created, updated or left unchanged
    (with ``dry_run``, what would be, and nothing is written). Raises
    :class:`~assay.errors.DeployRefused`, before writing anything, when :func:`problems` finds any."""
    with get_client(sync_client=True) as client:
        # a Prefect API that lets us in, before anything is read: on a wrong path every read would
        # answer "not found" (a dead, refusing or misplaced server is a service failure: exit 3)
        client.api_version()
        found = problems(config, client, settings or load_settings())
        if found:
            raise DeployRefused(found)
        changes: list[Change] = []
        for pool in pool_specs(config):
            changes.append(_apply_pool(client, pool, dry_run))
        ids: dict[str, Any] = {}
        for spec in deployment_specs(config):
            change, ids[spec.name] = _apply_deployment(client, spec, config, dry_run)
            changes.append(change)
        for automation in automation_specs(config, ids):
            changes.append(_apply_automation(client, automation, dry_run))
    return changes


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
    problem = _pool_problem(existing, pool)
    if problem:  # checked before anything was written: the pool was replaced since
        raise UsageError(problem)
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
            return Change("deployment", spec.full_name, "created"), NOT_CREATED_YET
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
