"""The model being trained: a checkpoint's encoder with one linear head per objective, and the
multi-task loss ``ℓ = Σ_k γ_k ℓ_k`` (Sellam et al., 2020, eq. 1).

:class:`MultiTaskModel` wraps a :class:`~assay.workers.checkpoint.LearnedMetricModel`: the objective
named ``rating`` trains its rating ``head`` (§3), every other objective trains the signal head of
its name (§4.3). ``forward`` returns ``{"loss", "logits"}`` the way Hugging Face models do, so
transformers' ``Trainer`` drives it unchanged: ``logits`` are all heads' outputs side by side, in
float32 (heads run outside autocast, so bf16 training still computes the loss on float32 outputs).

Each ``ℓ_k`` is a *masked mean*: the sum over the rows whose target is present divided by their
number. In data-parallel training every process sees part of the global batch and
DistributedDataParallel averages the processes' gradients; to make that average the gradient of the
global masked mean, each process divides its sum by the count summed over all processes and
multiplies by the number of processes. The step is then the one a single process would take on the
whole global batch, whatever the missing targets in each part.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.distributed as dist
from torch import nn

from assay.errors import UsageError
from assay.training.config import TrainConfig
from assay.workers.bleurt import BleurtScorer
from assay.workers.checkpoint import LearnedMetricModel, SignalHeadSpec
from assay.workers.training.objectives import RATING, Objective, masked_loss_sum

__all__ = ["MultiTaskModel", "encoder_blocks", "new_head", "prepare_model"]


def new_head(in_dim: int, out_dim: int, std: float, seed: int, name: str) -> nn.Linear:
    """A linear head initialised as BERT initialises classifiers (weights N(0, std²), bias 0), from a
    generator seeded by ``(seed, name)`` (the global RNG is untouched)."""
    head = nn.Linear(in_dim, out_dim)
    key = int.from_bytes(name.encode("utf-8")[:8].ljust(8, b"\0"), "little") & 0x7FFF_FFFF
    gen = torch.Generator().manual_seed((int(seed) * 1_000_003 + key) % (2**63 - 1))
    with torch.no_grad():
        head.weight.copy_(torch.randn(out_dim, in_dim, generator=gen) * std)
        head.bias.zero_()
    return head


class MultiTaskModel(nn.Module):
    """Encoder + heads + the masked multi-task loss (see the module docstring)."""

    task_weights: torch.Tensor

    def __init__(self, metric: LearnedMetricModel, objectives: Sequence[Objective]) -> None:
        super().__init__()
        self.metric = metric
        self.objectives = list(objectives)
        missing = [o.name for o in self.objectives if o.name != RATING and o.name not in metric.signal_heads]
        if missing:
            raise ValueError(f"no head for objective(s) {missing}")
        # label column and output column ranges per objective, in objective order
        self.label_slices: list[slice] = []
        self.output_slices: list[slice] = []
        label_at = output_at = 0
        for o in self.objectives:
            self.label_slices.append(slice(label_at, label_at + len(o.columns)))
            self.output_slices.append(slice(output_at, output_at + o.out_dim))
            label_at += len(o.columns)
            output_at += o.out_dim
        self.n_labels = label_at
        self.n_outputs = output_at
        # γ_k on the model's device (a tensor made per step would be a host-to-device copy each time)
        self.register_buffer("task_weights", torch.tensor([o.weight for o in self.objectives]), persistent=False)

    def head_of(self, objective: Objective) -> nn.Linear:
        if objective.name == RATING:
            return self.metric.head
        layer = self.metric.signal_heads[objective.name]
        if not isinstance(layer, nn.Linear):
            raise TypeError(f"signal head {objective.name!r} is not a Linear layer")
        return layer

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
        labels: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        features = self.metric.features(input_ids, attention_mask, token_type_ids)
        with torch.autocast(device_type=features.device.type, enabled=False):
            features = features.float()
            logits = torch.cat([self.head_of(o)(features) for o in self.objectives], dim=1)
            out = {"logits": logits}
            if labels is not None:
                out["loss"] = self.loss(logits, labels)
        return out

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """``Σ_k γ_k · (masked sum_k / count_k)``, counts global across processes while training."""
        sums, counts = [], []
        for o, lab, outp in zip(self.objectives, self.label_slices, self.output_slices, strict=True):
            total, n = masked_loss_sum(o, logits[:, outp], labels[:, lab])
            sums.append(total)
            counts.append(n)
        count = torch.stack(counts).detach()
        scale = 1.0
        if self.training and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            count = count.clone()
            dist.all_reduce(count)  # sum over processes: the global batch's counts
            scale = float(dist.get_world_size())  # DDP averages gradients over the processes
        per_task = torch.stack(sums) / count.clamp(min=1.0)
        return (self.task_weights.to(per_task.device, per_task.dtype) * per_task).sum() * scale

    def signal_specs(self, normalisations: dict[str, dict[str, object]]) -> list[SignalHeadSpec]:
        """The checkpoint entries of the signal heads this model trains."""
        return [SignalHeadSpec(o.name, o.kind, o.out_dim, o.weight,
                               dict(normalisations.get(o.name, {"type": "none"})))
                for o in self.objectives if o.name != RATING]


def encoder_blocks(encoder: nn.Module) -> list[nn.Module]:
    """The transformer blocks of a BERT-style encoder (``encoder.encoder.layer``), bottom first."""
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList):
        raise UsageError(f"staged unfreezing needs a BERT-style encoder (encoder.layer); "
                         f"{type(encoder).__name__} has none")
    return list(layers)


def prepare_model(scorer: BleurtScorer, objectives: Sequence[Objective], config: TrainConfig) -> MultiTaskModel:
    """The init's encoder and rating head, the signal heads of the objectives (the init's when it has
    one of the same name and shape, else new), frozen parts marked."""
    metric = scorer.model
    encoder = metric.encoder
    in_dim = int(metric.head.in_features)
    std = config.head_init_std if config.head_init_std is not None else float(
        getattr(encoder.config, "initializer_range", 0.02))
    existing = {s.name: s for s in scorer.config.signal_specs()}
    heads: dict[str, nn.Module] = {}
    for o in objectives:
        if o.name == RATING:
            continue
        old = existing.get(o.name)
        if old is not None and old.kind == o.kind and old.out_dim == o.out_dim:
            heads[o.name] = metric.signal_heads[o.name]
        else:
            heads[o.name] = new_head(in_dim, o.out_dim, std, config.seed, o.name)
    metric.signal_heads = nn.ModuleDict(heads)
    if RATING not in {o.name for o in objectives}:
        metric.head.requires_grad_(False)  # pre-training leaves the rating head as it was
    pooler = getattr(encoder, "pooler", None)
    if metric.head_input != "pooler" and isinstance(pooler, nn.Module):
        pooler.requires_grad_(False)  # unused: the heads read v[CLS] or the mean
    if config.freeze_embeddings:
        embeddings = getattr(encoder, "embeddings", None)
        if not isinstance(embeddings, nn.Module):
            raise UsageError(f"freeze_embeddings: {type(encoder).__name__} has no embeddings module")
        embeddings.requires_grad_(False)
    if config.unfreeze:
        encoder_blocks(encoder)  # refuse early an encoder without blocks
    model = MultiTaskModel(metric, objectives)
    model.train()
    return model
