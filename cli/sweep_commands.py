"""``assay sweep``: search the fine-tuning stage's hyper-parameters with Optuna (TPE sampling,
median pruning), each trial a ``train`` flow run; the study lives beside the catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from assay.cli.options import quiet_option
from assay.cli.output import emit_json
from assay.provenance import short


@click.group("sweep")
def sweep_group() -> None:
    """Hyper-parameter sweeps of the fine-tuning stage (Optuna; the study beside the catalog)."""


@sweep_group.command("run")
@click.argument("space_file", type=click.Path(path_type=Path))
@click.option("--name", required=True, help="The sweep's name (its study; trial checkpoints are NAME-tN).")
@click.option("--trials", type=int, default=6, show_default=True,
              help="Finish this many trials (completed or pruned) in all, counting a resumed sweep's.")
@click.option("--resume", is_flag=True, help="Continue the named sweep (its space must be unchanged).")
@click.option("--on-killed", type=click.Choice(["retry", "skip"]), default="retry", show_default=True,
              help="Resuming: a trial the kill interrupted is run again first (retry) or counted as failed (skip).")
@click.option("--parallel", type=int, help="Trials at once on the work pool (default: the pool's concurrency limit).")
@click.option("--in-process", is_flag=True, help="Run the trials in this flow run even when `train` is deployed.")
@click.option("--seed", type=int, default=12345, show_default=True, help="The sampler's seed.")
@quiet_option
@click.option("--json", "as_json", is_flag=True, help="Print the study as JSON.")
def run_command(space_file: Path, name: str, trials: int, resume: bool, on_killed: str, parallel: int | None,
                in_process: bool, seed: int, as_json: bool) -> None:
    """Search the space declared in SPACE_FILE (TOML or YAML: [trial], [params.NAME], [pruner],
    [[enqueue]]).

    Each trial fine-tunes with the values the sampler chose, reports its validation Kendall tau at
    every evaluation and is stopped early when the pruner finds it below the median of earlier
    trials. Every trial's checkpoint is registered with the sweep, trial and space digest in its
    lineage. With the team's deployments (`assay deploy`) trials run on the `gpu` pool, several at
    once; otherwise here, one after the other.
    """
    from assay.cli.runner import run_flow
    from assay.errors import UsageError
    from assay.sweeps.space import load_space

    if trials < 1:
        raise UsageError(f"--trials {trials}: expected >= 1")
    if parallel is not None and parallel < 1:
        raise UsageError(f"--parallel {parallel}: expected >= 1")
    space = load_space(space_file)  # every mistake in the file is reported before anything runs
    _check_refs(space, name, resume)
    summary = run_flow("sweep", space.canonical(), name, trials, resume=resume, on_killed=on_killed, seed=seed,
                       parallel=parallel, in_process=in_process, space_path=str(space_file))
    for note in summary.pop("notes", []):
        click.echo(f"sweep {name}: {note}", err=True)
    if as_json:
        emit_json(summary)
    else:
        _print_summary(summary)


def _check_refs(space: Any, name: str, resume: bool) -> None:
    """What the space names must exist, and the sweep must (not) exist, before a flow starts;
    a refusal creates nothing (not even the study storage)."""
    from assay.config import load_settings
    from assay.errors import NotFoundError
    from assay.sweeps.storage import open_storage
    from assay.sweeps.study import storage_exists
    from assay.training.stage_request import StageRequest
    from assay.workers.training.stage_steps import plan_stage
    from assay.workers.training.sweep_trials import open_study_check

    settings = load_settings()
    config = space.trial_config(space.enqueue[0] if space.enqueue else {})
    plan_stage(settings, StageRequest(space.stage, space.data, init=space.init, config={**config, "max_steps": 1},
                                      name=f"{name}-check", exclude=space.exclude, groups=space.groups,
                                      aspect=space.aspect))
    if storage_exists(settings):
        open_study_check(open_storage(settings), name, space, resume=resume)
    elif resume:
        raise NotFoundError(f"no sweep named {name!r} to resume (known: none)")


@sweep_group.command("show")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the study as JSON.")
def show_command(name: str | None, as_json: bool) -> None:
    """The trials of sweep NAME (state, values, validation taus, steps, checkpoint) and the best;
    without NAME, every sweep."""
    from assay.config import load_settings
    from assay.workers.training.sweep_trials import list_sweeps, load_study, sweep_summary

    settings = load_settings()
    if name is None:
        sweeps = list_sweeps(settings)
        if as_json:
            emit_json(sweeps)
        elif not sweeps:
            click.echo("no sweeps yet: `assay sweep run SPACE.toml --name NAME` starts one")
        for sweep in [] if as_json else sweeps:
            best = "" if sweep["best_value"] is None else f", best tau {sweep['best_value']:.4f}"
            click.echo(f"{sweep['sweep']}: {sweep['n_trials']} trial(s){best}")
        return
    summary = sweep_summary(load_study(settings, name))
    if as_json:
        emit_json(summary)
    else:
        _print_summary(summary)


def _print_summary(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"sweep {summary['sweep']} (space {short(str(summary['space_digest']))})")
    for column in ("trial", "state", "values", "val tau", "validations", "steps", "checkpoint"):
        table.add_column(column, justify="right" if column in ("trial", "val tau", "validations", "steps") else "left")
    for t in summary["trials"]:
        values = ", ".join(f"{k}={_fmt(v)}" for k, v in t["params"].items())
        note = f" (retry of {t['retry_of']})" if t.get("retry_of") is not None else ""
        table.add_row(str(t["number"]), t["state"] + note, values,
                      "" if t["value"] is None else f"{t['value']:.4f}", str(len(t["intermediate"])),
                      "" if t["steps"] is None else str(t["steps"]), t["checkpoint"] or (t.get("failure") or ""))
    Console(width=max(120, Console().width)).print(table)
    best = summary["best"]
    click.echo(f"best: trial {best['number']}, validation tau {best['value']:.4f}, checkpoint {best['checkpoint']}"
               if best else "best: none completed yet")
    click.echo(f"steps trained: {summary['steps_trained']}")


def _fmt(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def register(cli: click.Group) -> None:
    cli.add_command(sweep_group)
