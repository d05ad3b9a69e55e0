"""``assay train``: BLEURT-style pre-training and fine-tuning (Sellam et al., 2020), one stage or
the whole recipe; every stage registers its checkpoint in the catalog with its lineage."""

from __future__ import annotations

from typing import Any

import click

from assay.cli.options import quiet_option
from assay.cli.output import emit_json
from assay.cli.training_options import check_config, config_from_options, training_options
from assay.errors import UsageError
from assay.provenance import short


@click.command("train")
@click.option("--stage", type=click.Choice(["pretrain", "finetune"]), help="One stage.")
@click.option("--recipe", type=click.Choice(["bleurt"]), help="The paper's stages, one after the other.")
@click.option("--data", "data", multiple=True, metavar="NAME[@VERSION]",
              help="Rated datasets to fine-tune on, or the synthetic dataset to pre-train on.")
@click.option("--init", metavar="CHECKPOINT|ENCODER",
              help="Start from a checkpoint (name, digest prefix or folder) or an encoder (folder or hub id); "
                   "default: the embedded all-MiniLM-L6-v2.")
@click.option("--name", help="Name of the checkpoint (default: stage, data and seed). --resume needs it.")
@click.option("--resume", is_flag=True, help="Continue the named run from its last saved state.")
@click.option("--group", "groups", multiple=True, help="Fine-tune on these groups only (default: to-English pairs).")
@click.option("--aspect", help="The rated aspect to fine-tune on (WebNLG: fluency, grammar or semantics).")
@click.option("--exclude", multiple=True, metavar="NAME", help="Datasets that must not be trained on.")
@click.option("--signal", "signals", multiple=True, help="Pre-train on these signals only (default: all stored).")
@click.option("--processes", type=int, default=1, show_default=True,
              help="Data-parallel processes under torchrun (one per GPU; gloo on the CPU); same global batch.")
@training_options
@click.option("--evaluate-on", multiple=True, metavar="NAME",
              help="Recipe: datasets the metric is evaluated on, never trained on (default wmt17).")
@click.option("--from", "sources", multiple=True, metavar="NAME[@VERSION]",
              help="Recipe: datasets the synthetic sentences come from (default wmt16, wmt18).")
@click.option("--synthetic", metavar="NAME[@VERSION]", help="Recipe: pre-train on this synthetic version.")
@click.option("--pretrained", metavar="CHECKPOINT",
              help="Recipe: fine-tune this pre-trained checkpoint instead of synthesizing and pre-training again.")
@click.option("--pairs", type=int, help="Recipe: synthetic pairs to make (default 80,000).")
@click.option("--masked-lm", metavar="MODEL", help="Recipe: fill masks with this Hugging Face masked LM.")
@click.option("--failure-modes", "failure_modes", type=float, metavar="SHARE",
              help="Recipe: share of synthetic pairs that are MetricX-24's degenerate candidates (empty, gibberish, "
                   "unrelated, under-translated, duplicated, a copy; default 0.1, 0 for none).")
@click.option("--no-pretraining", is_flag=True, help="Recipe: fine-tune the encoder directly (no synthetic stage).")
@click.option("--webnlg", metavar="NAME[@VERSION]", help="Recipe: a third stage on WebNLG ratings.")
@click.option("--webnlg-aspect", help="Recipe: the WebNLG aspect (default semantics).")
@click.option("--pretrain-steps", type=int, help="Recipe: pre-training steps (default: 1 epoch).")
@click.option("--pretrain-epochs", type=float, help="Recipe: pre-training epochs.")
@click.option("--finetune-steps", type=int, help="Recipe: fine-tuning steps.")
@click.option("--finetune-epochs", type=float, help="Recipe: fine-tuning epochs (default 6).")
@quiet_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def train_command(stage: str | None, recipe: str | None, data: tuple[str, ...], init: str | None, name: str | None,
                  resume: bool, groups: tuple[str, ...], aspect: str | None, exclude: tuple[str, ...],
                  signals: tuple[str, ...], processes: int, as_json: bool, evaluate_on: tuple[str, ...],
                  sources: tuple[str, ...], synthetic: str | None, pretrained: str | None,
                  pairs: int | None, masked_lm: str | None, failure_modes: float | None, no_pretraining: bool,
                  webnlg: str | None, webnlg_aspect: str | None, pretrain_steps: int | None,
                  pretrain_epochs: float | None, finetune_steps: int | None, finetune_epochs: float | None,
                  **options: Any) -> None:
    """Train a BLEURT-style learned metric: --stage pretrain|finetune, or --recipe bleurt.

    Every stage plans first (data pinned by version and digest, evaluation sets never trained on),
    trains with transformers' Trainer (AdamW, warm-up and decay, clipping, length-grouped batches,
    validation on held-out items with Kendall tau and Pearson r, early stopping), saves resumable
    state every --save-every steps, exports the best step's checkpoint and registers it.
    """
    from assay.cli.runner import run_flow

    if (stage is None) == (recipe is None):
        raise UsageError("give --stage pretrain|finetune or --recipe bleurt")
    if recipe is not None and processes != 1:
        raise UsageError("--processes applies to one --stage")
    if recipe is not None:
        recipe_options = {"evaluate_on": evaluate_on, "sources": sources, "synthetic": synthetic,
                          "pretrained": pretrained, "n_pairs": pairs,
                          "masked_lm": masked_lm, "failure_modes_share": failure_modes,
                          "webnlg": webnlg, "webnlg_aspect": webnlg_aspect,
                          "pretrain_steps": pretrain_steps, "pretrain_epochs": pretrain_epochs,
                          "finetune_steps": finetune_steps, "finetune_epochs": finetune_epochs}
        run_recipe_command(data, init, name, no_pretraining, signals, recipe_options, options, as_json)
        return
    recipe_only = [k for k, v in {"--evaluate-on": evaluate_on, "--from": sources, "--synthetic": synthetic,
                                  "--pretrained": pretrained,
                                  "--pairs": pairs, "--masked-lm": masked_lm, "--failure-modes": failure_modes,
                                  "--webnlg": webnlg,
                                  "--no-pretraining": no_pretraining, "--pretrain-steps": pretrain_steps,
                                  "--finetune-steps": finetune_steps, "--pretrain-epochs": pretrain_epochs,
                                  "--finetune-epochs": finetune_epochs}.items() if v]
    if recipe_only:
        raise UsageError(f"{', '.join(recipe_only)} apply to --recipe, not to one --stage")
    config = config_from_options(options, stage)
    if stage == "finetune":
        if not data:
            raise UsageError("--stage finetune needs --data NAME[@VERSION] (rated datasets)")
        result = run_flow("finetune", list(data), init=init, config=config, name=name, resume=resume,
                          exclude=list(exclude), groups=list(groups) or None, aspect=aspect, processes=processes)
    else:
        if len(data) != 1:
            raise UsageError("--stage pretrain needs one --data NAME[@VERSION]: a synthetic dataset (`assay synth`)")
        result = run_flow("pretrain", data[0], init=init, config=config, name=name, resume=resume,
                          exclude=list(exclude), signals=list(signals) or None, processes=processes)
    if as_json:
        emit_json(result)
        return
    print_stage(result)


