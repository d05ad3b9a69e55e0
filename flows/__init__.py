"""Prefect flows: orchestration only. Tasks pass paths, ids and digests, never DataFrames.

Importing the flow layer tells the platform's run recorder how to find the current flow run, so
every run row written inside a flow carries its Prefect flow-run id (the arrow points down: the
platform never imports Prefect).
"""

from assay.flow_context import set_flow_run_id_provider


def _flow_run_id() -> str | None:
    from prefect.runtime import flow_run

    value = flow_run.id
    return str(value) if value else None


set_flow_run_id_provider(_flow_run_id)


def _announce_registrations() -> None:
    from assay.flows import events

    events.install()


_announce_registrations()
