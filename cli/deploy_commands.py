"""``assay deploy`` and ``assay nightly run|status``: the team's nightly evaluation on a Prefect server.

``assay deploy`` creates the work pools, deployments and automations of :mod:`assay.cli.team_deployments`
on the configured server, idempotently. ``assay nightly run`` runs one sweep now (on this machine, or
dispatching to the ``gpu`` pool when the team's deployments exist); ``assay nightly status`` shows the
ledger.
"""

from __future__ import annotations

import os

import click

from assay.cli.output import emit_json
from assay.config import load_settings


def _api_or_refuse() -> str:
    from assay.errors import UsageError
    from assay.flows.engine import configure_prefect_defaults, configured_api_url

    url = configured_api_url(load_settings())
    if url is None:
        raise UsageError("assay deploy needs the team's Prefect server: set PREFECT_API_URL (see docs/TEAM.md); "
                         "a single user needs no deployments (`assay nightly run` works without them)")
    configure_prefect_defaults()
    return url


@click.command("deploy")
@click.option("--timezone", default=lambda: os.environ.get("ASSAY_NIGHTLY_TIMEZONE", "UTC"), show_default="UTC",
              help="IANA time zone of the nightly schedule (env ASSAY_NIGHTLY_TIMEZONE).")
@click.option("--cron", "nightly_cron", default="0 2 * * *", show_default=True, help="When the nightly sweep runs.")
@click.option("--gpus", type=int, default=1, show_default=True, help="Concurrent runs on the gpu pool (GPUs).")
@click.option("--suite", default="nightly", show_default=True, help="The evaluation suite the nightly sweep uses.")
@click.option("--debounce", "debounce_seconds", type=int, default=60, show_default=True,
              help="Seconds in which repeated announcements of one checkpoint start one evaluation.")
@click.option("--zombie-after", "zombie_after_seconds", type=int, default=90, show_default=True,
              help="Seconds without a heartbeat after which a running flow run is marked Crashed.")
@click.option("--settle", "settle_seconds", type=float, default=60.0, show_default=True,
              help="A watched checkpoint folder unchanged this long is complete.")
@click.option("--report-dir", help="Where the nightly report is written (default: ASSAY_HOME/report).")
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def deploy(timezone: str, nightly_cron: str, gpus: int, suite: str, debounce_seconds: int, zombie_after_seconds: int,
           settle_seconds: float, report_dir: str | None, dry_run: bool, as_json: bool) -> None:
    """Create the work pools cpu and gpu, the deployments and the automations on the team's
    Prefect server; a second run changes nothing."""
    from assay.cli.service_failures import without_credentials
    from assay.cli.team_deployments import TeamConfig, apply

    config = TeamConfig(timezone=timezone, nightly_cron=nightly_cron, gpus=gpus, suite=suite,
                        debounce_seconds=debounce_seconds, zombie_after_seconds=zombie_after_seconds,
                        settle_seconds=settle_seconds, report_dir=report_dir).check()
    url = _api_or_refuse()
    changes = apply(config, dry_run=dry_run)
    if as_json:
        emit_json({"api_url": without_credentials(url), "dry_run": dry_run, "changes": [c.as_dict() for c in changes]})
        return
    verb = "would be " if dry_run else ""
    for change in changes:
        click.echo(f"{change.kind:<11} {change.name:<40} {verb}{change.action}")
    changed = sum(c.action != "unchanged" for c in changes)
    click.echo(f"{changed} change(s) on {without_credentials(url)}" + (" (dry run)" if dry_run else ""))


@click.group("nightly")
def nightly() -> None:
    """The nightly evaluation of new checkpoints on an evaluation suite."""


@nightly.command("run")
@click.option("--suite", default="nightly", show_default=True)
@click.option("--checkpoint", help="Only this checkpoint (name or digest prefix).")
@click.option("--settle", "settle_seconds", type=float, default=60.0, show_default=True)
@click.option("--no-report", is_flag=True, help="Do not write the report.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def run_command(suite: str, checkpoint: str | None, settle_seconds: float, no_report: bool, as_json: bool) -> None:
    """One sweep now: reconcile, discover, evaluate what is new (exactly once), compare, report."""
    from assay.catalog.engine import get_engine
    from assay.cli.runner import run_flow

    # the catalog first: a sweep that cannot read its ledger must not start a flow run (or a server)
    get_engine(load_settings())
    result = run_flow("nightly", suite=suite, checkpoint=checkpoint, reason="manual", settle_seconds=settle_seconds,
                      report=not no_report)
    if as_json:
        emit_json(result)
        return
    click.echo(f"nightly sweep of suite {suite}: {result['dispatched']} item(s) evaluated, "
               f"{len(result['evaluated'])} checkpoint(s), {len(result['regressions'])} regression(s)")
    for registered in result["scanned"]["registered"]:
        click.echo(f"  registered {registered['name']} from a watched folder")
    for regression in result["regressions"]:
        click.echo(f"  REGRESSION {regression['checkpoint_digest'][:12]} vs {regression['baseline_digest'][:12]}: "
                   f"{regression['dataset']} {regression['level']} {regression['group']} {regression['statistic']} "
                   f"{regression['value']:.4f} < {regression['baseline_value']:.4f} (p={regression['p_value']:.3g})")
    if result["report"]:
        click.echo(f"  report: {result['report']}")


@nightly.command("status")
@click.option("--suite", help="Only this suite.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status_command(suite: str | None, as_json: bool) -> None:
    """The ledger: what was evaluated, when, and what is running or crashed."""
    from assay.nightly.ledger import history, running_items

    settings = load_settings()
    done = history(settings, suite)
    running = running_items(settings)
    if as_json:
        emit_json({"completed": done, "running": running})
        return
    if not done and not running:
        click.echo("nothing evaluated yet; `assay nightly run` runs a sweep")
    for row in done:
        click.echo(f"{row.get('finished_at')}  {row.get('checkpoint_name')}  {row.get('dataset')}  "
                   f"suite {row.get('suite_name')}@{row.get('suite_version')}")
    for row in running:
        click.echo(f"running: ledger row {row['id']} (flow run {row.get('flow_run_id')})")


def register(cli: click.Group) -> None:
    cli.add_command(deploy)
    cli.add_command(nightly)
