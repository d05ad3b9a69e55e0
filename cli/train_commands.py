"""``assay train``: BLEURT-style pre-training and fine-tuning (Sellam et al., 2020), one stage or
the whole recipe; every stage registers its checkpoint in the catalog with its lineage."""

from __future__ import annotations

from typing import Any

import click

from assay.cli.output import emit_json
from assay.errors import UsageError


def parse_unfreeze(text: str | None) -> list[list[int]]:
    """``0:2,500:6`` -> ``[[0, 2], [500, 6]]`` (from step 0 train the top 2 blocks, from 500 the top 6)."""
    if not text:
        return []
    stages = []
    for part in text.split(","):
        step, sep, blocks = part.partition(":")
        if not sep or not step.strip().isdigit() or not blocks.strip().isdigit():
            raise UsageError(f"--unfreeze {text!r}: expected STEP:BLOCKS[,STEP:BLOCKS...], e.g. 0:2,500:6")
        stages.append([int(step), int(blocks)])
    return stages


def config_from_options(options: dict[str, Any]) -> dict[str, Any]:
    """The trainer's hyper-parameters the options name (the rest keep the paper's defaults)."""
    steps, epochs = options.get("steps"), options.get("epochs")
    if steps is not None and epochs is not None:
        raise UsageError("give --steps or --epochs, not both")
    config: dict[str, Any] = {"max_steps": steps} if steps is not None else {"epochs": epochs if epochs else 1.0}
    mapping = {"batch_size": "batch_size", "lr": "learning_rate", "warmup": "warmup_ratio",
               "weight_decay": "weight_decay", "eval_every": "eval_every", "save_every": "save_every",
               "patience": "patience", "seed": "seed", "validation_fraction": "validation_fraction",
               "device": "device", "max_length": "max_length", "clip": "max_grad_norm"}
    for option, field in mapping.items():
        if options.get(option) is not None:
            config[field] = options[option]
    if options.get("freeze_embeddings"):
        config["freeze_embeddings"] = True
    if options.get("no_length_grouping"):
        config["group_by_length"] = False
    unfreeze = parse_unfreeze(options.get("unfreeze"))
    if unfreeze:
        config["unfreeze"] = unfreeze
    check_config(config)  # one error line before any flow starts
    return config


