"""The ``assay.checkpoint.registered`` event: how a newly registered checkpoint reaches the team's
Prefect server, whose deployment trigger (installed by ``assay deploy``, :mod:`assay.cli.team_deployments`)
then evaluates it soon after.

The event's resource is :attr:`CheckpointRef.resource <assay.checkpoints.ref.CheckpointRef.resource>`,
``assay.checkpoint.<sha256 digest>`` (named by the checkpoint's name), so a
trigger can debounce per checkpoint (``for_each`` the resource id). It carries no path and no
credentials: only the name, the digest and the lineage's operation.

Delivery goes through the outbox (:mod:`assay.checkpoints.outbox`): registration records that the
announcement is owed in the same transaction as the checkpoint row; :func:`deliver_owed` sends what
is owed and settles only what the server acknowledged. It runs right after a registration, after
every later command that reaches the team's server (:mod:`assay.cli.runner`), and at the start of
every nightly sweep. A failed delivery is one warning line and the row stays owed; the sweep
evaluates the checkpoint whatever became of its event (:mod:`assay.nightly.ledger`).

Events are sent only when a Prefect API is configured (a team server, ``PREFECT_API_URL``): the
embedded single-user default has no deployments to trigger, and starting a server only to announce
a checkpoint would cost seconds for nothing; there, the sweep settles what is owed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from assay.checkpoints import outbox
from assay.checkpoints.ref import CheckpointRef
from assay.checkpoints.registry import Registered, add_registration_listener
from assay.config import load_settings
from assay.urls import without_credentials

CHECKPOINT_REGISTERED = "assay.checkpoint.registered"

log = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass(frozen=True)
class Delivery:
    """What one delivery of owed announcements did."""

    attempted: list[str]
    """names of the checkpoints whose announcement was sent"""
    delivered: list[str]
    failed: list[str]
    error: str | None = None
    """why the failed ones could not be delivered (one line; no credentials)"""
    api_url: str | None = None
    """where they were sent, without credentials"""

    def warning(self) -> str | None:
        """The one-line warning for a failed delivery (None when nothing failed)."""
        if not self.failed:
            return None
        names = ", ".join(self.failed[:5]) + (f" and {len(self.failed) - 5} more" if len(self.failed) > 5 else "")
        return (f"checkpoint {names}: registered, but the announcement could not reach Prefect at "
                f"{self.api_url} ({self.error}); the next nightly sweep will evaluate it "
                "(`assay nightly run` runs one now)")


def deliver_owed(digests: list[str] | None = None) -> Delivery:
    """Send the owed ``assay.checkpoint.registered`` events (of ``digests``, else all) to the
    configured Prefect API and settle those the server acknowledged (:mod:`assay.checkpoints.outbox`).

    Nothing is attempted without a configured team server (the single-user default has no trigger
    to wake; the sweep settles those). Never raises for an unreachable server: the failure is
    recorded on the outbox rows and returned (:meth:`Delivery.warning`), and the rows stay owed.
    """
    from assay.flows.engine import configure_prefect_defaults, configured_api_url

    settings = load_settings()
    url = configured_api_url(settings)
    if url is None:
        return Delivery([], [], [])
    owed = outbox.owed(settings, digests)
    if not owed:
        return Delivery([], [], [], api_url=without_credentials(url))
    configure_prefect_defaults()
    sent, error = _send(owed)
    delivered = [o for o in owed if o.digest in sent]
    failed = [o for o in owed if o.digest not in sent]
    outbox.mark_delivered(settings, [o.digest for o in delivered], by="event")
    if failed:
        outbox.record_failure(settings, [o.digest for o in failed], error or "not acknowledged")
    return Delivery([o.name for o in owed], [o.name for o in delivered], [o.name for o in failed], error,
                    without_credentials(url))


def _send(owed: list[outbox.Owed]) -> tuple[set[str], str | None]:
    """(digests the server acknowledged, the error that stopped the rest). Each event is sent over
    Prefect's events websocket and confirmed by a ping after it (``checkpoint_every=1``), so an
    event counts as delivered only once the server has read it; Prefect's own retry warnings are
    silenced (the caller reports one line)."""
    from prefect.events import Event, Resource
    from prefect.events.clients import get_events_client

    async def send() -> tuple[set[str], str | None]:
        sent: set[str] = set()
        try:
            async with get_events_client(reconnection_attempts=1, checkpoint_every=1) as client:
                for item in owed:
                    await client.emit(Event(
                        event=CHECKPOINT_REGISTERED,
                        resource=Resource({"prefect.resource.id": CheckpointRef(item.digest, item.name).resource,
                                           "prefect.resource.name": item.name}),
                        payload={"name": item.name, "digest": item.digest}))
                    sent.add(item.digest)
        except Exception as exc:  # unreachable, refused, closed: the rest stays owed
            return sent, _one_line(exc)
        return sent, None

    quiet = logging.getLogger("prefect.events.clients")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        return _run(send())
    finally:
        quiet.setLevel(level)


def _run(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` to the end from synchronous code, also where an event loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def install() -> None:
    """Announce every checkpoint this process registers from now on (idempotent)."""
    add_registration_listener(_announce)


def _announce(registered: Registered) -> None:
    """Inside a flow run (a training run, a sweep's scan), deliver at once; outside one, the
    command that registered delivers (``assay checkpoints register``), or the next command that
    reaches the server, or the next sweep."""
    from assay.flow_context import current_flow_run_id

    if current_flow_run_id() is None:
        return
    delivery = deliver_owed([registered.digest])
    warning = delivery.warning()
    if warning is not None:
        log.warning("%s", warning)
