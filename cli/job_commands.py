"""``assay run``: the main job. Ingest what the data directory holds, score the default metrics
(sentBLEU, chrF and BERTScore-MiniLM-L4 where there are references, BLEU Neighbors where there
are none, corpus BLEU at system level), evaluate, print the leaderboards and write the report."""

from __future__ import annotations

from pathlib import Path

import click

from assay.config import DEFAULT_RESAMPLES, load_settings
from assay.errors import AssayError, UsageError


@click.command("run")
@click.option("--data-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Source datasets (default: ASSAY_DATA_DIR, else the bundled demo fixtures).")
@click.option("--report", "report_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where the HTML report goes (default: ASSAY_HOME/report).")
@click.option("--no-system-level", is_flag=True, help="Skip full test-set scoring (faster on large WMT sets).")
@click.option("--resamples", type=int, default=DEFAULT_RESAMPLES, show_default=True,
              help="Bootstrap/permutation resamples.")
def run_command(data_dir: Path | None, report_dir: Path | None, no_system_level: bool, resamples: int) -> None:
    """Ingest, score, evaluate, print the leaderboards and write the report."""
    from assay.catalog.version_detail import version_summary
    from assay.cli.output import print_catalog_table, print_rows
    from assay.cli.runner import run_main_job
    from assay.fixtures import fixtures_dir
    from assay.jobs.ingest import discover

    settings = load_settings()
    data_dir = data_dir or settings.data_dir or fixtures_dir()
    if not data_dir.is_dir():
        raise UsageError(f"data directory {data_dir} does not exist (set ASSAY_DATA_DIR or --data-dir)")
    if not discover(data_dir):
        raise UsageError(f"no dataset found in {data_dir} (see `assay ingest --help` for the formats)")
    report_dir = report_dir or settings.home / "report"
    click.echo(f"assay run: data {data_dir}, home {settings.home}")
    summary = run_main_job(str(data_dir), str(report_dir), system_level=not no_system_level, n_resamples=resamples)

    from assay.catalog.dataset_versions import list_versions
    from assay.catalog.engine import session_scope

    with session_scope(settings) as session:
        print_catalog_table([version_summary(v) for v in list_versions(session)])
    from assay.metrics.signature import parse_signature
    from assay.query.leaderboard import LeaderboardQuery, available_aspects, available_groups, leaderboard

    for entry in summary["datasets"]:
        for scored in entry["scored"]:
            click.echo(f"scored {entry['dataset']} {parse_signature(scored['signature'])['metric']}: "
                       f"{scored['computed']:,} computed, {scored['cached']:,} cached")
        for note in entry.get("notes", []):
            click.echo(f"note: {note}")
        for level, statistic in (("seg", "kendall"), ("sys", "pearson")):
            groups = available_groups(entry["dataset"], level)
            if not groups:
                continue
            # one table per human target (aspect): correlations with different targets are not comparable
            for aspect in available_aspects(entry["dataset"], level, groups[0]):
                try:
                    rows = leaderboard(LeaderboardQuery(entry["dataset"], level, statistic, groups[0], aspect))
                except AssayError as exc:
                    click.echo(f"\nleaderboard {entry['dataset']} {level} {aspect}: {exc}")
                    continue
                click.echo(f"\nleaderboard {entry['dataset']}  level {level}  {statistic}  group {groups[0]}  "
                           f"aspect {aspect}")
                print_rows(rows, ["rank", "cluster", "metric", "value", "ci", "n", "unit"])
    if summary.get("report"):
        click.echo(f"\nreport: {summary['report']}")


def register(cli: click.Group) -> None:
    cli.add_command(run_command)
