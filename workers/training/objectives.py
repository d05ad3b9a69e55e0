"""What a BLEURT-style model is trained to predict, and the loss of each prediction.

Sellam et al. (2020) train one linear head per task on the [CLS] vector: the rating head of
fine-tuning (§3, ℓ2 loss on the human ratings) and, in pre-training on synthetic pairs (§4.3), one
head per signal of Table 1, each with "either a regression or a classification loss", aggregated
as ``ℓ = Σ_k γ_k ℓ_k`` (eq. 1). An :class:`Objective` names one such task: the table column(s)
holding its target, its kind and its weight γ_k.

A missing target (NaN) is *masked*, never filled: ``ℓ_k`` is the mean over the rows whose target
for task k is present, so a signal that is absent for some pairs neither pulls their prediction
towards 0 nor dilutes the task's weight. The kernels here return the sum and the count separately
(sufficient statistics), so that data-parallel training can divide by the count over *all*
processes (see :mod:`assay.workers.training.model`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from assay.checkpoints.folder import valid_signal_name
from assay.errors import UsageError

__all__ = ["KINDS", "RATING", "Objective", "masked_loss_sum"]

KINDS = ("regression", "classification")
#: The objective of this name trains the checkpoint's rating ``head`` (the one BLEURT scores with);
#: every other objective trains a signal head ``signal_heads.<name>``.
RATING = "rating"


@dataclass(frozen=True)
class Objective:
    """One training task: a head, its target column(s), its loss and its weight γ (eq. 1).

    ``column``: for ``regression``, the column of the target (standardised before training,
    appendix A.2); for ``classification``, either the column of the class index (0 .. n_classes-1)
    or a tuple of ``n_classes`` columns holding class probabilities (soft targets, as the paper's
    entailment signal reports "the probability of three labels", §4.2). NaN means missing.
    """

    name: str
    column: str | tuple[str, ...]
    kind: str = "regression"
    n_classes: int = 1
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.name != RATING and not valid_signal_name(self.name):
            raise UsageError(f"objective name {self.name!r}: use {RATING!r} for the rating head, or 1-64 letters, "
                             "digits, '_' or '-' starting with a letter for a signal head")
        if self.kind not in KINDS:
            raise UsageError(f"objective {self.name!r}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if not math.isfinite(self.weight) or self.weight < 0:
            raise UsageError(f"objective {self.name!r}: weight {self.weight} must be finite and >= 0")
        columns = self.columns
        if not columns or not all(isinstance(c, str) and c for c in columns):
            raise UsageError(f"objective {self.name!r}: column must name a table column (or, for soft "
                             "classification targets, a tuple of n_classes columns)")
        if self.kind == "regression":
            if self.n_classes != 1 or len(columns) != 1:
                raise UsageError(f"objective {self.name!r}: a regression objective has one column and n_classes 1")
        else:
            if self.n_classes < 2:
                raise UsageError(f"objective {self.name!r}: a classification objective needs n_classes >= 2")
            if len(columns) not in (1, self.n_classes):
                raise UsageError(f"objective {self.name!r}: give one class-index column or {self.n_classes} "
                                 f"probability columns, not {len(columns)}")
        if self.name == RATING and (self.kind != "regression"):
            raise UsageError(f"objective {RATING!r} trains the rating head: it must be a regression objective")

    @property
    def columns(self) -> tuple[str, ...]:
        """The target columns, as a tuple."""
        return (self.column,) if isinstance(self.column, str) else tuple(self.column)

    @property
    def out_dim(self) -> int:
        """Outputs of the head: 1 for regression, one logit per class for classification."""
        return 1 if self.kind == "regression" else self.n_classes

    @property
    def soft(self) -> bool:
        """Classification with probability columns (soft targets)."""
        return self.kind == "classification" and len(self.columns) == self.n_classes

    def describe(self) -> dict[str, object]:
        """JSON-able description (for lineage and the run specification)."""
        return {"name": self.name, "column": list(self.columns) if self.soft else self.columns[0],
                "kind": self.kind, "n_classes": self.n_classes, "weight": self.weight}


def masked_loss_sum(objective: Objective, outputs: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor,
                                                                                                  torch.Tensor]:
    """``(Σ loss over rows with a target, number of such rows)`` for one objective.

    ``outputs``: the head's output, ``(batch, out_dim)``; ``targets``: its label columns,
    ``(batch, len(columns))``, NaN where missing. Regression: squared error (the ℓ2 loss of §3 and
    §4.3); classification: cross-entropy with the class index, or with the class probabilities for
    soft targets (a row is missing when any probability is). Masked rows contribute exactly 0 to the
    sum and its gradient; the graph always reaches the head, so data-parallel gradient reduction
    sees every parameter used.
    """
    outputs = outputs.float()
    targets = targets.to(outputs.dtype)
    present = torch.isfinite(targets).all(dim=1) if objective.soft else torch.isfinite(targets[:, 0])
    clean = torch.where(present.unsqueeze(1), targets, torch.zeros_like(targets))
    if objective.kind == "regression":
        per_row = (outputs[:, 0] - clean[:, 0]) ** 2
    elif objective.soft:
        per_row = -(clean * F.log_softmax(outputs, dim=1)).sum(dim=1)
    else:
        per_row = F.cross_entropy(outputs, clean[:, 0].long(), reduction="none")
    total = torch.where(present, per_row, torch.zeros_like(per_row)).sum()
    return total, present.sum().to(outputs.dtype)


def check_objectives(objectives: Sequence[Objective], primary: str) -> None:
    """Unique names, at least one objective, and a regression ``primary`` (validation ranks its
    predictions with Kendall τ and Pearson r)."""
    if not objectives:
        raise UsageError("train needs at least one objective")
    names = [o.name for o in objectives]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"objective names must be unique; repeated: {', '.join(duplicates)}")
    by_name = {o.name: o for o in objectives}
    if primary not in by_name:
        raise UsageError(f"primary objective {primary!r} is not one of the objectives ({', '.join(names)})")
    if by_name[primary].kind != "regression":
        raise UsageError(f"primary objective {primary!r} must be a regression objective: validation computes "
                         "Kendall tau and Pearson r of its predictions")
    if all(o.weight == 0 for o in objectives):
        raise UsageError("every objective has weight 0: nothing would be trained")
