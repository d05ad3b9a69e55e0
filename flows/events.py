"""The ``assay.checkpoint.registered`` event: how a newly registered checkpoint reaches the team's
Prefect server, whose deployment trigger (installed by ``assay deploy``, :mod:`assay.cli.team_deployments`)
then evaluates it soon after.

The event's resource is ``assay.checkpoint.<sha256 digest>`` (named by the checkpoint's name), so a
trigger can debounce per checkpoint (``for_each`` the resource id). It carries no path and no
credentials: only the name, the digest and the lineage's operation.

Events are emitted only when a Prefect API is configured (a team server, ``PREFECT_API_URL``): the
embedded single-user default has no deployments to trigger, and starting a server only to announce
a checkpoint would cost seconds for nothing. Nothing is lost either way: the nightly sweep finds
every registered checkpoint that has not been evaluated (see :mod:`assay.nightly.ledger`).
"""

from __future__ import annotations

import logging

from assay.checkpoints.registry import Registered, add_registration_listener
from assay.config import load_settings

CHECKPOINT_REGISTERED = "assay.checkpoint.registered"
RESOURCE_PREFIX = "assay.checkpoint."

log = logging.getLogger(__name__)


def checkpoint_resource_id(digest: str) -> str:
    return f"{RESOURCE_PREFIX}{digest}"


def emit_checkpoint_registered(registered: Registered, *, drain: bool = True) -> bool:
    """Send the event for ``registered`` to the configured Prefect API; returns whether it was sent.

    ``drain`` waits until Prefect's events worker has delivered it (a short-lived CLI process would
    otherwise exit first). A failure to deliver is logged, never raised: the catalog row exists and
    the nightly sweep will find the checkpoint.
    """
    from assay.flows.engine import configure_prefect_defaults, configured_api_url

    if configured_api_url(load_settings()) is None:
        return False
    configure_prefect_defaults()
    try:
        from prefect.events import emit_event
        from prefect.events.worker import EventsWorker

        event = emit_event(
            CHECKPOINT_REGISTERED,
            resource={"prefect.resource.id": checkpoint_resource_id(registered.digest),
                      "prefect.resource.name": registered.name},
            payload={"name": registered.name, "digest": registered.digest},
        )
        if drain:
            EventsWorker.drain_all(timeout=30)
        return event is not None
    except Exception as exc:  # the server may be down: the sweep catches the checkpoint later
        log.warning("could not announce checkpoint %s to Prefect: %s", registered.name, exc)
        return False


def install() -> None:
    """Announce every checkpoint this process registers from now on (idempotent)."""
    add_registration_listener(_announce)


def _announce(registered: Registered) -> None:
    from assay.flow_context import current_flow_run_id

    # inside a flow run Prefect's engine delivers pending events when the run ends
    emit_checkpoint_registered(registered, drain=current_flow_run_id() is None)
