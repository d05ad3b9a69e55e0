"""``assay checkpoints list|show|register|export|watch|unwatch|watched|scan``: learned-metric checkpoints
in the catalog, and the shared folders the nightly scan registers new ones from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from assay.cli.output import emit_json
from assay.config import load_settings
from assay.nightly.defaults import SETTLE_SECONDS
from assay.provenance import short


@click.group("checkpoints")
def checkpoints() -> None:
    """Learned-metric checkpoints: each registered once by content digest, with its lineage."""


@checkpoints.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_command(as_json: bool) -> None:
    """Every registered checkpoint: name, digest, how it was made and from what."""
    from assay.checkpoints.registry import list_checkpoints

    rows = list_checkpoints(load_settings())
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("no checkpoints registered; `assay train` makes one, `assay checkpoints register PATH` adds one")
        return
    for row in rows:
        made = row["operation"] or "?"
        if row["parent"]:
            made += f" of {row['parent']}"
        data = ", ".join(d.get("label", "?") for d in row["datasets"]) if row["datasets"] else "-"
        best = f", best step {row['best_step']}" if row["best_step"] is not None else ""
        click.echo(f"{row['name']}  {short(row['digest'])}  {made}; data {data}{best}")


@checkpoints.command("show")
@click.argument("ref")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_command(ref: str, as_json: bool) -> None:
    """One checkpoint (NAME or digest prefix) in full: lineage, heads, validation curve, ancestors,
    its nightly history, recorded regressions and error analyses against its parent."""
    from assay.checkpoints.record import checkpoint_record

    info = checkpoint_record(load_settings(), ref)
    if as_json:
        emit_json(info)
        return
    _print_description(info)


def _print_description(info: dict[str, Any]) -> None:
    lineage = info["lineage"]
    click.echo(f"{info['name']}  digest {info['digest']}")
    click.echo(f"  folder      {info['path']}")
    click.echo(f"  base model  {info['base_model']}")
    click.echo(f"  made by     {info['operation'] or '?'}" + (f" of {info['parent']}" if info["parent"] else "")
               + (f" (run {info['run_id']})" if info["run_id"] else ""))
    click.echo(f"  heads       {', '.join(h.get('name', '?') for h in info['heads'])}")
    for data in lineage.get("datasets", []):
        click.echo(f"  data        {data.get('role', '')}: {data.get('label')} ({short(str(data.get('digest', '')))})")
    if lineage.get("excluded"):
        click.echo(f"  excluded    {', '.join(lineage['excluded'])} (never drawn from)")
    if lineage.get("hyperparameters"):
        hp = lineage["hyperparameters"]
        click.echo("  training    " + ", ".join(f"{k}={v}" for k, v in sorted(hp.items())))
    if lineage.get("seed") is not None:
        click.echo(f"  seed        {lineage['seed']}")
    if lineage.get("best_step") is not None:
        click.echo(f"  best step   {lineage['best_step']} of {lineage.get('steps', '?')}")
    curve = lineage.get("validation_curve") or []
    if curve:
        click.echo("  validation  step  tau     pearson")
        for point in curve:
            tau, r = point.get("val_kendall_tau"), point.get("val_pearson")
            click.echo(f"              {point.get('step'):>5}  {_num(tau)}  {_num(r)}")
    for ancestor in info["ancestors"]:
        click.echo(f"  ancestor    {ancestor['name']} ({short(ancestor['digest'])}, {ancestor['operation']})")
    click.echo(f"  code        {info['code_version']}")
    nights = {(p["suite"], p["label"]) for p in info["nightly"]}
    click.echo(f"  nightly     {len(info['nightly'])} correlation(s) from {len(nights)} suite dataset(s); "
               f"{len(info['regressions'])} regression(s) recorded (in --json)")
    for run in info["error_analysis"]:
        changed = [f"{c['cell']} {c['verdict']}" for c in run["cells"] if c["verdict"] not in (None, "unchanged")]
        click.echo(f"  errors      {run['dataset']}@{run['version_number']} by {run['by']} against "
                   f"{run['parent_signature']}: {', '.join(changed) or 'no cell changed'}")


def _num(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, int | float) else "   -  "


@checkpoints.command("register")
@click.argument("path", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--name", help="Name to register it under (default: from the folder name).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def register_command(path: Path, name: str | None, as_json: bool) -> None:
    """Verify a checkpoint folder and register it by content digest (the same content again is a no-op)."""
    from assay.catalog.engine import get_engine

    settings = load_settings()
    get_engine(settings)  # an unreachable catalog is refused before torch is imported and the folder verified
    from assay.workers.checkpoint_registration import register_folder

    result = register_folder(settings, path, name=name)
    warning = _deliver_announcements()
    if as_json:
        emit_json({**result.as_dict(), "announcement_warning": warning})
        return
    state = "registered" if result.created else "already registered"
    click.echo(f"{result.name}  {result.ref.short}: {state} ({result.path})")
    for note in result.notes:
        click.echo(f"  note: {note}")


def _deliver_announcements() -> str | None:
    """Announce this and every earlier owed checkpoint to the team's Prefect server
    (``assay.checkpoint.registered``, :mod:`assay.checkpoints.outbox`): the checkpoint stays owed
    on a failure, and the next sweep evaluates it."""
    from assay.cli.runner import deliver_owed_announcements

    return deliver_owed_announcements()


@checkpoints.command("export")
@click.argument("ref")
@click.argument("destination", type=click.Path(path_type=Path))
def export_command(ref: str, destination: Path) -> None:
    """Copy checkpoint REF's files into a new folder DESTINATION (digest checked after the copy)."""
    from assay.workers.checkpoint_registration import export_checkpoint

    click.echo(str(export_checkpoint(load_settings(), ref, destination)))


