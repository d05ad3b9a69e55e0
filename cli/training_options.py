"""The training options shared by ``assay train`` and ``assay robustness``: the trainer's
hyper-parameters as click options, turned into a config and checked by
:class:`~assay.training.config.TrainConfig` (no torch) before any flow starts."""

from __future__ import annotations

from typing import Any

import click

from assay.errors import UsageError
from assay.training.config import FIELD_TYPES, HEAD_INPUTS, TrainConfig

#: each option that sets one TrainConfig field as given, and that field; its type is the field's
#: (:data:`assay.training.config.FIELD_TYPES`). ``--steps``/``--epochs`` (one of them),
#: ``--freeze-embeddings``, ``--no-length-grouping`` and ``--unfreeze`` are read apart.
OPTION_FIELDS = {"batch_size": "batch_size", "lr": "learning_rate", "warmup": "warmup_ratio",
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


def config_from_options(options: dict[str, Any]) -> dict[str, Any]:
    """The trainer's hyper-parameters the options name (the rest keep the paper's defaults)."""
    steps, epochs = options.get("steps"), options.get("epochs")
    if steps is not None and epochs is not None:
        raise UsageError("give --steps or --epochs, not both")
    config: dict[str, Any] = {"max_steps": steps} if steps is not None else {"epochs": epochs if epochs else 1.0}
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


def training_options(function: Any) -> Any:
    """The trainer's hyper-parameters as click options (--steps, --epochs, --lr, ...)."""
    options = [
        click.option("--steps", type=_type("steps"), help="Optimizer steps (or --epochs; default 1 epoch)."),
        click.option("--epochs", type=_type("epochs"), help="Passes over the training split."),
        click.option("--batch-size", type=_type("batch_size"),
                     help="Pairs per step over all processes (default 32, the paper's)."),
        click.option("--lr", type=_type("lr"), help="Peak learning rate of AdamW (default 1e-5, the paper's)."),
        click.option("--warmup", type=_type("warmup"),
                     help="Share of steps with linear warm-up (then linear decay)."),
        click.option("--weight-decay", type=_type("weight_decay"), help="AdamW weight decay."),
        click.option("--clip", type=_type("clip"), help="Gradient-norm clipping (default 1.0; 0 turns it off)."),
        click.option("--eval-every", type=_type("eval_every"), help="Validate every N steps (and after the last)."),
        click.option("--save-every", type=_type("save_every"), help="Save a resumable state every N steps."),
        click.option("--patience", type=_type("patience"),
                     help="Stop after N validations without a better Kendall tau."),
        click.option("--seed", type=_type("seed"), help="Seed of the split, the heads, dropout and the batch order."),
        click.option("--validation-fraction", type=_type("validation_fraction"),
                     help="Share of items held out (default 0.1)."),
        click.option("--freeze-embeddings", is_flag=True, help="Keep the embedding layer fixed."),
        click.option("--unfreeze", metavar="STEP:BLOCKS,...", help="Staged unfreezing, e.g. 0:2,500:6."),
        click.option("--no-length-grouping", is_flag=True, help="Random batches instead of length-grouped ones."),
        click.option("--max-length", type=_type("max_length"),
                     help="Token budget per pair (default: the checkpoint's)."),
        click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), help="Where to train (default auto)."),
        click.option("--head-input", type=click.Choice(HEAD_INPUTS),
                     help="What the heads of a new checkpoint read (default cls; with --recipe the recipe's "
                          "pooling, mean; an --init checkpoint keeps its own)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def check_config(config: dict[str, Any]) -> None:
    """Refuse hyper-parameters the trainer would refuse, before a flow starts (the trainer's own
    :class:`~assay.training.config.TrainConfig`, which needs no torch)."""
    TrainConfig(**config)
