"""``assay report``: the static HTML report of everything Assay has computed."""

from __future__ import annotations

from pathlib import Path

import click

from assay.cli.output import emit_json


@click.command("report")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              metavar="DIR", help="Folder to write index.html into (created if needed).")
@click.option("--main-dataset", metavar="NAME",
              help="Dataset of the segment-level scatter plots (default: wmt17 if evaluated, else the largest).")
@click.option("--sample", "sample_limit", type=click.IntRange(min=1), default=2000, show_default=True,
              help="At most this many segments per scatter plot.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the scatter plots' sample.")
@click.option("--json", "as_json", is_flag=True, help="Print {\"path\": ...} as JSON.")
def report_command(out_dir: Path, main_dataset: str | None, sample_limit: int, seed: int, as_json: bool) -> None:
    """Write a self-contained HTML report (inline SVG charts, no network needed to view it):
    correlations with confidence intervals and clusters, scatter plots, system-level plots, the BLEU
    Neighbors trade-off, quality drift, and the BLEURT/BERTScore reproduction tables."""
    from assay.cli.runner import run_report_flow

    path = run_report_flow(str(out_dir.resolve()), main_dataset=main_dataset, sample_limit=sample_limit, seed=seed)
    if as_json:
        emit_json({"path": path})
    else:
        click.echo(f"report written to {path}")


def register(cli: click.Group) -> None:
    cli.add_command(report_command)
