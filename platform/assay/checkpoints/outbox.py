"""The checkpoint outbox: every registered checkpoint owes its team an announcement until it is delivered.

A registration writes the checkpoint row and its outbox row in one transaction
(:func:`assay.checkpoints.registry.register`), so a checkpoint can never exist without the record
that its ``assay.checkpoint.registered`` event is owed (the transactional outbox pattern). The
flow layer delivers owed announcements (:mod:`assay.flows.events`): a registration tries at once,
and every later command that reaches the team's Prefect server, and every nightly sweep, tries
again. A delivery that fails keeps the row owed, with the attempt count and the last error, and
the nightly sweep evaluates the checkpoint anyway: it plans every registered checkpoint that has not
been evaluated (:func:`assay.nightly.ledger.pending_items`), so nothing waits on the event.

``delivered_by`` says how the debt was settled: ``event`` (the server acknowledged the event) or
``sweep`` (a sweep without a team server to announce to took the checkpoint up itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint, CheckpointOutbox, utcnow
from assay.config import Settings

__all__ = ["DELIVERED_BY", "MAX_ERROR_CHARS", "Owed", "mark_delivered", "owe", "owed", "record_failure"]

DELIVERED_BY = ("event", "sweep")
MAX_ERROR_CHARS = 2000


@dataclass(frozen=True)
class Owed:
    """A checkpoint whose announcement has not been delivered yet."""

    digest: str
    name: str
    registered_at: datetime
    attempts: int
    last_error: str | None


def owe(session: Session, digest: str) -> None:
    """Record in ``session`` (the registration's transaction) that ``digest``'s announcement is owed."""
    session.add(CheckpointOutbox(checkpoint_digest=digest, attempts=0))


def owed(settings: Settings, digests: list[str] | None = None) -> list[Owed]:
    """Undelivered announcements, oldest first (only ``digests``' when given)."""
    query = (select(CheckpointOutbox, Checkpoint.name)
             .join(Checkpoint, Checkpoint.digest == CheckpointOutbox.checkpoint_digest)
             .where(CheckpointOutbox.delivered_at.is_(None))
             .order_by(CheckpointOutbox.created_at, CheckpointOutbox.id))
    if digests is not None:
        query = query.where(CheckpointOutbox.checkpoint_digest.in_(digests))
    with session_scope(settings) as session:
        return [Owed(row.checkpoint_digest, name, row.created_at, row.attempts, row.last_error)
                for row, name in session.execute(query)]


def mark_delivered(settings: Settings, digests: list[str], *, by: str) -> int:
    """Settle the announcements of ``digests`` (``by``: ``event`` or ``sweep``); returns how many
    were still owed. Settling twice is a no-op."""
    if by not in DELIVERED_BY:
        raise ValueError(f"delivered_by {by!r}: expected one of {DELIVERED_BY}")
    if not digests:
        return 0
    now = utcnow()
    with session_scope(settings) as session:
        result = session.execute(update(CheckpointOutbox)
                                 .where(CheckpointOutbox.checkpoint_digest.in_(digests),
                                        CheckpointOutbox.delivered_at.is_(None))
                                 .values(delivered_at=now, delivered_by=by, last_attempt_at=now,
                                         attempts=CheckpointOutbox.attempts + 1))
        return int(getattr(result, "rowcount", 0) or 0)


def record_failure(settings: Settings, digests: list[str], error: str) -> None:
    """Count a failed delivery attempt of ``digests`` and keep its reason; they stay owed."""
    if not digests:
        return
    with session_scope(settings) as session:
        session.execute(update(CheckpointOutbox)
                        .where(CheckpointOutbox.checkpoint_digest.in_(digests),
                               CheckpointOutbox.delivered_at.is_(None))
                        .values(attempts=CheckpointOutbox.attempts + 1, last_attempt_at=utcnow(),
                                last_error=str(error)[:MAX_ERROR_CHARS]))
