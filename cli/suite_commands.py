"""``assay suite define|list|show``: the evaluation suites the nightly evaluation runs.

A suite lists dataset versions, each with its levels, statistics and (optionally) groups::

    assay suite define nightly --entry wmt17@1:seg:kendall,pearson --entry wmt18:sys:pearson
    assay suite define wmt-seg --dataset wmt16 --dataset wmt17 --level seg --stat kendall --stat pearson
    assay suite define nightly --file suite.json      # {"entries": [{"dataset": ..., "levels": [...], ...}]}
    assay suite define nightly --all-datasets         # every ingested dataset, pearson and kendall

``--entry`` is ``DATASET:LEVELS[:STATISTICS[:GROUPS]]`` with comma-separated lists (an empty
STATISTICS means Pearson and Kendall). A bare dataset name pins its latest version now. On MQM
data, LEVELS may name the WMT24 protocol and the error analysis instead of levels::

    assay suite define nightly --entry mqm-wmt23-ende:wmt24,errors   # SPA, acc-t, their mean; blind spots
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from assay.cli.output import emit_json
from assay.config import load_settings
from assay.errors import InputError, UsageError
from assay.provenance import short

ENTRY_SYNTAX = ("DATASET:LEVELS[:STATISTICS[:GROUPS]], e.g. wmt17@1:seg:kendall,pearson, wmt18:sys:pearson:de-en "
                "or mqm-wmt23-ende:wmt24,errors")
PROTOCOL_LEVELS = ("wmt24",)
"""Names accepted among LEVELS that select a protocol (its own levels) instead."""
ERRORS_LEVEL = "errors"
"""The name among LEVELS that adds the error analysis (MQM data)."""


def levels_entry(levels: list[str]) -> dict[str, Any]:
    """The entry keys for LEVELS: ``levels``, or ``protocol`` for a protocol name, plus ``errors``."""
    names = [lv.strip() for lv in levels if lv.strip()]
    entry: dict[str, Any] = {}
    protocols = [lv for lv in names if lv in PROTOCOL_LEVELS]
    if len(protocols) > 1 or (protocols and len(set(names) - {ERRORS_LEVEL}) > 1):
        raise UsageError(f"levels {','.join(names)}: a protocol ({', '.join(PROTOCOL_LEVELS)}) fixes its own "
                         "levels; name it alone (with 'errors' if wanted)")
    if protocols:
        entry["protocol"] = protocols[0]
    else:
        entry["levels"] = [lv for lv in names if lv != ERRORS_LEVEL]
    if ERRORS_LEVEL in names:
        entry["errors"] = True
    return entry


@click.group("suite")
def suite() -> None:
    """Evaluation suites: datasets pinned by version x levels x statistics, named and versioned."""


def parse_entry(text: str) -> dict[str, Any]:
    """``wmt17@1:seg,sys:kendall,pearson:de-en,fi-en`` as a suite entry mapping."""
    parts = text.split(":")
    if not 2 <= len(parts) <= 4 or not parts[0] or not parts[1]:
        raise UsageError(f"--entry {text!r}: expected {ENTRY_SYNTAX}")
    entry: dict[str, Any] = {"dataset": parts[0], **levels_entry(parts[1].split(","))}
    if len(parts) > 2 and parts[2]:
        entry["statistics"] = parts[2]
    if len(parts) > 3 and parts[3]:
        entry["groups"] = parts[3]
    return entry


def _read_file(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON: {exc.msg}", line=exc.lineno) from exc
    entries = data.get("entries") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise InputError(path, "no list of entries", expected='{"entries": [{"dataset": "wmt17@1", '
                         '"levels": ["seg"], "statistics": ["kendall"]}]} or a JSON list of such entries')
    return entries


@suite.command("define")
@click.argument("name")
@click.option("--entry", "entries", multiple=True, metavar="SPEC",
              help=f"A dataset entry (repeatable): {ENTRY_SYNTAX}.")
@click.option("--dataset", "datasets", multiple=True, metavar="NAME[@VERSION]",
              help="A dataset (repeatable), evaluated at every --level with every --stat.")
@click.option("--level", "levels", multiple=True, type=click.Choice(["seg", "sys", *PROTOCOL_LEVELS, ERRORS_LEVEL]),
              help="Level for --dataset; wmt24 (the protocol) and errors (the error analysis) on MQM data.")
@click.option("--stat", "--statistic", "statistics", multiple=True,
              help="Statistic for --dataset (default: pearson and kendall).")
@click.option("--group", "groups", multiple=True, help="Only these groups of each --dataset (default: all).")
@click.option("--file", "file", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help='A JSON file: {"entries": [{"dataset", "levels", "statistics", "groups"}, ...]}.')
@click.option("--all-datasets", is_flag=True, help="Every ingested dataset's latest version, pearson and kendall.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def define_command(name: str, entries: tuple[str, ...], datasets: tuple[str, ...], levels: tuple[str, ...],
                   statistics: tuple[str, ...], groups: tuple[str, ...], file: Path | None, all_datasets: bool,
                   as_json: bool) -> None:
    """Define suite NAME (a new version when the definition changed; the same definition is a no-op)."""
    from assay.nightly.suites import default_entries, define_suite, validate_suite_name

    validate_suite_name(name)
    if (levels or statistics or groups) and not datasets:
        raise UsageError("--level, --stat and --group apply to --dataset; with --entry write "
                         f"{ENTRY_SYNTAX}")
    sources = sum(bool(x) for x in (entries or datasets, file, all_datasets))
    if sources != 1:
        raise UsageError("give the entries one way: --entry/--dataset, or --file, or --all-datasets")
    settings = load_settings()
    spec: list[Any]
    if file is not None:
        spec = _read_file(file)
    elif all_datasets:
        spec = default_entries(settings)
    else:
        if datasets and not levels:
            raise UsageError("--dataset needs at least one --level (seg or sys)")
        spec = [parse_entry(text) for text in entries]
        spec += [{"dataset": d, **levels_entry(list(levels)), "statistics": list(statistics) or None,
                  "groups": list(groups) or None} for d in datasets]
    defined, created = define_suite(settings, name, spec)
    if as_json:
        emit_json({**defined.as_dict(), "created": created})
        return
    state = "defined" if created else "unchanged (same definition as its latest version)"
    click.echo(f"{defined.ref}: {state}; signature {defined.signature[:16]}")
    _print_entries(defined.as_dict()["entries"])


def _print_entries(entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        cells = "; ".join(f"{level}: {', '.join(stats)}" for level, stats in entry["statistics_by_level"].items())
        groups = f"  groups {', '.join(entry['groups'])}" if entry.get("groups") else ""
        protocol = f"  protocol {entry['protocol']}" if entry.get("protocol") else ""
        errors = "  + error analysis" if entry.get("errors") else ""
        click.echo(f"  {entry['dataset']}  {short(entry['digest'])}  {cells}{protocol}{groups}{errors}")


@suite.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_command(as_json: bool) -> None:
    """Every suite version (the latest of each marked with *)."""
    from assay.nightly.suites import list_suites

    rows = list_suites(load_settings())
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("no suites defined; `assay suite define NAME --entry wmt17:seg:kendall,pearson` defines one")
    for row in rows:
        mark = "*" if row["latest"] else " "
        click.echo(f"{mark} {row['ref']}  {row['signature'][:16]}  {', '.join(row['datasets'])}")


@suite.command("show")
@click.argument("ref", metavar="NAME[@VERSION]")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_command(ref: str, as_json: bool) -> None:
    """One suite version (the latest unless pinned): its datasets, levels, statistics and signature."""
    from assay.nightly.suites import get_suite

    found = get_suite(load_settings(), ref)
    if as_json:
        emit_json(found.as_dict())
        return
    click.echo(f"{found.ref}  signature {found.signature}  (defined {found.created_at})")
    _print_entries(found.as_dict()["entries"])


def register(cli: click.Group) -> None:
    cli.add_command(suite)
