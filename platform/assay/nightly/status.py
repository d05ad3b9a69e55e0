"""Where every nightly evaluation stands: owed, pending, running, crashed, failed or completed.

``assay nightly status`` reads it. A work item (a registered checkpoint on one dataset version of
the suite, :class:`assay.nightly.ledger.WorkItem`) is in exactly one state:

``owed``
    registered, no ledger row yet, and its announcement (``assay.checkpoint.registered``) has not
    reached the team's server (:mod:`assay.checkpoints.outbox`): no event will wake an evaluation,
    the next sweep (``assay nightly run``, or the 02:00 schedule) will;
``pending``
    registered and announced (or announcing is not needed), no ledger row yet: the event's
    evaluation or the next sweep will take it;
``running``, ``crashed``, ``failed``, ``completed``
    the ledger row's status (:mod:`assay.nightly.ledger`). A crashed row is retried by the next
    sweep while it has attempts left.

Each item carries its age: since registration for owed and pending, since the claim for running,
since it ended for the rest. Items of the suite's older versions are counted under their status too
(by signature), so nothing the ledger holds is hidden.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint, SuiteEvaluation
from assay.checkpoints import outbox
from assay.config import Settings
from assay.nightly import ledger
from assay.nightly.suites import Suite

__all__ = ["STATES", "NightlyStatus", "nightly_status"]

STATES = ("owed", "pending", "running", "crashed", "failed", "completed")


@dataclass
class NightlyStatus:
    """Every item by state (oldest first), the suite it was computed for, and the announcements
    still owed by checkpoints outside any suite item."""

    suite: str | None
    """``name@version`` of the suite whose pending items are listed (None: no such suite)."""
    items: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {s: [] for s in STATES})
    owed_announcements: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {state: len(self.items[state]) for state in STATES}

    def oldest_age_s(self) -> dict[str, float | None]:
        return {state: max((i["age_s"] for i in self.items[state]), default=None) for state in STATES}

    def as_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "counts": self.counts(), "oldest_age_s": self.oldest_age_s(),
                **{state: self.items[state] for state in STATES},
                "owed_announcements": self.owed_announcements}


def _age(now: datetime, since: datetime | None) -> float:
    if since is None:
        return 0.0
    since = since if since.tzinfo else since.replace(tzinfo=UTC)
    return max(0.0, round((now - since).total_seconds(), 1))


def nightly_status(settings: Settings, suite: Suite | None, *, suite_name: str | None = None) -> NightlyStatus:
    """The state of every item of ``suite`` (its latest version: owed and pending) and of every
    ledger row (of the versions of ``suite_name``, else of all suites)."""
    now = datetime.now(UTC)
    status = NightlyStatus(suite.ref if suite is not None else None)
    owed = {o.digest: o for o in outbox.owed(settings)}
    if suite is not None:
        with session_scope(settings) as session:
            rows = set(session.execute(select(SuiteEvaluation.checkpoint_digest, SuiteEvaluation.dataset_digest)
                                       .where(SuiteEvaluation.suite_signature == suite.signature)).tuples())
            registered_at = dict(session.execute(select(Checkpoint.digest, Checkpoint.created_at)).tuples().all())
        for item in ledger.pending_items(settings, suite):
            digest = item.checkpoint.digest
            if (digest, item.version.digest) in rows:
                continue  # a crashed row with attempts left: listed under crashed below
            registered = registered_at.get(digest)
            state = "owed" if digest in owed else "pending"
            entry = {"checkpoint_name": item.checkpoint.name, "checkpoint_digest": digest,
                     "dataset": item.version.label, "suite": f"{item.suite_name}@{item.suite_version}",
                     "since": registered.isoformat() if registered else None, "age_s": _age(now, registered)}
            if state == "owed":
                entry.update(attempts=owed[digest].attempts, error=owed[digest].last_error)
            status.items[state].append(entry)
    for row in _ledger_rows(settings, suite_name):
        since = row.pop("_since")
        status.items[row["status"]].append({**row, "since": since.isoformat() if since else None,
                                            "age_s": _age(now, since)})
    in_items = {i["checkpoint_digest"] for i in status.items["owed"]}
    status.owed_announcements = [
        {"checkpoint_name": o.name, "checkpoint_digest": o.digest, "since": o.registered_at.isoformat(),
         "age_s": _age(now, o.registered_at), "attempts": o.attempts, "error": o.last_error}
        for o in owed.values() if o.digest not in in_items]
    for state in STATES:
        status.items[state].sort(key=lambda i: -i["age_s"])
    return status


def _ledger_rows(settings: Settings, suite_name: str | None) -> list[dict[str, Any]]:
    """Every ledger row (of ``suite_name``'s versions) as a status item, with the time its age counts from."""
    out = []
    for row in ledger.history(settings, suite_name, statuses=ledger.STATUSES):
        stamp = row["claimed_at"] if row["status"] == "running" else (row["finished_at"] or row["claimed_at"])
        out.append({key: row[key] for key in ("status", "id", "checkpoint_name", "checkpoint_digest", "dataset",
                                              "attempts", "flow_run_id", "evaluate_run_id", "score_run_id",
                                              "error", "summary")}
                   | {"suite": f"{row['suite_name']}@{row['suite_version']}",
                      "_since": datetime.fromisoformat(stamp) if stamp else None})
    return out
