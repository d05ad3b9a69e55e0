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


class RecipeDefaultOption(click.Option):
    """An option whose help names the recipe's default for one TrainConfig field (``{default}`` in its
    help), read when the help is shown.

    The recipe imports the synthetic-data package (SQLAlchemy, pyarrow, numpy: 0.7 s). Built into the
    help at import, that cost fell on every ``assay`` command, since the CLI imports every command's
    options; a command that only parses its options never reads the help.
    """

    def __init__(self, *args: Any, default_of: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.default_of = default_of

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        if self.help is not None and "{default}" in self.help:
            self.help = self.help.replace("{default}", _stage_default(self.default_of))
        return super().get_help_record(ctx)


def _recipe_option(name: str, field: str, help: str, **kwargs: Any) -> Any:
    """``click.option`` for a hyper-parameter whose help ends with the recipe's default for ``field``."""
    return click.option(name, cls=RecipeDefaultOption, default_of=field, help=help, **kwargs)


def training_options(function: Any) -> Any:
    """The trainer's hyper-parameters as click options (--steps, --epochs, --lr, ...); each default is
    the recipe's for the stage (:func:`assay.training.recipes.stage_defaults`), as the help says."""
    options = [
        click.option("--steps", type=_type("steps"), help="Optimizer steps (or --epochs; default 1 epoch)."),
        click.option("--epochs", type=_type("epochs"), help="Passes over the training split."),
        _recipe_option("--batch-size", "batch_size", "Pairs per step over all processes ({default}).",
                       type=_type("batch_size")),
        _recipe_option("--lr", "learning_rate", "Peak learning rate of AdamW ({default}).", type=_type("lr")),
        _recipe_option("--warmup", "warmup_ratio",
                       "Share of steps with linear warm-up, then --lr-schedule ({default}).", type=_type("warmup")),
        _recipe_option("--lr-schedule", "lr_schedule",
                       "After the warm-up: linear decay to 0 at the last step; constant; wsd, "
                       "constant then a linear decay to 0 over the last 20 % of the steps; or hold-epoch, "
                       "constant to the end of the first epoch, then linear to 0 (at least the last 20 %) "
                       "({default}).", type=click.Choice(LR_SCHEDULES)),
        click.option("--weight-decay", type=_type("weight_decay"), help="AdamW weight decay."),
        _recipe_option("--clip", "max_grad_norm", "Gradient-norm clipping, 0 turns it off ({default}).",
                       type=_type("clip")),
        _recipe_option("--eval-every", "eval_every", "Validate every N steps, and after the last ({default}).",
                       type=_type("eval_every")),
        _recipe_option("--save-every", "save_every", "Save a resumable state every N steps ({default}).",
                       type=_type("save_every")),
        _recipe_option("--patience", "patience", "Stop after N validations without a better Kendall tau ({default}).",
                       type=_type("patience")),
        click.option("--seed", type=_type("seed"), help="Seed of the split, the heads, dropout and the batch order."),
        click.option("--validation-fraction", type=_type("validation_fraction"),
                     help="Share of items held out (default 0.1)."),
        click.option("--freeze-embeddings", is_flag=True, help="Keep the embedding layer fixed."),
        _recipe_option("--unfreeze", "unfreeze", "Staged unfreezing, e.g. 0:2,500:6 ({default}).",
                       metavar="STEP:BLOCKS,..."),
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
