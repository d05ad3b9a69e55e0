"""``assay serve``: the team's leaderboard as a read-only web app (:mod:`assay.serve.app`)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Another than loopback needs a sign-in.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port to listen on (0: any free port, printed at start-up).")
@click.option("--tokens-file", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Sign-in with bearer tokens: one per line (blank lines and # comments ignored).")
def serve_command(host: str, port: int, tokens_file: Path | None) -> None:
    """Serve the leaderboard, read-only, in a web browser: an overview of every evaluated dataset,
    each leaderboard with filters and permalinks, and a JSON twin of every page (``.json``).

    Sign-in, for a team: HTTP basic auth with ASSAY_SERVE_AUTH=user:password in the environment, or
    bearer tokens with --tokens-file. Without either it serves this machine only (loopback). The
    line printed at start-up says which sign-in is on.
    """
    import socket

    import uvicorn

    from assay.config import load_settings
    from assay.serve.access import Access
    from assay.serve.app import create_app, startup_line

    access = Access.configured(tokens_file)
    access.check_host(host)
    app = create_app(load_settings(), access)
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(2048)  # connections wait in the backlog from now on: ready when the line is printed
    bound = listener.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    click.echo(startup_line(f"http://{shown}:{bound}/", access), err=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False)
    uvicorn.Server(config).run(sockets=[listener])


def register(cli: click.Group) -> None:
    cli.add_command(serve_command)
