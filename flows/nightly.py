"""The ``nightly`` flow: discover new checkpoints, evaluate each on every dataset of a suite exactly
once, flag regressions against the team's best, and write the report.

One sweep:

1. **Reconcile.** Ledger rows still ``running`` whose Prefect flow run has ended without completing
   them (Crashed, Failed, Cancelled, or gone) are marked ``crashed``, so they can be retried. A run
   whose process was killed is marked Crashed by the zombie automation that ``assay deploy``
   installs (heartbeats stop: Prefect's "detect zombie flows").
2. **Discover.** Watched folders are scanned (complete checkpoint folders are registered), then the
   ledger lists the pending work items: registered checkpoint x suite dataset, not yet completed,
   crashed ones up to the attempt limit.
3. **Fan out.** With the team's deployments in place, one ``evaluate-checkpoint`` flow run per item on
   the ``gpu`` pool (``run_deployment``, with an idempotency key per item and attempt, so two
   sweeps never dispatch the same attempt twice); without them (a single user), the same flow runs
   here as a subflow. Each item claims its ledger row first: exactly once.
4. **Retry.** Items whose run crashed are reconciled and dispatched again while attempts remain.
5. **Compare and report.** Each newly evaluated checkpoint is compared with the team's current best
   (:mod:`assay.nightly.regressions`: a paired significance test; on MQM entries with `errors` also per
   error category, :mod:`assay.nightly.blindness`); regressions are recorded; the report is
   written.

A sweep with nothing new does steps 1-2 and stops: no flow runs, no report.
"""

from __future__ import annotations

import time
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.deployments import run_deployment
from prefect.exceptions import MissingContextError, ObjectNotFound

from assay.checkpoints.registry import resolve_checkpoint
from assay.config import load_settings
from assay.flows.hooks import install_flow_hooks
from assay.flows.retry_policy import RETRY_TRANSIENT
from assay.nightly import ledger as ledger
from assay.nightly.defaults import SETTLE_SECONDS, SHARD_SIZE
from assay.nightly.suites import DEFAULT_SUITE, get_suite

#: the deployment ``assay deploy`` creates for one work item
EVALUATE_DEPLOYMENT = "evaluate-checkpoint/evaluate-checkpoint"
#: how often a sweep polls its dispatched runs (seconds)
POLL_SECONDS = 3.0
#: flow-run states after which a ``running`` ledger row has no live owner
_ENDED = {StateType.CRASHED, StateType.FAILED, StateType.CANCELLED, StateType.COMPLETED}


@task(name="reconcile-ledger", **RETRY_TRANSIENT)
def reconcile_task() -> list[dict[str, Any]]:
    """Mark ``crashed`` every running ledger row whose flow run has ended (or vanished)."""
    settings = load_settings()
    marked = []
    with get_client(sync_client=True) as client:
        for row in ledger.running_items(settings):
            run_id = row.get("flow_run_id")
            if not run_id:
                continue
            try:
                state = client.read_flow_run(run_id).state
            except ObjectNotFound:
                state = None
            if state is not None and state.type not in _ENDED:
                continue
            reason = (f"its flow run {run_id} ended {state.name if state else 'without a trace'} "
                      "before completing the item")
            if ledger.mark_crashed(settings, row["id"], reason, attempts=row.get("attempts")):
                marked.append({"id": row["id"], "flow_run_id": run_id, "state": state.name if state else None})
    return marked


@task(name="scan-watched-folders", **RETRY_TRANSIENT)
def scan_task(settle_seconds: float) -> dict[str, Any]:
    """Register the complete checkpoint folders in the watched folders; every entry, and why it
    was skipped, goes to the run's log (the flow run's logs in the UI and `prefect flow-run logs`)."""
    from assay.workers.checkpoint_watch import scan_watched

    try:
        logger = get_run_logger()
    except MissingContextError:  # called in-process, outside a run: the scan's own logger
        logger = None
    return scan_watched(load_settings(), settle_seconds=settle_seconds, logger=logger).as_dict()


@task(name="deliver-announcements", **RETRY_TRANSIENT)
def announce_task() -> dict[str, Any]:
    """Deliver the owed ``assay.checkpoint.registered`` events (:mod:`assay.flows.events`); without
    a team server to announce to, the sweep settles them itself: it evaluates those checkpoints now."""
    from assay.checkpoints import outbox
    from assay.flows.events import deliver_owed

    settings = load_settings()
    delivery = deliver_owed()
    settled = 0
    if delivery.api_url is None:
        settled = outbox.mark_delivered(settings, [o.digest for o in outbox.owed(settings)], by="sweep")
    warning = delivery.warning()
    if warning is not None:
        get_run_logger().warning("%s", warning)
    return {"delivered": delivery.delivered, "failed": delivery.failed, "settled_by_sweep": settled}


@task(name="plan-sweep", **RETRY_TRANSIENT)
def plan_task(suite: str, checkpoint: str | None) -> list[dict[str, Any]]:
    settings = load_settings()
    items = ledger.pending_items(settings, get_suite(settings, suite))
    if checkpoint:  # a name, a digest prefix or the event resource, resolved as everywhere (registry.find)
        wanted = resolve_checkpoint(settings, checkpoint)
        items = [i for i in items if i.checkpoint.digest == wanted.digest]
    claimed_before = ledger.attempts_by_key(settings, [i.key for i in items])
    return [{**i.as_dict(), "attempts": claimed_before.get(i.key, 0)} for i in items]


