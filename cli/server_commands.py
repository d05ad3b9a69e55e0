"""``assay server start|stop|status``: the background local Prefect server.

Commands that run flows start the server themselves when they need it, and it stops by itself after
``ASSAY_SERVER_IDLE`` seconds idle (see :mod:`assay.cli.background_server`); these commands are for
starting it ahead of time, looking at it (its remaining idle time included) and stopping it.
"""

from __future__ import annotations

import click

from assay.cli.output import emit_json
from assay.config import load_settings


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours}h {minutes}m"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s"


def _configured_note() -> str | None:
    from assay.flows.engine import configured_api_url

    settings = load_settings()
    configured = configured_api_url(settings)
    if configured:
        return f"PREFECT_API_URL is set ({configured}): commands use that server, not this one"
    if settings.prefect_server == "ephemeral":
        return "ASSAY_PREFECT_SERVER=ephemeral: commands use Prefect's temporary server, not this one"
    return None


@click.group("server")
def server() -> None:
    """The local Prefect server that commands share (started by the first command that runs a flow).

    It stops after ASSAY_SERVER_IDLE seconds (default 900) with no API request and no flow in
    progress, and when its ASSAY_HOME is deleted; the next command that runs a flow starts a new one.
    State, lock and log live in ASSAY_HOME/server. A configured PREFECT_API_URL is used instead;
    ASSAY_PREFECT_SERVER=ephemeral uses Prefect's temporary per-process server instead.
    """


@server.command("start")
def start_command() -> None:
    """Start the server unless it runs already (safe to repeat); prints its API URL."""
    from assay.cli.background_server import ensure_server

    settings = load_settings()
    state, started = ensure_server(settings, announce=False)
    verb = "started" if started else "already running:"
    click.echo(f"{verb} Prefect server at {state.url} (pid {state.pid}; log {settings.server_dir / 'server.log'})")
    note = _configured_note()
    if note:
        click.echo(f"note: {note}", err=True)


@server.command("stop")
def stop_command() -> None:
    """Stop the server (SIGTERM, then SIGKILL after a timeout) and remove its state; no error if none runs."""
    from assay.cli.background_server import stop_server

    state = stop_server(load_settings())
    if state is None:
        click.echo("no local Prefect server is running")
    else:
        click.echo(f"stopped the Prefect server at {state.url} (pid {state.pid})")


@server.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status_command(as_json: bool) -> None:
    """Whether the server runs, with its URL, pid, uptime and remaining idle time (looking does not
    count as activity)."""
    from assay.cli.background_server import server_status

    settings = load_settings()
    status = server_status(settings)
    note = _configured_note()
    if as_json:
        emit_json({**status.as_dict(), "state_dir": str(settings.server_dir), "note": note})
        return
    if status.running and status.state is not None:
        state = status.state
        click.echo(f"running at {state.url} (pid {state.pid}, up {_duration(state.uptime_s)}, "
                   f"prefect {state.prefect_version})")
        idle = status.idle
        if idle is None:
            click.echo("  idle time unknown (a server started without the watchdog)")
        elif idle.flow_in_progress or idle.requests_in_progress:
            click.echo(f"  busy ({'a flow is in progress' if idle.flow_in_progress else 'serving requests'}); "
                       f"stops after {_duration(idle.idle_limit_s)} idle")
        else:
            click.echo(f"  idle {_duration(idle.idle_s)}: stops in {_duration(idle.remaining_s)} unless used "
                       f"(limit {_duration(idle.idle_limit_s)}, ASSAY_SERVER_IDLE)")
    else:
        click.echo("not running" + (f" ({status.problem})" if status.problem else ""))
    click.echo(f"  state in {settings.server_dir}")
    if note:
        click.echo(f"  note: {note}")


def register(cli: click.Group) -> None:
    cli.add_command(server)
