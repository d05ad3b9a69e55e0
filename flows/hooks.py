"""What an Assay flow installs in its process when it starts running, named by every flow as its
``on_running`` state hook (Prefect 3 docs, "State change hooks": called in the flow run's process
when it enters Running, before the flow's body)::

    @flow(name="score", on_running=[install_flow_hooks])

1. The flow-run id provider of :mod:`assay.flow_context`: every run row written inside a flow then
   carries its Prefect flow-run id (the arrow points down: the platform never imports Prefect).
2. The announcement of every checkpoint registered inside a flow run
   (:func:`assay.flows.events.install`).

A flow run started by the CLI, by a test or by a worker of a deployment passes through it alike;
installing again (a subflow) changes nothing. Importing the flow layer installs nothing, so a
process that only imports it (``assay checkpoints register`` delivering its own announcement)
never asks Prefect for a flow run.
"""

from __future__ import annotations

from typing import Any

from assay.flow_context import set_flow_run_id_provider


def prefect_flow_run_id() -> str | None:
    """The id of the Prefect flow run this code runs in, or None."""
    from prefect.runtime import flow_run

    value = flow_run.id
    return str(value) if value else None


def install_flow_hooks(_flow: Any = None, _flow_run: Any = None, _state: Any = None) -> None:
    """Install the flow run's hooks in this process (idempotent); Prefect's ``on_running`` hook
    signature ``(flow, flow_run, state)``, callable with no argument too."""
    from assay.flows import events

    set_flow_run_id_provider(prefect_flow_run_id)
    events.install()
