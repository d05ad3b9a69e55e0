"""The nightly ledger: each (checkpoint, dataset version, suite) is evaluated exactly once.

The unit of nightly work is a :class:`WorkItem`: one registered checkpoint on one entry (dataset
version) of a suite (:mod:`assay.nightly.suites`). Its key is (checkpoint digest, dataset version digest,
suite signature), the unique constraint of the catalog table ``suite_evaluations``, so the same
content is never evaluated twice, whatever the names, whichever process asks and however often
the nightly flow is triggered (by an event and by the cron sweep that catches what it missed).

A row's ``status`` moves::

    (absent) --claim--> running --complete--> completed
                           |  \\--fail------> failed     (bad input: not retried)
                           \\--mark_crashed--> crashed --claim (attempts < max)--> running

Claiming is atomic on SQLite and PostgreSQL alike, with no read-then-write race: a first claim
is an INSERT that the unique constraint lets only one process win (the others get an
``IntegrityError``); a re-claim of a crashed row is ``UPDATE ... WHERE status = 'crashed' AND
attempts < max``, which only one process can see succeed (its row count is 1; PostgreSQL
re-checks the condition after waiting for a concurrent writer's lock, SQLite serialises writers).
A claim is identified by the row id and its attempt number: completing or failing it updates the
row only while that attempt holds it, so a process that lost its claim can never overwrite the
outcome of a later attempt. ``crashed`` is set by a reconciler in the flow layer that asks Prefect
whether the flow run holding a ``running`` row died (Prefect's heartbeats and its Crashed state:
https://docs.prefect.io/v3/concepts/states).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint, Dataset, DatasetVersion, SuiteEvaluation, utcnow
from assay.catalog.models import Suite as SuiteRow
from assay.checkpoints.ref import CheckpointRef
from assay.config import Settings
from assay.datasets.names import VersionRef
from assay.errors import UsageError
from assay.nightly.suites import Suite

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "STATUSES",
    "Claim",
    "WorkItem",
    "attempts_by_key",
    "claim",
    "complete",
    "counts",
    "fail",
    "history",
    "mark_crashed",
    "pending_items",
    "running_items",
]

STATUSES = ("running", "completed", "failed", "crashed")
DEFAULT_MAX_ATTEMPTS = 3
"""A crashed item is claimed again until it has been claimed this many times."""
MAX_ERROR_CHARS = 4000


@dataclass(frozen=True)
class WorkItem:
    """One checkpoint on one suite entry; plain JSON fields, so it travels as a flow parameter."""

    checkpoint: CheckpointRef
    """What the worker scores: it resolves the digest to the registered folder and verifies it."""
    version: VersionRef
    """The dataset version."""
    version_id: int
    """Its row id in the catalog (``dataset_versions.id``)."""
    suite_id: int
    suite_name: str
    suite_version: int
    suite_signature: str

    @property
    def key(self) -> tuple[str, str, str]:
        """The ledger key: (checkpoint digest, dataset version digest, suite signature)."""
        return self.checkpoint.digest, self.version.digest, self.suite_signature

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON: the fields, ``checkpoint`` as :meth:`CheckpointRef.as_dict` and ``version`` as
        :meth:`VersionRef.as_dict`."""
        return {**asdict(self), "checkpoint": self.checkpoint.as_dict(), "version": self.version.as_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkItem:
        names = set(cls.__dataclass_fields__)
        missing = sorted(names - set(data))
        if missing:
            raise UsageError(f"a work item needs the field(s) {missing}")
        fields = {k: data[k] for k in names}
        return cls(**{**fields, "checkpoint": CheckpointRef.from_dict(fields["checkpoint"]),
                      "version": VersionRef.from_dict(fields["version"])})


@dataclass(frozen=True)
class Claim:
    """A held ledger row: the holder (and only it) completes or fails it."""

    ledger_id: int
    attempts: int
    """This claim's attempt number (1 for the first claim)."""
    item: WorkItem
    flow_run_id: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"ledger_id": self.ledger_id, "attempts": self.attempts, "item": self.item.as_dict(),
                "flow_run_id": self.flow_run_id}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Claim:
        return cls(int(data["ledger_id"]), int(data["attempts"]), WorkItem.from_dict(data["item"]),
                   data.get("flow_run_id"))


