"""``assay deploy`` and ``assay nightly run|status``: the team's nightly evaluation on a Prefect server.

``assay deploy`` creates the work pools, deployments and automations of :mod:`assay.cli.team_deployments`
on the configured server, idempotently. ``assay nightly run`` runs one sweep now (on this machine, or
dispatching to the ``gpu`` pool when the team's deployments exist); ``assay nightly status`` shows the
ledger.
"""

from __future__ import annotations

import os
from typing import Any

import click

from assay.cli.output import emit_json
from assay.config import load_settings
from assay.nightly.defaults import SETTLE_SECONDS, SHARD_SIZE
from assay.provenance import short


def api_or_refuse(problems: list[str]) -> str:
    """The team server's URL; without one, refuse with ``problems`` (the settings' own) and that."""
    from assay.errors import DeployRefused, UsageError
    from assay.flows.engine import configure_prefect_defaults, configured_api_url

    url = configured_api_url(load_settings())
    if url is None:
        no_server = ("assay deploy needs the team's Prefect server: set PREFECT_API_URL (see docs/TEAM.md); "
                     "a single user needs no deployments (`assay nightly run` works without them)")
        raise DeployRefused([*problems, no_server]) if problems else UsageError(no_server)
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
@click.option("--settle", "settle_seconds", type=float, default=SETTLE_SECONDS, show_default=True,
              help="A watched checkpoint folder unchanged this long is complete.")
@click.option("--shard-size", type=int, default=SHARD_SIZE, show_default=True,
              help="Segments per scoring shard of a checkpoint's evaluation: each shard is stored as it "
                   "finishes, so a crashed run's retry keeps the shards done.")
@click.option("--report-dir", help="Where the nightly report is written (default: ASSAY_HOME/report).")
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def deploy(timezone: str, nightly_cron: str, gpus: int, suite: str, debounce_seconds: int, zombie_after_seconds: int,
           settle_seconds: float, shard_size: int, report_dir: str | None, dry_run: bool, as_json: bool) -> None:
    """Create the work pools cpu and gpu, the deployments and the automations on the team's
    Prefect server; a second run changes nothing.

    Checks first, writes after: the cron, the time zone, the suite (in the catalog) and the pools
    the server already has; any problem is reported (all of them, exit 2) and nothing is written.
    """
    from assay.cli.team_deployments import TeamConfig, apply
    from assay.urls import without_credentials

    config = TeamConfig(timezone=timezone, nightly_cron=nightly_cron, gpus=gpus, suite=suite,
                        debounce_seconds=debounce_seconds, zombie_after_seconds=zombie_after_seconds,
                        settle_seconds=settle_seconds, shard_size=shard_size, report_dir=report_dir)
    url = api_or_refuse(config.problems())
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
@click.option("--settle", "settle_seconds", type=float, default=SETTLE_SECONDS, show_default=True)
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
    for skipped in result["scanned"]["skipped"]:
        click.echo(f"  skipped    {skipped['path']}: {skipped['reason']}")
    for failed in result.get("announced", {}).get("failed", []):
        click.echo(f"  announcement of {failed} still owed (the server did not acknowledge it)")
    for regression in result["regressions"]:
        click.echo(f"  REGRESSION {short(regression['checkpoint_digest'])} vs {short(regression['baseline_digest'])}: "
                   f"{regression['dataset']} {regression['level']} {regression['group']} ({regression['aspect']}) "
                   f"{regression['statistic']} "
                   f"{regression['value']:.4f} < {regression['baseline_value']:.4f} (p={regression['p_value']:.3g})")
    if result["report"]:
        click.echo(f"  report: {result['report']}")


@nightly.command("status")
@click.option("--suite", help="Only this suite (default: the nightly suite, when it exists).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: every state with its items, counts and ages.")
def status_command(suite: str | None, as_json: bool) -> None:
    """Every evaluation the nightly owes or did: owed, pending, running, crashed, failed, completed."""
    from assay.errors import NotFoundError
    from assay.nightly.status import STATES, nightly_status
    from assay.nightly.suites import DEFAULT_SUITE, get_suite

    settings = load_settings()
    try:
        chosen = get_suite(settings, suite or DEFAULT_SUITE)
    except NotFoundError:
        if suite is not None:
            raise
        chosen = None  # no nightly suite yet: the ledger and the owed announcements only
    found = nightly_status(settings, chosen, suite_name=suite)
    if as_json:
        emit_json(found.as_dict())
        return
    counts, oldest = found.counts(), found.oldest_age_s()
    title = f"suite {found.suite}" if found.suite else "no suite named nightly (define one: `assay suite define`)"
    click.echo(f"{title}: " + ", ".join(f"{counts[s]} {s}" for s in STATES))
    for state in STATES[:-1]:
        for item in found.items[state]:
            extra = f"  attempts {item['attempts']}" if item.get("attempts") else ""
            extra += f"  ({_one_line(item['error'])})" if item.get("error") else ""
            click.echo(f"  {state:<9} {_age(item['age_s']):>9}  {_name(item)}  {item['dataset']}{extra}")
    for item in found.owed_announcements:
        click.echo(f"  owed      {_age(item['age_s']):>9}  {item['checkpoint_name']}  announcement not delivered"
                   + (f" ({_one_line(item['error'])})" if item.get("error") else ""))
    for item in found.items["completed"][-20:]:
        click.echo(f"  completed {_age(item['age_s']):>9}  {_name(item)}  {item['dataset']}  suite {item['suite']}")
    if counts["owed"] or counts["pending"] or found.owed_announcements:
        click.echo("owed and pending items are evaluated by the next sweep: `assay nightly run` runs one now")
    if oldest["crashed"] is not None:
        click.echo("crashed items are retried by the next sweep while attempts remain")


def _age(seconds: float) -> str:
    """``42 s``, ``5 min``, ``3.2 h``, ``2.0 d`` ago."""
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h ago"
    return f"{seconds / 86400:.1f} d ago"


def _name(item: dict[str, Any]) -> str:
    return str(item.get("checkpoint_name") or short(item["checkpoint_digest"]))


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= 120 else line[:117] + "..."


def register(cli: click.Group) -> None:
    cli.add_command(deploy)
    cli.add_command(nightly)