def _stage_overrides(steps: int | None, epochs: float | None) -> dict[str, Any] | None:
    if steps is not None and epochs is not None:
        raise UsageError("give steps or epochs for a stage, not both")
    if steps is not None:
        return {"max_steps": steps}
    if epochs is not None:
        return {"epochs": epochs}
    return None


def run_recipe_command(data: tuple[str, ...], init: str | None, name: str | None, no_pretraining: bool,
                       signals: tuple[str, ...], recipe_options: dict[str, Any], options: dict[str, Any],
                       as_json: bool) -> None:
    """``assay train --recipe bleurt``: the whole recipe as one ``train`` flow."""
    from assay.cli.runner import run_flow
    from assay.training.recipes import BleurtRecipe

    recipe_options = {k: (list(v) or None) if isinstance(v, tuple) else v for k, v in recipe_options.items()}
    general = {k: v for k, v in options.items() if v not in (None, False)}
    shared = {k: general.pop(k) for k in ("seed", "device", "batch_size") if k in general}
    pooling = general.pop("head_input", None)  # the recipe's pooling: every stage's heads read it
    if general:
        raise UsageError(f"--{', --'.join(k.replace('_', '-') for k in general)} apply to one --stage; the recipe "
                         "takes --pretrain-steps/--pretrain-epochs and --finetune-steps/--finetune-epochs")
    pretrain = _stage_overrides(recipe_options.pop("pretrain_steps"), recipe_options.pop("pretrain_epochs")) or {}
    finetune = _stage_overrides(recipe_options.pop("finetune_steps"), recipe_options.pop("finetune_epochs")) or {}
    stage_shared = {k: v for k, v in shared.items() if k != "seed"}
    recipe = BleurtRecipe().with_overrides(
        **recipe_options, finetune_data=list(data) or None, init=init, name=name, seed=shared.get("seed"),
        signals=list(signals) or None, pretraining=False if no_pretraining else None, pooling=pooling,
        pretrain={**pretrain, **stage_shared}, finetune={**finetune, **stage_shared},
        webnlg_finetune={**finetune, **stage_shared})
    for stage in ("pretrain", "finetune"):
        check_config(recipe.stage_config(stage))
    result = run_flow("train", recipe.as_dict())
    if as_json:
        emit_json(result)
        return
    for stage, out in result["stages"].items():
        if stage == "synthesize":
            click.echo(f"synthesize: {out['label']} ({out['rows']:,} pairs, {short(out['version_digest'])}) "
                       f"{'stored' if out['created'] else 'already stored'}, {out['stage_seconds']:.0f} s")
        else:
            print_stage(out)
    click.echo(f"final checkpoint: {result['checkpoint']}")


def print_stage(result: dict[str, Any]) -> None:
    reg = result["registered"]
    tau = result.get("best_kendall_tau")
    click.echo(f"{result['stage']}: checkpoint {reg['name']} ({short(reg['digest'])}) "
               f"{'registered' if reg['created'] else 'already registered'}")
    click.echo(f"  best step {result['best_step']} of {result['steps']}"
               + (f", validation Kendall tau {tau:.4f}" if tau is not None else "")
               + (" (stopped early)" if result.get("stopped_early") else ""))
    click.echo(f"  {result['n_train']:,} training / {result['n_validation']:,} validation pairs, "
               f"{result['pairs_per_second']:.1f} pairs/s on {result['device']}, {result['seconds']:.0f} s")
    click.echo(f"  {reg['path']}")


def register(cli: click.Group) -> None:
    cli.add_command(train_command)