def training_options(function: Any) -> Any:
    options = [
        click.option("--steps", type=int, help="Optimizer steps (or --epochs; default 1 epoch)."),
        click.option("--epochs", type=float, help="Passes over the training split."),
        click.option("--batch-size", type=int, help="Pairs per step over all processes (default 32, the paper's)."),
        click.option("--lr", type=float, help="Peak learning rate of AdamW (default 1e-5, the paper's)."),
        click.option("--warmup", type=float, help="Share of steps with linear warm-up (then linear decay)."),
        click.option("--weight-decay", type=float, help="AdamW weight decay."),
        click.option("--clip", type=float, help="Gradient-norm clipping (default 1.0; 0 turns it off)."),
        click.option("--eval-every", type=int, help="Validate every N steps (and after the last)."),
        click.option("--save-every", type=int, help="Save a resumable state every N steps."),
        click.option("--patience", type=int, help="Stop after N validations without a better Kendall tau."),
        click.option("--seed", type=int, help="Seed of the split, the heads, dropout and the batch order."),
        click.option("--validation-fraction", type=float, help="Share of items held out (default 0.1)."),
        click.option("--freeze-embeddings", is_flag=True, help="Keep the embedding layer fixed."),
        click.option("--unfreeze", metavar="STEP:BLOCKS,...", help="Staged unfreezing, e.g. 0:2,500:6."),
        click.option("--no-length-grouping", is_flag=True, help="Random batches instead of length-grouped ones."),
        click.option("--max-length", type=int, help="Token budget per pair (default: the checkpoint's)."),
        click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), help="Where to train (default auto)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


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
@click.option("--pairs", type=int, help="Recipe: synthetic pairs to make (default 40,000).")
@click.option("--masked-lm", metavar="MODEL", help="Recipe: fill masks with this Hugging Face masked LM.")
@click.option("--no-pretraining", is_flag=True, help="Recipe: fine-tune the encoder directly (no synthetic stage).")
@click.option("--webnlg", metavar="NAME[@VERSION]", help="Recipe: a third stage on WebNLG ratings.")
@click.option("--webnlg-aspect", help="Recipe: the WebNLG aspect (default semantics).")
@click.option("--pretrain-steps", type=int, help="Recipe: pre-training steps (default: 1 epoch).")
@click.option("--pretrain-epochs", type=float, help="Recipe: pre-training epochs.")
@click.option("--finetune-steps", type=int, help="Recipe: fine-tuning steps.")
@click.option("--finetune-epochs", type=float, help="Recipe: fine-tuning epochs (default 4).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def train_command(stage: str | None, recipe: str | None, data: tuple[str, ...], init: str | None, name: str | None,
                  resume: bool, groups: tuple[str, ...], aspect: str | None, exclude: tuple[str, ...],
                  signals: tuple[str, ...], processes: int, as_json: bool, evaluate_on: tuple[str, ...],
                  sources: tuple[str, ...],
                  synthetic: str | None, pairs: int | None, masked_lm: str | None, no_pretraining: bool,
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
        recipe_options = {"evaluate_on": evaluate_on, "sources": sources, "synthetic": synthetic, "n_pairs": pairs,
                          "masked_lm": masked_lm, "webnlg": webnlg, "webnlg_aspect": webnlg_aspect,
                          "pretrain_steps": pretrain_steps, "pretrain_epochs": pretrain_epochs,
                          "finetune_steps": finetune_steps, "finetune_epochs": finetune_epochs}
        run_recipe_command(data, init, name, no_pretraining, signals, recipe_options, options, as_json)
        return
    recipe_only = [k for k, v in {"--evaluate-on": evaluate_on, "--from": sources, "--synthetic": synthetic,
                                  "--pairs": pairs, "--masked-lm": masked_lm, "--webnlg": webnlg,
                                  "--no-pretraining": no_pretraining, "--pretrain-steps": pretrain_steps,
                                  "--finetune-steps": finetune_steps, "--pretrain-epochs": pretrain_epochs,
                                  "--finetune-epochs": finetune_epochs}.items() if v]
    if recipe_only:
        raise UsageError(f"{', '.join(recipe_only)} apply to --recipe, not to one --stage")
    config = config_from_options(options)
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
    if general:
        raise UsageError(f"--{', --'.join(k.replace('_', '-') for k in general)} apply to one --stage; the recipe "
                         "takes --pretrain-steps/--pretrain-epochs and --finetune-steps/--finetune-epochs")
    pretrain = _stage_overrides(recipe_options.pop("pretrain_steps"), recipe_options.pop("pretrain_epochs")) or {}
    finetune = _stage_overrides(recipe_options.pop("finetune_steps"), recipe_options.pop("finetune_epochs")) or {}
    stage_shared = {k: v for k, v in shared.items() if k != "seed"}
    recipe = BleurtRecipe().with_overrides(
        **recipe_options, finetune_data=list(data) or None, init=init, name=name, seed=shared.get("seed"),
        signals=list(signals) or None, pretraining=False if no_pretraining else None,
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
            click.echo(f"synthesize: {out['label']} ({out['rows']:,} pairs, {out['version_digest'][:12]}) "
                       f"{'stored' if out['created'] else 'already stored'}, {out['stage_seconds']:.0f} s")
        else:
            print_stage(out)
    click.echo(f"final checkpoint: {result['checkpoint']}")


def check_config(config: dict[str, Any]) -> None:
    """Refuse hyper-parameters the trainer would refuse, before a flow starts."""
    from assay.workers.training.config import TrainConfig

    TrainConfig(**config)


def print_stage(result: dict[str, Any]) -> None:
    reg = result["registered"]
    tau = result.get("best_kendall_tau")
    click.echo(f"{result['stage']}: checkpoint {reg['name']} ({reg['digest'][:12]}) "
               f"{'registered' if reg['created'] else 'already registered'}")
    click.echo(f"  best step {result['best_step']} of {result['steps']}"
               + (f", validation Kendall tau {tau:.4f}" if tau is not None else "")
               + (" (stopped early)" if result.get("stopped_early") else ""))
    click.echo(f"  {result['n_train']:,} training / {result['n_validation']:,} validation pairs, "
               f"{result['pairs_per_second']:.1f} pairs/s on {result['device']}, {result['seconds']:.0f} s")
    click.echo(f"  {reg['path']}")


def register(cli: click.Group) -> None:
    cli.add_command(train_command)
