"""``assay formats``: the input formats ``assay ingest`` reads, as the format registry lists them."""

from __future__ import annotations

import click

from assay.cli.output import emit_json


@click.command("formats")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: a list of {name, description}.")
def formats_command(as_json: bool) -> None:
    """The input formats `assay ingest` reads: each format's name (for `--format NAME`) and what it reads.

    Without --format, `assay ingest PATH` tries them in the order listed and takes the first that
    recognises PATH.
    """
    from assay.datasets.formats import registry

    rows = [{"name": name, "description": fmt.description} for name, fmt in registry().items()]
    if as_json:
        emit_json(rows)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Input formats of `assay ingest` (tried in this order without --format)")
    table.add_column("name", no_wrap=True)
    table.add_column("description")
    for row in rows:
        table.add_row(row["name"], row["description"])
    Console(width=max(100, Console().width)).print(table)


def register(cli: click.Group) -> None:
    cli.add_command(formats_command)
