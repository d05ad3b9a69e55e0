"""Which orchestrator flow run, if any, the current code runs in: a hook the flow layer fills.

The platform never imports Prefect (arrows point down), yet every run row records the Prefect
flow-run id when there is one. So every flow registers a provider here when it starts running
(:mod:`assay.flows.hooks`), and :class:`assay.jobs.runs.RunRecorder` asks it; in a process where no
flow has started the answer is None, without asking the orchestrator. This module imports nothing,
so registering costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable

_provider: Callable[[], str | None] = lambda: None  # noqa: E731


def set_flow_run_id_provider(provider: Callable[[], str | None]) -> None:
    """Called by the flow layer: ``provider()`` returns the current flow run's id, or None."""
    global _provider
    _provider = provider


def current_flow_run_id() -> str | None:
    try:
        value = _provider()
    except Exception:  # outside a flow run the orchestrator may raise instead of returning None
        return None
    return str(value) if value else None
