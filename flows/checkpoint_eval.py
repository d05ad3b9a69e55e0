"""The ``evaluate-checkpoint`` flow: one (checkpoint, suite dataset) of the nightly evaluation,
exactly once.

One flow run per work item (a checkpoint digest x a dataset version x a suite signature, see
:class:`assay.nightly.ledger.WorkItem`), dispatched by the ``nightly`` flow to the ``gpu`` work
pool. The run first claims the item in the catalog's ledger; a claim that fails (the item is
completed, failed on bad input, or running elsewhere) ends the run at once with nothing done. Then
it scores the dataset with the checkpoint (the ``score`` flow: its parts are resumable, so a retry
after a crash computes only what the killed run had not written), evaluates the suite's levels and
statistics for that checkpoint's signature (an entry with ``protocol`` is one evaluation under that
protocol, e.g. WMT24's SPA, acc-t and their mean), runs the error analysis where the entry asks for
it (``errors``: what the checkpoint misses on MQM data, ``assay errors``, diffed against its
registered parent checkpoint when the parent was scored on the same data), and completes the ledger
row.

A crash (the process killed, the host lost) leaves the row ``running``; the nightly sweep's
reconciler (:func:`assay.flows.nightly.reconcile_task`) asks Prefect about its flow run, marks it
``crashed`` and dispatches it again, up to the ledger's attempt limit. Bad input fails the row for
good: a retry would fail the same way.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.runtime import flow_run

from assay.config import load_settings
from assay.errors import AssayError
from assay.flows.hooks import install_flow_hooks
from assay.flows.retry_policy import RETRY_TRANSIENT
from assay.nightly import ledger as ledger
from assay.nightly.defaults import SHARD_SIZE
from assay.nightly.suites import get_suite
from assay.provenance import short
from assay.results.correlations import mean_else_each_group


def checkpoint_metric(item: ledger.WorkItem) -> dict[str, Any]:
    """The metric spec that scores with the item's checkpoint (the BLEURT-style metric), by digest:
    the worker resolves it to the registered folder and verifies the folder once."""
    return {"name": "bleurt", "params": {"checkpoint": item.checkpoint.digest}}


def check_scored_digest(item: ledger.WorkItem, scored: dict[str, Any]) -> None:
    """The scores must be the ledger key's checkpoint's: the scoring summary's ``checkpoint_digest``
    (what its metric scored with, recorded on every stored score) is the item's."""
    if scored.get("checkpoint_digest") != item.checkpoint.digest:
        raise AssayError(f"checkpoint {item.checkpoint}: the scores are checkpoint {scored.get('checkpoint_digest')}'s "
                         f"({scored['signature']}), the ledger's key is {item.checkpoint.digest}")


@task(name="claim-work-item", task_run_name="claim {item[checkpoint][label]} on {item[version][label]}",
      **RETRY_TRANSIENT)
def claim_task(item: dict[str, Any], flow_run_id: str | None) -> dict[str, Any] | None:
    claim = ledger.claim(load_settings(), ledger.WorkItem.from_dict(item), flow_run_id=flow_run_id)
    return None if claim is None else claim.as_dict()


def summary_correlations(rows: list[dict[str, Any]], limit: int = 200) -> list[dict[str, Any]]:
    """The correlations a ledger summary keeps: the mean over groups (``all``) of every level,
    aspect and statistic, or every group where an evaluation has no mean (one language pair)."""
    kept = mean_else_each_group(rows, ("level", "aspect", "statistic"))
    return [{k: r[k] for k in ("level", "group", "aspect", "statistic", "value")} for r in kept][:limit]


@task(name="evaluate-suite-entry", task_run_name="evaluate {dataset} {level}", **RETRY_TRANSIENT)
def evaluate_entry_task(dataset: str, level: str, signature: str, statistics: list[str],
                        exclude_groups: list[str], protocol: str | None = None) -> dict[str, Any]:
    from assay.jobs.evaluation import evaluate

    result = evaluate(dataset, level=level, metrics=[signature], statistics=statistics,
                      exclude_groups=exclude_groups, protocol=protocol)
    return {"run_id": result["run_id"], "level": result["level"], "rows": len(result["rows"]),
            "correlations": summary_correlations(result["rows"])}


