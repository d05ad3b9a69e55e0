"""The one place the CLI starts flows.

Each function chooses the Prefect API first (:func:`choose_prefect_api`: a configured
``PREFECT_API_URL``, else the background local server of :mod:`assay.cli.background_server`,
started here on first use) and only then imports the flow, because Prefect reads its settings
once, at import. Commands that find nothing to do answer from their plan and never come here, so
they never pay for Prefect.

While a flow runs on the background server, this process holds the server's flow lease
(:func:`assay.cli.background_server.flow_in_progress`), so the server does not stop for idleness
while a long task makes no API request; the kernel drops the lease when the process ends,
however it ends.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

import click

from assay.config import Settings

#: flow name -> (module under assay.flows, function)
FLOWS = {
    "ingest": ("ingest", "ingest_flow"),
    "score": ("score", "score_flow"),
    "evaluate": ("evaluate", "evaluate_flow"),
    "select": ("select", "select_flow"),
    "rerun": ("rerun", "rerun_flow"),
    "bertscore-baseline": ("baseline", "baseline_flow"),
    "quality-drift": ("drift", "quality_drift_flow"),
    "report": ("report", "report_flow"),
    "assay-run": ("main_job", "main_job_flow"),
    "finetune": ("train", "finetune_flow"),
    "pretrain": ("train", "pretrain_flow"),
    "robustness-drift": ("robustness", "robustness_drift_flow"),
    "robustness-webnlg": ("robustness", "robustness_webnlg_flow"),
    "train": ("train", "train_flow"),
    "synthesize": ("synthesize", "synthesize_flow"),
    "nightly": ("nightly", "nightly_flow"),
    "evaluate-checkpoint": ("checkpoint_eval", "evaluate_checkpoint_flow"),
    "sweep": ("sweep", "sweep_flow"),
}


#: the background server this process's Prefect talks to, once chosen (Prefect reads its API URL
#: once, so every later flow of the process runs on that server too)
_background: list[Settings] = []


@contextlib.contextmanager
def choose_prefect_api() -> Iterator[None]:
    """Point Prefect at its API and set its defaults (call before importing Prefect); while the
    context is open, hold the background server's flow lease when that server is the API.

    The API: a configured ``PREFECT_API_URL`` as it is, else the background local server (started
    now when none runs; the first such command says so on stderr), else Prefect's temporary server
    (``ASSAY_PREFECT_SERVER=ephemeral``); see :mod:`assay.flows.engine`.
    """
    from assay.config import load_settings
    from assay.flows.engine import configure_prefect_defaults, point_at_background_server, wants_background_server

    with contextlib.ExitStack() as stack:
        settings = load_settings()
        if not _background and wants_background_server(settings):
            from assay.cli.background_server import ensure_server, flow_in_progress

            # the lease first: the server cannot stop between its health check and the flow's first call
            stack.enter_context(flow_in_progress(settings))
            state, _ = ensure_server(settings)
            point_at_background_server(state.url)
            _background.append(settings)
        elif _background:
            from assay.cli.background_server import flow_in_progress

            stack.enter_context(flow_in_progress(_background[0]))
        configure_prefect_defaults()
        yield


def use_background_server(settings: Settings) -> None:
    """Record that this process's Prefect talks to the background server of ``settings`` (its
    ``PREFECT_API_URL`` set before Prefect was imported): what :func:`choose_prefect_api` records
    when it starts or finds the server; the command preloader, which imports Prefect itself, says so
    here (:mod:`assay.cli.command_preloader`)."""
    _background[:] = [settings]


def run_flow(flow_name: str, /, *args: Any, **kwargs: Any) -> Any:
    """Run the flow ``flow_name`` (a key of :data:`FLOWS`) with the real Prefect engine; returns its result.

    After a successful run on the team's server, owed checkpoint announcements are delivered
    (:func:`assay.flows.events.deliver_owed`); a failure there is one warning line, never an error.
    After one on the background server, the ``assay`` entry point starts the home's command
    preloader unless it runs (:func:`assay.cli.command_preloader.start_preloader`), for the next
    flow commands."""
    with choose_prefect_api():
        module, function = FLOWS[flow_name]
        flow = getattr(importlib.import_module(f"assay.flows.{module}"), function)
        if _background:
            from assay.flows.engine import background_flow_settings

            with background_flow_settings():
                result = flow(*args, **kwargs)
        else:  # a configured (team) server: the background server has no trigger to wake
            result = flow(*args, **kwargs)
            deliver_owed_announcements()
    if _background:
        from assay.cli.command_preloader import start_preloader

        start_preloader(_background[0])
    return result


def deliver_owed_announcements() -> str | None:
    """Deliver what the outbox owes (:func:`assay.flows.events.deliver_owed`: nothing without a
    configured team server); a failure is one warning line on stderr, also returned."""
    from assay.flows.events import deliver_owed

    warning = deliver_owed().warning()
    if warning is not None:
        click.echo(f"warning: {warning}", err=True)
    return warning


def run_ingest_flow(paths: list[str], **kwargs: Any) -> list[dict[str, Any]]:
    return run_flow("ingest", paths, **kwargs)


def run_score_flow(dataset: str, metric: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return run_flow("score", dataset, metric, **kwargs)


def run_evaluate_flow(dataset: str, **kwargs: Any) -> dict[str, Any]:
    return run_flow("evaluate", dataset, **kwargs)


def run_drift_flow(dataset: str, metrics: list[dict[str, Any]], **kwargs: Any) -> list[dict[str, Any]]:
    return run_flow("quality-drift", dataset, metrics, **kwargs)


def run_report_flow(out_dir: str, **kwargs: Any) -> str:
    return str(run_flow("report", out_dir, **kwargs))


def run_main_job(data_dir: str, report_dir: str | None = None, **kwargs: Any) -> dict[str, Any]:
    return run_flow("assay-run", data_dir, report_dir, **kwargs)