@checkpoints.command("watch")
@click.argument("folder", type=click.Path(path_type=Path))
def watch_command(folder: Path) -> None:
    """Watch FOLDER: `assay checkpoints scan` (and the nightly flow) registers the checkpoint
    folders put in it. Shared by everyone using this catalog."""
    from assay.nightly.watched_folders import watch

    path, created = watch(load_settings(), folder)
    click.echo(f"{path}: " + ("watched" if created else "already watched"))


@checkpoints.command("unwatch")
@click.argument("folder", type=click.Path(path_type=Path))
def unwatch_command(folder: Path) -> None:
    """Stop watching FOLDER (registered checkpoints stay registered)."""
    from assay.errors import NotFoundError
    from assay.nightly.watched_folders import normalise, unwatch, watched

    settings = load_settings()
    if not unwatch(settings, folder):
        listed = ", ".join(watched(settings)) or "none"
        raise NotFoundError(f"{normalise(folder, must_exist=False)} is not watched (watched: {listed})")
    click.echo(f"{normalise(folder, must_exist=False)}: no longer watched")


@checkpoints.command("watched")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def watched_command(as_json: bool) -> None:
    """The watched folders."""
    from assay.nightly.watched_folders import watched

    folders = watched(load_settings())
    if as_json:
        emit_json(folders)
        return
    if not folders:
        click.echo("no folders watched; `assay checkpoints watch DIR` adds one")
    for folder in folders:
        click.echo(folder)


@checkpoints.command("scan")
@click.option("--settle", "settle", type=float, default=SETTLE_SECONDS, show_default=True,
              help="A folder is complete once nothing in it was modified for this many seconds.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def scan_command(settle: float, as_json: bool) -> None:
    """Register the new checkpoint folders in the watched folders (verified; known content is a
    no-op), and list every entry of the watched folders with what was done and why (the nightly
    sweep does the same scan)."""
    from assay.nightly.watched_folders import watched
    from assay.workers.checkpoint_watch import scan_watched

    settings = load_settings()
    report = scan_watched(settings, settle_seconds=settle)
    _deliver_announcements()
    if as_json:
        emit_json(report.as_dict())
        return
    if not report.entries and not watched(settings):
        click.echo("no folders watched; `assay checkpoints watch DIR` adds one")
        return
    for entry in report.entries:
        click.echo(f"{entry.status:<18}  {entry.path}: {entry.reason}")
    click.echo(report.summary())


def register(cli: click.Group) -> None:
    cli.add_command(checkpoints)