@task(name="compare-with-team-best", **RETRY_TRANSIENT)
def compare_task(checkpoint_digest: str, suite: str) -> list[dict[str, Any]]:
    from assay.nightly import blindness, regressions

    settings = load_settings()
    resolved = get_suite(settings, suite)
    findings = regressions.compare_with_best(settings, checkpoint_digest=checkpoint_digest,
                                             suite_signature=resolved.signature, entries=resolved.entries)
    findings += blindness.blindness_findings(settings, checkpoint_digest=checkpoint_digest,
                                             suite_signature=resolved.signature, entries=resolved.entries)
    regressions.record(settings, findings, suite_signature=resolved.signature, run_id=None)
    return [f.as_dict() for f in findings if f.regression]


@task(name="write-report", **RETRY_TRANSIENT)
def report_task(out_dir: str | None) -> str:
    from pathlib import Path

    from assay.report import build_report

    return str(build_report(Path(out_dir) if out_dir else load_settings().report_dir))


def _deployment_exists(name: str) -> bool:
    with get_client(sync_client=True) as client:
        try:
            client.read_deployment_by_name(name)
        except ObjectNotFound:
            return False
    return True


def _idempotency_key(item: dict[str, Any]) -> str:
    return "assay-evaluate:{}:{}:{}:attempt{}".format(item["checkpoint"]["digest"][:24], item["version"]["digest"][:24],
                                                      item["suite_signature"][:24], item.get("attempts", 0) + 1)


def _dispatch(items: list[dict[str, Any]], shard_size: int) -> list[dict[str, Any]]:
    """Run every item (one flow run each, on the gpu pool when deployed) and wait for them all."""
    logger = get_run_logger()
    if not _deployment_exists(EVALUATE_DEPLOYMENT):
        from assay.flows.checkpoint_eval import evaluate_checkpoint_flow

        logger.info("no %s deployment: evaluating %d item(s) in this process", EVALUATE_DEPLOYMENT, len(items))
        return [evaluate_checkpoint_flow(item, shard_size=shard_size) for item in items]
    runs: list[FlowRun] = [
        run_deployment(EVALUATE_DEPLOYMENT, parameters={"item": item, "shard_size": shard_size}, timeout=0,
                       idempotency_key=_idempotency_key(item))  # type: ignore[misc]  # sync call: a FlowRun
        for item in items]
    logger.info("dispatched %d evaluate-checkpoint run(s)", len(runs))
    pending = {run.id: item for run, item in zip(runs, items, strict=True)}
    outcomes: list[dict[str, Any]] = []
    with get_client(sync_client=True) as client:
        while pending:
            time.sleep(POLL_SECONDS)
            for run_id in list(pending):
                state = client.read_flow_run(run_id).state
                if state is not None and state.is_final():
                    item = pending.pop(run_id)
                    outcomes.append({"flow_run_id": str(run_id), "state": state.name,
                                     "checkpoint_digest": item["checkpoint"]["digest"],
                                     "dataset": item["version"]["label"]})
    return outcomes


@flow(name="nightly", on_running=[install_flow_hooks])
def nightly_flow(suite: str = DEFAULT_SUITE, checkpoint: str | None = None, reason: str = "schedule",
                 scan: bool = True, settle_seconds: float = SETTLE_SECONDS, max_rounds: int = 3,
                 shard_size: int = SHARD_SIZE, report: bool = True, report_dir: str | None = None) -> dict[str, Any]:
    """One sweep (see the module doc). ``checkpoint``: only this checkpoint (a digest, a digest
    prefix, a name or the event resource ``assay.checkpoint.<digest>``; the event trigger passes
    it). ``reason`` is recorded in the result (schedule, event, retry or manual)."""
    logger = get_run_logger()
    reconciled = reconcile_task()
    scanned = scan_task(settle_seconds) if scan and not checkpoint else {"registered": [], "known": [], "skipped": []}
    announced = announce_task()  # owed events; the checkpoints are planned below whatever their fate
    outcomes: list[dict[str, Any]] = []
    dispatched = 0
    for _ in range(max_rounds):
        items = plan_task(suite, checkpoint)
        if not items:
            break
        dispatched += len(items)
        outcomes += _dispatch(items, shard_size)
        reconciled += reconcile_task()
        if all(o.get("state") in (None, "Completed") for o in outcomes[-len(items):]):
            break
    evaluated = sorted({o["checkpoint_digest"] for o in outcomes if o.get("state", "Completed") == "Completed"
                        and o.get("status", "completed") == "completed"})
    regressions = [r for digest in evaluated for r in compare_task(digest, suite)]
    written = report_task(report_dir) if report and evaluated else None
    logger.info("nightly (%s): %d item(s) dispatched, %d checkpoint(s) evaluated, %d regression(s)",
                reason, dispatched, len(evaluated), len(regressions))
    return {"reason": reason, "suite": suite, "reconciled": reconciled, "scanned": scanned, "announced": announced,
            "dispatched": dispatched, "outcomes": outcomes, "evaluated": evaluated,
            "regressions": regressions, "report": written}
