"""Running one training stage (BLEURT, Sellam et al. 2020: pre-training §4, fine-tuning §3):
plan -> train, written once.

A :class:`StageRequest` is what the caller asks for (JSON-able, so flows pass it along); the steps
that turn it into a :class:`~assay.training.plan.StagePlan` and train that plan are injected
(:class:`StageSteps`): the worker layer's in-process steps (resolve the initial checkpoint, plan,
train, register, record) or the same steps as the ``pretrain``/``finetune`` flows' Prefect tasks.
:func:`train_stage` orders them.

The initial checkpoint (``init``) is a registered checkpoint's digest when a recipe hands one stage
on to the next, or whatever the user named (a name, a digest prefix, a folder, an encoder).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from assay.errors import UsageError
from assay.training.plan import StagePlan

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


class StageSteps(Protocol):
    """Who plans and trains a stage: in this process, or as Prefect tasks."""

    def plan(self, request: StageRequest) -> StagePlan: ...

    def train(self, plan: StagePlan, request: StageRequest) -> dict[str, Any]: ...


def train_stage(request: StageRequest, steps: StageSteps, *,
                log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Plan the stage, then train it (its checkpoint registered, its run recorded); returns the
    trainer's summary with ``registered`` (name, digest, path)."""
    plan = steps.plan(request)
    if log is not None:
        verb = "pre-training" if plan.stage == "pretrain" else "fine-tuning"
        log(f"{verb} {plan.name} on {', '.join(d.label for d in plan.data)}")
    return steps.train(plan, request)
