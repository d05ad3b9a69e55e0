"""What one training stage (BLEURT, Sellam et al. 2020: pre-training §4, fine-tuning §3) is asked
to do: a :class:`StageRequest` (JSON-able, so flows pass it along).

Its steps (resolve the initial checkpoint and plan it into a
:class:`~assay.training.plan.StagePlan`, then train, register and record) are the worker layer's,
declared once with their runner in :mod:`assay.workers.training.stage_steps`
(:func:`~assay.workers.training.stage_steps.train_stage`); the ``pretrain``/``finetune`` flows run the
same steps as Prefect tasks.

The initial checkpoint (``init``) is a registered checkpoint's digest when a recipe hands one stage
on to the next, or whatever the user named (a name, a digest prefix, a folder, an encoder).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from assay.errors import UsageError

STAGES = ("pretrain", "finetune")


@dataclass(frozen=True)
class StageRequest:
    """One training stage as asked for; planning resolves it (data pinned by digest, exclusions checked)."""

    stage: str
    """``pretrain`` (on one synthetic version) or ``finetune`` (on rated versions)."""
    data: tuple[str, ...]
    """Dataset versions to train on: one synthetic version for ``pretrain``."""
    init: str | None = None
    """The checkpoint or encoder to start from (a digest, name, folder or hub id); None: the embedded encoder."""
    config: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    resume: bool = False
    exclude: tuple[str, ...] = ()
    groups: tuple[str, ...] | None = None
    """Fine-tuning: only these groups (language pairs)."""
    aspect: str | None = None
    """Fine-tuning: the rated aspect (WebNLG)."""
    signals: tuple[str, ...] | None = None
    """Pre-training: the signals to predict (default: every stored one)."""
    processes: int = 1
    """Processes training data-parallel (``torchrun``) on this host."""

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise UsageError(f"unknown training stage {self.stage!r} (expected {' or '.join(STAGES)})")
        if self.stage == "pretrain" and len(self.data) != 1:
            raise UsageError(f"pre-training reads one synthetic version, got {len(self.data)}")

    @property
    def synthetic(self) -> str:
        """The synthetic version a pre-training stage reads."""
        (version,) = self.data
        return version

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StageRequest:
        values = dict(data)
        for key in ("data", "exclude", "groups", "signals"):
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        return cls(**values)


def stage_request(stage: str, data: Sequence[str] | str, **options: Any) -> StageRequest:
    """A :class:`StageRequest` from plain arguments (lists or one synthetic version's label)."""
    versions = (data,) if isinstance(data, str) else tuple(data)
    return StageRequest.from_dict({"stage": stage, "data": versions, **options})
