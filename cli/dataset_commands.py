"""``assay ingest``, ``assay datasets list|show`` and ``assay sql``."""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

import click

from assay.catalog.version_detail import describe_version, version_fact_lines, version_summary
from assay.cli.options import parse_options
from assay.cli.output import emit_json, print_catalog_table
from assay.provenance import short


@click.command("ingest")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--format", "format_name", metavar="NAME",
              help="Input format (default: detected). `assay formats` lists every format with its name.")
@click.option("--name", help="Dataset name (default: derived, e.g. wmt17 for a WMT17 package).")
@click.option("--option", "-o", "option_pairs", multiple=True, metavar="KEY=VALUE",
              help="Format option (repeatable), e.g. -o language_pair=en-de (mtme, esa) or the generic "
                   "format's column declarations (-o candidate=hyp -o human_z=z ...); any format: "
                   "-o groups=cs-en,de-en keeps only those groups (language pairs, tasks).")
@click.option("--mqm-weights", metavar="SCHEME",
              help="MQM: the weighting scheme of the human score, a name (mtme, the default) or rules like "
                   "'Major:5 Minor:1 Minor/Fluency/Punctuation:0.1'. Part of the score's identity.")
@click.option("--reference-system", metavar="SYSTEM",
              help="MQM: the rated system whose text is the reference (default: the one named ref, refA, ...). "
                   "MTME: the standard reference (default: mt-metrics-eval's for the test set).")
@click.option("--reparse", is_flag=True,
              help="Parse even if the source files are unchanged (after upgrading Assay's parsers).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def ingest_command(path: Path, format_name: str | None, name: str | None,
                   option_pairs: tuple[str, ...], mqm_weights: str | None, reference_system: str | None,
                   reparse: bool, as_json: bool) -> None:
    """Ingest a human-judgment release (a folder or a file) as a new dataset version.

    Identical content is a no-op that returns the existing version; changed content becomes a
    new version and the old one stays readable. A defective input is rejected with one error
    naming the file and line, and nothing is written.

    Some sources hold several versions: an mt-metrics-eval test-set folder (wmt23/) becomes one
    version per language pair (mtme-wmt23-en-de, ...; -o language_pair=en-de ingests one), with the
    official submissions' scores as external metrics. --json prints one object per version (a list
    when there are several).

    Unchanged source files (same sha256 as when a version was parsed from them) are answered
    from the catalog in this process, without parsing and without starting the Prefect flow.
    """
    from assay.cli.runner import run_ingest_flow
    from assay.jobs.ingest import find_unchanged_versions

    options = parse_options(option_pairs)
    if mqm_weights:
        options["mqm_weights"] = mqm_weights
    if reference_system:
        options["reference_system"] = reference_system
    unchanged = None if reparse else find_unchanged_versions(path, format_name=format_name, name=name,
                                                             options=options)
    if unchanged is not None:
        results = [result.as_dict() for result in unchanged]
    else:
        results = run_ingest_flow([str(path)], format_name=format_name, name=name, options=options, reparse=reparse)
    if as_json:
        emit_json(results[0] if len(results) == 1 else results)
        return
    print_ingest_results(results)


def print_ingest_results(results: list[dict[str, Any]]) -> None:
    for result in results:
        state = "new version" if result["created"] else \
            "unchanged" + ("" if result.get("parsed", True) else " (source files identical, not parsed again)")
        counts = ", ".join(f"{k} {v:,}" for k, v in result["row_counts"].items() if v)
        click.echo(f"{result['label']} ({short(result['version_digest'])}, {result['format']}): "
                   f"{state}; {counts}")
        external = result.get("external_scores")
        if external:
            click.echo(f"  official scores: {external['written']:,} of {external['variants']:,} segment-level "
                       f"variants written to the segment-score store ({external['rows']:,} rows)")
        for warning in result["warnings"]:
            click.echo(f"  warning: {warning}")


@click.group("datasets")
def datasets() -> None:
    """List and inspect ingested datasets."""


