"""The hyper-parameters of a training run, with the paper's defaults.

Sellam et al. (2020), appendix B.1: "BERT's public checkpoints with Adam (the default optimizer),
learning rate 1e-5, and batch size 32"; 40,000 fine-tuning steps, "evaluation every 1,500 steps",
keeping "the checkpoint that performs best on a held-out validation set". Appendix B.2: 10% of the
WMT data held out for validation "in such a way that there is no leak" (no shared source): here the
split is by item. Those are the defaults below, except that the number of steps has no default
(give ``max_steps`` or ``epochs``).
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from assay.errors import UsageError

__all__ = ["DEFAULT_POOLING", "FIELD_TYPES", "HEAD_INPUTS", "LR_SCHEDULES", "WSD_DECAY_RATIO", "TrainConfig",
           "field_types"]

#: what a rating head may read (the checkpoint format's ``head.input``)
HEAD_INPUTS = ("cls", "pooler", "mean")
#: what new heads read unless told otherwise (``TrainConfig.head_input`` None, and the recipe's
#: ``pooling``): the last layer averaged over the real tokens, the pooling all-MiniLM-L6-v2 was trained
#: with (Reimers & Gurevych, 2019); +3.0 Kendall tau on every WMT17 to-English pair over the paper's
#: v[CLS] after one fine-tuning epoch (docs/RECIPE.md)
DEFAULT_POOLING = "mean"
#: how the learning rate moves after the warm-up: ``linear`` decays it to 0 at the last step (the
#: paper's BERT optimisation), ``constant`` keeps the peak, ``wsd`` (warm-up, stable, decay) keeps the
#: peak and decays it linearly to 0 over the last :data:`WSD_DECAY_RATIO` of the steps (Hu et al.,
#: 2024, MiniCPM; Hägele et al., 2024: a 20 % linear cool-down matches a cosine schedule at any length),
#: ``hold-epoch`` keeps the peak to the end of the first epoch and then decays it linearly to 0 at the last
#: step (at least over the last :data:`WSD_DECAY_RATIO`, so one epoch of it is ``wsd``; several epochs
#: are ``linear`` after a first epoch at the peak; docs/RECIPE.md)
LR_SCHEDULES = ("linear", "constant", "wsd", "hold-epoch")
#: the share of the steps over which ``wsd`` decays the learning rate to 0 (``hold-epoch``'s shortest decay)
WSD_DECAY_RATIO = 0.2


@dataclass(frozen=True)
class TrainConfig:
    """How to train; every field is recorded in the checkpoint's lineage."""

    learning_rate: float = 1e-5
    """peak learning rate of AdamW (appendix B.1: 1e-5)"""
    batch_size: int = 32
    """global batch: pairs per optimizer step over all processes (appendix B.1: 32)"""
    max_steps: int | None = None
    """optimizer steps; exactly one of max_steps and epochs"""
    epochs: float | None = None
    """passes over the training split (converted to steps: ceil(epochs * batches per epoch))"""
    warmup_ratio: float = 0.0
    """fraction of the steps with a linear warm-up from 0; then ``lr_schedule``"""
    lr_schedule: str = "linear"
    """after the warm-up: 'linear' (decay to 0 at the last step), 'constant' (the peak to the end) or
    'wsd' (the peak, then a linear decay to 0 over the last :data:`WSD_DECAY_RATIO` of the steps) or
    'hold-epoch' (the peak to the end of the first epoch, then a linear decay to 0 at the last step)"""
    weight_decay: float = 0.0
    """AdamW's decoupled weight decay (biases and LayerNorm weights excluded, as Trainer does)"""
    max_grad_norm: float = 1.0
    """clip the global gradient norm to this (0: no clipping)"""
    seed: int = 12345
    """seeds the item split, new heads, dropout and the batch order"""
    eval_every: int = 1500
    """validate every this many steps (appendix B.1: 1,500), and after the last step"""
    save_every: int = 1500
    """write a resumable state (weights, optimizer, scheduler, RNG, data position) this often"""
    patience: int | None = None
    """stop after this many validations without a better Kendall tau (None: never stop early)"""
    validation_fraction: float = 0.1
    """fraction of the items held out for validation (appendix B.2: 10%)"""
    group_by_length: bool = True
    """batches of similar lengths, padded to their longest pair (less padding, faster)"""
    freeze_embeddings: bool = False
    """keep the encoder's embedding layer fixed"""
    unfreeze: tuple[tuple[int, int], ...] = ()
    """staged unfreezing: ((step, n), ...) trains only the top n transformer blocks (and the heads) from
    that step on; n = all blocks also trains the embeddings (unless freeze_embeddings). Empty: all trainable."""
    max_length: int | None = None
    """token budget of a pair, special tokens included (None: the init checkpoint's max_length)"""
    pad_to_multiple_of: int | None = None
    """widen each batch to a multiple of this many tokens (None: 16 on CUDA, where every new length
    costs a one-time kernel selection, 1 on the CPU, where padding costs compute)"""
    dataloader_workers: int = 0
    """processes collating batches while the model trains (0: the training process collates; on an
    H100 with MiniLM, 2 workers were slower: 23.7-24.4 against 22.1 ms per step)"""
    log_every: int | None = None
    """write the step log (and send step events) every this many steps, and before every validation and
    save (None: every step on the CPU; every 50 on CUDA, where reading a loss makes the CPU wait for
    the GPU)"""
    eval_batch_size: int | None = None
    """pairs per validation batch (None: 2 x batch_size)"""
    device: str = "auto"
    """'auto' (CUDA when available), 'cpu' or 'cuda'; under torchrun each process uses its LOCAL_RANK GPU"""
    bf16: bool | None = None
    """bf16 autocast (None: on CUDA only; never on the CPU)"""
    head_input: str | None = None
    """what the heads read when training starts from an encoder rather than a checkpoint: 'mean' (the
    last layer averaged over the real tokens), 'cls' (the paper's v[CLS], §3) or 'pooler' (None:
    :data:`DEFAULT_POOLING`); a checkpoint init keeps its own, and naming another is refused"""
    head_init_std: float | None = None
    """std of new heads' weights (None: the encoder's initializer_range, 0.02 for BERT)"""
    extra: dict[str, Any] = field(default_factory=dict)
    """free-form notes recorded with the hyper-parameters"""

    def __post_init__(self) -> None:
        if (self.max_steps is None) == (self.epochs is None):
            raise UsageError("give exactly one of TrainConfig.max_steps and TrainConfig.epochs")
        if self.max_steps is not None and self.max_steps < 1:
            raise UsageError(f"TrainConfig.max_steps is {self.max_steps}; expected >= 1")
        if self.epochs is not None and not (math.isfinite(self.epochs) and self.epochs > 0):
            raise UsageError(f"TrainConfig.epochs is {self.epochs}; expected a number > 0")
        for name in ("batch_size", "eval_every", "save_every"):
            if int(getattr(self, name)) < 1:
                raise UsageError(f"TrainConfig.{name} is {getattr(self, name)}; expected >= 1")
        if not (math.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise UsageError(f"TrainConfig.learning_rate is {self.learning_rate}; expected > 0")
        if not 0 <= self.warmup_ratio < 1:
            raise UsageError(f"TrainConfig.warmup_ratio is {self.warmup_ratio}; expected 0 <= ratio < 1")
        if not 0 < self.validation_fraction < 1:
            raise UsageError(f"TrainConfig.validation_fraction is {self.validation_fraction}; expected 0 < f < 1")
        if self.lr_schedule not in LR_SCHEDULES:
            raise UsageError(f"TrainConfig.lr_schedule is {self.lr_schedule!r}; "
                             f"expected one of {', '.join(LR_SCHEDULES)}")
        if self.weight_decay < 0 or self.max_grad_norm < 0:
            raise UsageError("TrainConfig.weight_decay and max_grad_norm must be >= 0")
        if self.patience is not None and self.patience < 1:
            raise UsageError(f"TrainConfig.patience is {self.patience}; expected >= 1 or None")
        if self.dataloader_workers < 0:
            raise UsageError(f"TrainConfig.dataloader_workers is {self.dataloader_workers}; expected >= 0")
        if self.log_every is not None and self.log_every < 1:
            raise UsageError(f"TrainConfig.log_every is {self.log_every}; expected >= 1 or None")
        if self.pad_to_multiple_of is not None and self.pad_to_multiple_of < 1:
            raise UsageError(f"TrainConfig.pad_to_multiple_of is {self.pad_to_multiple_of}; expected >= 1 or None")
        if self.max_length is not None and self.max_length < 4:
            raise UsageError(f"TrainConfig.max_length is {self.max_length}; expected >= 4")
        if self.device.strip().lower() not in ("auto", "cpu", "cuda"):
            raise UsageError(f"TrainConfig.device is {self.device!r}; expected 'auto', 'cpu' or 'cuda'")
        if self.head_input is not None and self.head_input not in HEAD_INPUTS:
            raise UsageError(f"TrainConfig.head_input is {self.head_input!r}; expected one of {', '.join(HEAD_INPUTS)}")
        stages = [tuple(stage) for stage in self.unfreeze]
        if stages:
            steps = [s for s, _ in stages]
            if steps[0] != 0 or steps != sorted(set(steps)) or any(n < 0 for _, n in stages):
                raise UsageError("TrainConfig.unfreeze must be ((0, n0), (step1, n1), ...) with increasing steps "
                                 "starting at 0 and block counts >= 0")
        object.__setattr__(self, "unfreeze", tuple((int(s), int(n)) for s, n in stages))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["unfreeze"] = [list(stage) for stage in self.unfreeze]
        return data

    def trainable_blocks(self, step: int) -> int | None:
        """Top transformer blocks trained at optimizer step ``step`` (0-based); None: all."""
        current: int | None = None
        for start, n in self.unfreeze:
            if step >= start:
                current = n
        return current


def field_types() -> dict[str, type]:
    """Each :class:`TrainConfig` field and the type of its value, read from the dataclass itself
    (``int | None`` -> ``int``; ``tuple[...]`` -> ``tuple``): the one list of the trainer's
    hyper-parameters, from which the training options of the CLI and a sweep's tunable
    parameters take their names and types."""
    hints = typing.get_type_hints(TrainConfig)
    out: dict[str, type] = {}
    for f in fields(TrainConfig):
        hint = hints[f.name]
        if isinstance(hint, types.UnionType):  # X | None
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        out[f.name] = typing.get_origin(hint) or hint
    return out


FIELD_TYPES: dict[str, type] = field_types()
""":func:`field_types`, computed once."""