def _key_filter(item: WorkItem) -> Any:
    return ((SuiteEvaluation.checkpoint_digest == item.checkpoint.digest)
            & (SuiteEvaluation.dataset_digest == item.version.digest)
            & (SuiteEvaluation.suite_signature == item.suite_signature))


def pending_items(settings: Settings, suite: Suite, *, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> list[WorkItem]:
    """Every registered checkpoint x every entry of ``suite`` still to do: no ledger row yet, or a
    ``crashed`` one claimed fewer than ``max_attempts`` times. Completed, failed (bad input) and
    running items are not. Ordered by checkpoint registration, then by the suite's entry order."""
    with session_scope(settings) as session:
        checkpoints = [row.ref for row in session.scalars(select(Checkpoint)
                                                         .order_by(Checkpoint.created_at, Checkpoint.id))]
        rows = session.execute(select(SuiteEvaluation.checkpoint_digest, SuiteEvaluation.dataset_digest,
                                      SuiteEvaluation.status, SuiteEvaluation.attempts)
                               .where(SuiteEvaluation.suite_signature == suite.signature))
        done = {(c, d) for c, d, status, attempts in rows
                if not (status == "crashed" and attempts < max_attempts)}
    return [WorkItem(checkpoint=checkpoint, version=entry.version, version_id=entry.version_id,
                     suite_id=suite.id, suite_name=suite.name, suite_version=suite.version,
                     suite_signature=suite.signature)
            for checkpoint in checkpoints for entry in suite.entries
            if (checkpoint.digest, entry.version.digest) not in done]


def attempts_by_key(settings: Settings, keys: Sequence[tuple[str, str, str]]) -> dict[tuple[str, str, str], int]:
    """How many times each ledger key (:attr:`WorkItem.key`) has been claimed so far; keys never
    claimed are absent. The next claim of a key is attempt ``attempts + 1`` (what an idempotency
    key for dispatching it can name)."""
    wanted = set(keys)
    if not wanted:
        return {}
    signatures = {k[2] for k in wanted}
    with session_scope(settings) as session:
        rows = session.execute(select(SuiteEvaluation.checkpoint_digest, SuiteEvaluation.dataset_digest,
                                      SuiteEvaluation.suite_signature, SuiteEvaluation.attempts)
                               .where(SuiteEvaluation.suite_signature.in_(signatures)))
        found = {(c, d, s): int(a) for c, d, s, a in rows}
    return {k: found[k] for k in wanted if k in found}


def claim(settings: Settings, item: WorkItem, *, flow_run_id: str | None,
          max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> Claim | None:
    """Take ``item`` for this process: insert it as ``running`` (attempt 1), or turn its ``crashed``
    row (claimed fewer than ``max_attempts`` times) back to ``running`` with one more attempt.
    None when another process holds it or it is finished (completed, failed, or out of attempts)."""
    now = utcnow()
    try:
        with session_scope(settings) as session:
            row = SuiteEvaluation(checkpoint_digest=item.checkpoint.digest, dataset_digest=item.version.digest,
                                  dataset_version_id=item.version_id, suite_id=item.suite_id,
                                  suite_signature=item.suite_signature, status="running", attempts=1,
                                  flow_run_id=flow_run_id, claimed_at=now, summary={})
            session.add(row)
            session.flush()
            return Claim(row.id, 1, item, flow_run_id)
    except IntegrityError as exc:  # the row exists (only a crashed one can be taken over), or a bad reference
        refused = exc
    with session_scope(settings) as session:
        result = session.execute(
            update(SuiteEvaluation)
            .where(_key_filter(item), SuiteEvaluation.status == "crashed", SuiteEvaluation.attempts < max_attempts)
            .values(status="running", attempts=SuiteEvaluation.attempts + 1, flow_run_id=flow_run_id,
                    claimed_at=now, finished_at=None)
            .execution_options(synchronize_session=False))
        if _rowcount(result) != 1:
            if session.scalar(select(SuiteEvaluation.id).where(_key_filter(item))) is None:
                raise UsageError(f"cannot claim {item.checkpoint} on {item.version.label}: the work item names a "
                                 f"dataset version or suite that is not in this catalog ({refused.orig})")
            return None
        ledger_id, attempts = session.execute(select(SuiteEvaluation.id, SuiteEvaluation.attempts)
                                              .where(_key_filter(item))).one()
        return Claim(ledger_id, attempts, item, flow_run_id)


def _rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


def _finish(settings: Settings, held: Claim, values: dict[str, Any]) -> bool:
    """Write the outcome of ``held`` while that attempt still holds the row: ``running``, or
    ``crashed`` by a reconciler that was wrong and no later attempt has taken it since."""
    with session_scope(settings) as session:
        result = session.execute(
            update(SuiteEvaluation)
            .where(SuiteEvaluation.id == held.ledger_id, SuiteEvaluation.attempts == held.attempts,
                   SuiteEvaluation.status.in_(("running", "crashed")))
            .values(finished_at=utcnow(), **values)
            .execution_options(synchronize_session=False))
        return _rowcount(result) == 1


def complete(settings: Settings, held: Claim, *, score_run_id: str | None, evaluate_run_id: str | None,
             summary: Mapping[str, Any]) -> bool:
    """Record ``held`` as completed with its score and evaluate runs and a JSON summary (e.g. the
    correlations per level and statistic). False when this claim no longer holds the row (a later
    attempt took it over): nothing is written then."""
    return _finish(settings, held, {"status": "completed", "score_run_id": score_run_id,
                                    "evaluate_run_id": evaluate_run_id, "summary": dict(summary), "error": None})


def fail(settings: Settings, held: Claim, error: str) -> bool:
    """Record ``held`` as failed for good (bad input: a broken checkpoint, data that cannot be
    scored); it is never retried. False when this claim no longer holds the row."""
    return _finish(settings, held, {"status": "failed", "error": str(error)[:MAX_ERROR_CHARS]})


def running_items(settings: Settings) -> list[dict[str, Any]]:
    """Every ``running`` row, for the reconciler: id, key, attempts, Prefect flow-run id, claim time."""
    with session_scope(settings) as session:
        rows = session.scalars(select(SuiteEvaluation).where(SuiteEvaluation.status == "running")
                               .order_by(SuiteEvaluation.claimed_at, SuiteEvaluation.id))
        return [{"id": r.id, "checkpoint_digest": r.checkpoint_digest, "dataset_digest": r.dataset_digest,
                 "dataset_version_id": r.dataset_version_id, "suite_id": r.suite_id,
                 "suite_signature": r.suite_signature, "attempts": r.attempts, "flow_run_id": r.flow_run_id,
                 "claimed_at": _iso(r.claimed_at)} for r in rows]


def mark_crashed(settings: Settings, ledger_id: int, reason: str, *, attempts: int | None = None) -> bool:
    """Turn running row ``ledger_id`` into ``crashed`` (its flow run died), so that a later claim
    retries it. Give the ``attempts`` the reconciler saw, so that a row re-claimed since is left
    alone. False when the row is not (or no longer) running."""
    conditions = [SuiteEvaluation.id == ledger_id, SuiteEvaluation.status == "running"]
    if attempts is not None:
        conditions.append(SuiteEvaluation.attempts == attempts)
    with session_scope(settings) as session:
        result = session.execute(
            update(SuiteEvaluation).where(*conditions)
            .values(status="crashed", error=str(reason)[:MAX_ERROR_CHARS], finished_at=utcnow())
            .execution_options(synchronize_session=False))
        return _rowcount(result) == 1


def _signatures_of(suite_name: str) -> Any:
    """The signatures of every version of ``suite_name``: a row belongs to a suite by its
    signature (the same definition under another name shares the work)."""
    return select(SuiteRow.signature).where(SuiteRow.name == suite_name)


def counts(settings: Settings, suite_name: str | None = None) -> dict[str, int]:
    """How many ledger rows are in each status (of one suite's versions, or all)."""
    query = select(SuiteEvaluation.status, func.count()).group_by(SuiteEvaluation.status)
    if suite_name is not None:
        query = query.where(SuiteEvaluation.suite_signature.in_(_signatures_of(suite_name)))
    with session_scope(settings) as session:
        found = {status: int(n) for status, n in session.execute(query)}
    return {status: found.get(status, 0) for status in STATUSES}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def history(settings: Settings, suite_name: str | None = None,
            statuses: Sequence[str] = ("completed",)) -> list[dict[str, Any]]:
    """Completed evaluations (or the rows in ``statuses``), oldest first (by ``finished_at``), with
    the checkpoint's name and lineage, the dataset version and the suite version: what "correlation
    over time" draws.

    With ``suite_name``, the rows of every version of that suite (by signature; ``suite_version``
    is its latest version with the row's signature); without, every row, named by the suite version
    that first claimed it."""
    query = (select(SuiteEvaluation, Checkpoint, DatasetVersion.number, Dataset.name, SuiteRow.name,
                    SuiteRow.version)
             .join(SuiteRow, SuiteRow.id == SuiteEvaluation.suite_id)
             .join(DatasetVersion, DatasetVersion.id == SuiteEvaluation.dataset_version_id)
             .join(Dataset, Dataset.id == DatasetVersion.dataset_id)
             .outerjoin(Checkpoint, Checkpoint.digest == SuiteEvaluation.checkpoint_digest)
             .where(SuiteEvaluation.status.in_(list(statuses)))
             .order_by(SuiteEvaluation.finished_at, SuiteEvaluation.id))
    if suite_name is not None:
        query = query.where(SuiteEvaluation.suite_signature.in_(_signatures_of(suite_name)))
    out = []
    with session_scope(settings) as session:
        named: dict[str, int] = {}
        if suite_name is not None:
            for signature, version in session.execute(select(SuiteRow.signature, SuiteRow.version)
                                                      .where(SuiteRow.name == suite_name)
                                                      .order_by(SuiteRow.version)):
                named[signature] = version
        for row, checkpoint, number, dataset, s_name, s_version in session.execute(query):
            if suite_name is not None:
                s_name, s_version = suite_name, named[row.suite_signature]
            lineage = dict(checkpoint.lineage or {}) if checkpoint is not None else {}
            out.append({
                "id": row.id, "status": row.status, "error": row.error, "checkpoint_digest": row.checkpoint_digest,
                "checkpoint_name": checkpoint.name if checkpoint is not None else None,
                "checkpoint_created_at": _iso(checkpoint.created_at) if checkpoint is not None else None,
                "operation": lineage.get("operation"), "parent_digest": lineage.get("parent_digest"),
                "lineage": lineage, "dataset": VersionRef(dataset, number, row.dataset_digest).label,
                "dataset_digest": row.dataset_digest,
                "dataset_version_id": row.dataset_version_id, "suite_name": s_name, "suite_version": s_version,
                "suite_signature": row.suite_signature, "attempts": row.attempts,
                "score_run_id": row.score_run_id, "evaluate_run_id": row.evaluate_run_id,
                "flow_run_id": row.flow_run_id, "claimed_at": _iso(row.claimed_at),
                "finished_at": _iso(row.finished_at), "summary": dict(row.summary or {}),
            })
    return out