@datasets.command("list")
@click.option("--all", "all_versions", is_flag=True, help="Every version, not only the latest.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_command(all_versions: bool, as_json: bool) -> None:
    """The datasets in the catalog (latest version of each unless --all)."""
    from assay.catalog.dataset_versions import list_versions
    from assay.catalog.engine import session_scope

    with session_scope() as session:
        rows = [version_summary(v) for v in list_versions(session, all_versions=all_versions)]
    if as_json:
        emit_json(rows)
        return
    print_catalog_table(rows)


@datasets.command("show")
@click.argument("ref", metavar="NAME[@VERSION]")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_command(ref: str, as_json: bool) -> None:
    """One dataset version: digest, source files with sha256, row counts, systems, warnings, and what
    its format recorded about the human scores and references (weighting scheme, reference system,
    primary human score, human systems)."""
    from assay.config import load_settings

    detail = describe_version(load_settings(), ref)
    if as_json:
        emit_json(detail)
        return
    click.echo(f"{detail['label']}  digest {detail['version_digest']}")
    click.echo(f"  format {detail['format']}, ingested {detail['created_at']} by {detail['code_version']}")
    click.echo(f"  source {detail['source_path']}")
    for line in version_fact_lines(detail["info"]):
        click.echo(f"  {line}")
    click.echo("  rows: " + ", ".join(f"{k} {v:,}" for k, v in detail["row_counts"].items()))
    groups = sorted({s["group"] for s in detail["systems"]})
    click.echo(f"  {len(detail['systems'])} systems over {len(groups)} groups: {', '.join(groups)}")
    click.echo(f"  {len(detail['source_files'])} source files (sha256 in --json)")
    agreement = detail["rater_agreement"]
    if agreement is not None:
        alpha, tau = agreement["krippendorff_alpha_interval"], agreement["kendall_tau_b_mean"]
        if agreement["pairable_units"] == 0:
            click.echo(f"  raters: {agreement['raters']}; every output was rated by one rater, so agreement "
                       "cannot be measured")
        else:
            click.echo(f"  raters: {agreement['raters']}; Krippendorff's alpha (interval) "
                       f"{'-' if alpha is None else f'{alpha:.3f}'} over {agreement['pairable_units']:,} outputs "
                       f"rated more than once; pairwise Kendall tau-b mean "
                       f"{'-' if tau is None else f'{tau:.3f}'} over {agreement['rater_pairs_with_tau']} rater "
                       "pairs (each pair in --json)")
    for warning in detail["warnings"]:
        click.echo(f"  warning: {warning}")
    click.echo("  versions: " + ", ".join(f"{v['version_number']} ({short(v['version_digest'])})"
                                         for v in detail["versions"]))


@click.command("sql")
@click.argument("query")
@click.option("--dataset", "pins", multiple=True, metavar="NAME@VERSION",
              help="Pin a dataset's views to a version (default: latest). Repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print rows as JSON objects.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
def sql_command(query: str, pins: tuple[str, ...], as_json: bool, as_csv: bool) -> None:
    """Run a read-only DuckDB query over the stores.

    Each dataset has views NAME (segment judgments), NAME_systems, NAME_outputs and
    NAME_rankings (non-alphanumerics in NAME become '_'); `segments`, `systems`, `outputs` and
    `rankings` union all datasets. Example: assay sql "SELECT \\"group\\", count(*) FROM wmt17 GROUP BY 1"

    `scores` joins every stored segment score with the judgments it scored (by segment key): metric,
    signature, dataset, version_digest, group, aspect, item_id, segment_id, system, is_human, score,
    extra, human_z, human_raw, rating_count, ratings, key, run_id (the function segment_key(source,
    references, candidate) computes a key). Example:
    assay sql "SELECT signature, corr(score, human_z) FROM scores WHERE dataset = 'wmt17' GROUP BY 1"
    """
    from assay.query.duck import run_user_query

    columns, rows = run_user_query(query, list(pins))
    if as_json:
        emit_json([dict(zip(columns, row, strict=True)) for row in rows])
    elif as_csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table()
        for column in columns:
            table.add_column(column)
        for row in rows:
            table.add_row(*("" if v is None else str(v) for v in row))
        Console().print(table)


def register(cli: click.Group) -> None:
    cli.add_command(ingest_command)
    cli.add_command(datasets)
    cli.add_command(sql_command)