@task(name="analyse-errors", task_run_name="errors {dataset}", **RETRY_TRANSIENT)
def analyse_errors_task(dataset: str, signature: str) -> dict[str, Any]:
    from assay.jobs.error_analysis import analyse_errors, registered_parent

    parent = registered_parent(load_settings(), dataset, signature)  # diffed against it when it was scored here
    result = analyse_errors(dataset, signature, parent=parent)
    return {"run_id": result["run_id"], "level": "errors", "parent_signature": parent,
            "blind_spots": result["sensitivity"]["blind_spots"][:5]}


@task(name="complete-work-item", **RETRY_TRANSIENT)
def complete_task(claim: dict[str, Any], score_run_id: str | None, evaluate_run_ids: list[str],
                  summary: dict[str, Any]) -> None:
    ledger.complete(load_settings(), ledger.Claim.from_dict(claim), score_run_id=score_run_id,
                    evaluate_run_id=evaluate_run_ids[0] if evaluate_run_ids else None, summary=summary)


@task(name="fail-work-item", **RETRY_TRANSIENT)
def fail_task(claim: dict[str, Any], error: str) -> None:
    ledger.fail(load_settings(), ledger.Claim.from_dict(claim), error)


@flow(name="evaluate-checkpoint", on_running=[install_flow_hooks],
      flow_run_name="evaluate {item[checkpoint][label]} on {item[version][label]}")
def evaluate_checkpoint_flow(item: dict[str, Any], shard_size: int = SHARD_SIZE) -> dict[str, Any]:
    """Score and evaluate one work item unless it is already done or taken; returns what happened."""
    from assay.flows.score import score_flow

    work = ledger.WorkItem.from_dict(item)
    claim = claim_task(item, str(flow_run.id) if flow_run.id else None)
    if claim is None:
        return {"status": "skipped", "reason": "completed, failed or running elsewhere", **_key(work)}
    suite = get_suite(load_settings(), f"{work.suite_name}@{work.suite_version}")
    entry = next((e for e in suite.entries if e.version.digest == work.version.digest), None)
    try:
        if entry is None:
            raise AssayError(f"suite {suite.name}@{suite.version} has no dataset with digest "
                             f"{short(work.version.digest)}")
        scored = score_flow(work.version.label, checkpoint_metric(work), shard_size=shard_size, progress=False)
        check_scored_digest(work, scored)
        # groups outside the checkpoint's languages were not scored (the score summary says which):
        # they are left out of its evaluation, as `assay evaluate --exclude-group` would
        excluded = sorted(set(entry.exclude_groups) | set(scored.get("excluded_groups") or {}))
        if entry.protocol is not None:  # one evaluation under the protocol covers all its levels
            evaluated = [evaluate_entry_task(work.version.label, entry.protocol, scored["signature"],
                                             list(entry.statistics), excluded, protocol=entry.protocol)]
        else:
            evaluated = [evaluate_entry_task(work.version.label, level, scored["signature"],
                                             list(entry.statistics_for(level)), excluded)
                         for level in entry.levels if entry.statistics_for(level)]
        analysed = analyse_errors_task(work.version.label, scored["signature"]) if entry.errors else None
    except AssayError as exc:  # bad input: failed for good (a crash never gets here)
        fail_task(claim, f"{type(exc).__name__}: {exc}")
        raise
    summary = {"signature": scored["signature"], "computed": scored.get("computed", 0), "excluded_groups": excluded,
               "cached": scored.get("cached", 0), "evaluations": evaluated,
               **({"errors": analysed} if analysed is not None else {})}
    complete_task(claim, scored.get("run_id"), [e["run_id"] for e in evaluated], summary)
    return {"status": "completed", **_key(work), "signature": scored["signature"],
            "computed": summary["computed"], "cached": summary["cached"]}


def _key(work: ledger.WorkItem) -> dict[str, Any]:
    return {"checkpoint": work.checkpoint.name, "checkpoint_digest": work.checkpoint.digest,
            "dataset": work.version.label, "suite": f"{work.suite_name}@{work.suite_version}"}
