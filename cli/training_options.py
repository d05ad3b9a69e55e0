"""The training options shared by ``assay train`` and ``assay robustness``: the trainer's
hyper-parameters as click options, turned into a config and checked by
:class:`~assay.training.config.TrainConfig` (no torch) before any flow starts."""

from __future__ import annotations

from typing import Any

import click

from assay.errors import UsageError
from assay.training.config import DEFAULT_POOLING, FIELD_TYPES, HEAD_INPUTS, LR_SCHEDULES, TrainConfig

#: each option that sets one TrainConfig field as given, and that field; its type is the field's
#: (:data:`assay.training.config.FIELD_TYPES`). ``--steps``/``--epochs`` (one of them),
#: ``--freeze-embeddings``, ``--no-length-grouping`` and ``--unfreeze`` are read apart.
OPTION_FIELDS = {"batch_size": "batch_size", "lr": "learning_rate", "warmup": "warmup_ratio",
                 "lr_schedule": "lr_schedule",
                 "weight_decay": "weight_decay", "eval_every": "eval_every", "save_every": "save_every",
                 "patience": "patience", "seed": "seed", "validation_fraction": "validation_fraction",
                 "device": "device", "max_length": "max_length", "clip": "max_grad_norm", "head_input": "head_input"}
#: ``--steps`` and ``--epochs``: one of them sets its field, the other stays unset
LENGTH_FIELDS = {"steps": "max_steps", "epochs": "epochs"}


def _type(option: str) -> type:
    """The type of the option's value: its TrainConfig field's."""
    return FIELD_TYPES[{**LENGTH_FIELDS, **OPTION_FIELDS}[option]]


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


def config_from_options(options: dict[str, Any], stage: str) -> dict[str, Any]:
    """The trainer's hyper-parameters for one ``stage`` (``pretrain`` or ``finetune``): the recipe's
    settings for that stage (:func:`assay.training.recipes.stage_defaults`), with what the options
    name on top; the length is the options' (default one epoch)."""
    from assay.training.recipes import stage_defaults

    steps, epochs = options.get("steps"), options.get("epochs")
    if steps is not None and epochs is not None:
        raise UsageError("give --steps or --epochs, not both")
    config: dict[str, Any] = dict(stage_defaults(stage))
    config.update({"max_steps": steps} if steps is not None else {"epochs": epochs if epochs else 1.0})
    for option, field in OPTION_FIELDS.items():
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


def _shown(field: str, value: Any) -> str:
    if field == "unfreeze":
        return ",".join(f"{s}:{n}" for s, n in value) if value else "all blocks"
    return "none" if value is None else str(value)


def _stage_default(field: str) -> str:
    """Where a stage's default for ``field`` comes from, for the options' help: the recipe's value per
    stage (:func:`assay.training.recipes.stage_defaults`), or TrainConfig's where the recipe sets none."""
    from assay.training.recipes import stage_defaults

    spec = TrainConfig.__dataclass_fields__[field]
    default = spec.default_factory() if callable(spec.default_factory) else spec.default
    recipe = {stage: stage_defaults(stage) for stage in ("finetune", "pretrain")}
    values = {stage: settings.get(field, default) for stage, settings in recipe.items()}
    source = ", the recipe's" if any(field in settings for settings in recipe.values()) else ""
    if values["finetune"] == values["pretrain"]:
        return f"default {_shown(field, values['finetune'])}{source}"
    return (f"default {_shown(field, values['finetune'])} fine-tuning, {_shown(field, values['pretrain'])} "
            f"pre-training{source}")


def training_options(function: Any) -> Any:
    """The trainer's hyper-parameters as click options (--steps, --epochs, --lr, ...); each default is
    the recipe's for the stage (:func:`assay.training.recipes.stage_defaults`), as the help says."""
    options = [
        click.option("--steps", type=_type("steps"), help="Optimizer steps (or --epochs; default 1 epoch)."),
        click.option("--epochs", type=_type("epochs"), help="Passes over the training split."),
        click.option("--batch-size", type=_type("batch_size"),
                     help=f"Pairs per step over all processes ({_stage_default('batch_size')})."),
        click.option("--lr", type=_type("lr"),
                     help=f"Peak learning rate of AdamW ({_stage_default('learning_rate')})."),
        click.option("--warmup", type=_type("warmup"),
                     help=f"Share of steps with linear warm-up, then --lr-schedule "
                          f"({_stage_default('warmup_ratio')})."),
        click.option("--lr-schedule", type=click.Choice(LR_SCHEDULES),
                     help="After the warm-up: linear decay to 0 at the last step; constant; wsd, "
                          "constant then a linear decay to 0 over the last 20 % of the steps; or hold-epoch, "
                          "constant to the end of the first epoch, then linear to 0 (at least the last 20 %) "
                          f"({_stage_default('lr_schedule')})."),
        click.option("--weight-decay", type=_type("weight_decay"), help="AdamW weight decay."),
        click.option("--clip", type=_type("clip"),
                     help=f"Gradient-norm clipping, 0 turns it off ({_stage_default('max_grad_norm')})."),
        click.option("--eval-every", type=_type("eval_every"),
                     help=f"Validate every N steps, and after the last ({_stage_default('eval_every')})."),
        click.option("--save-every", type=_type("save_every"),
                     help=f"Save a resumable state every N steps ({_stage_default('save_every')})."),
        click.option("--patience", type=_type("patience"),
                     help=f"Stop after N validations without a better Kendall tau ({_stage_default('patience')})."),
        click.option("--seed", type=_type("seed"), help="Seed of the split, the heads, dropout and the batch order."),
        click.option("--validation-fraction", type=_type("validation_fraction"),
                     help="Share of items held out (default 0.1)."),
        click.option("--freeze-embeddings", is_flag=True, help="Keep the embedding layer fixed."),
        click.option("--unfreeze", metavar="STEP:BLOCKS,...",
                     help=f"Staged unfreezing, e.g. 0:2,500:6 ({_stage_default('unfreeze')})."),
        click.option("--no-length-grouping", is_flag=True, help="Random batches instead of length-grouped ones."),
        click.option("--max-length", type=_type("max_length"),
                     help="Token budget per pair (default: the checkpoint's)."),
        click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), help="Where to train (default auto)."),
        click.option("--head-input", type=click.Choice(HEAD_INPUTS),
                     help=f"What the heads of a new checkpoint read (default {DEFAULT_POOLING}; an --init checkpoint "
                          "keeps its own)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def check_config(config: dict[str, Any]) -> None:
    """Refuse hyper-parameters the trainer would refuse, before a flow starts (the trainer's own
    :class:`~assay.training.config.TrainConfig`, which needs no torch)."""
    TrainConfig(**config)
