"""The steps of one training stage in this process (:class:`assay.training.stages.StageSteps`):
plan (the initial checkpoint resolved to its folder and digest, the data pinned) and train
(:func:`assay.workers.training_jobs.run_stage`: train, register the checkpoint, record the run).

The ``pretrain`` and ``finetune`` flows run the same two functions as Prefect tasks; the order is
:func:`assay.training.stages.train_stage`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.config import Settings
from assay.training.plan import StagePlan, plan_finetune
from assay.training.pretraining import plan_pretrain
from assay.training.stages import StageRequest
from assay.workers.training_jobs import EventHandler, resolve_init, run_stage


def plan_stage(settings: Settings, request: StageRequest) -> StagePlan:
    """The request's plan: its ``init`` resolved (folder and digest), its data pinned by digest."""
    folder, digest = resolve_init(settings, request.init)
    if request.stage == "pretrain":
        return plan_pretrain(settings, request.synthetic, init=folder, init_digest=digest, config=request.config,
                             name=request.name, resume=request.resume, exclude=request.exclude,
                             signals=request.signals)
    return plan_finetune(settings, request.data, init=folder, init_digest=digest, config=request.config,
                         name=request.name, resume=request.resume, exclude=request.exclude, groups=request.groups,
                         aspect=request.aspect)


@dataclass
class InProcessStageSteps:
    """Plan and train in this process, recorded as the flows record them."""

    settings: Settings
    on_event: EventHandler | None = None
    parent_run_id: str | None = None

    def plan(self, request: StageRequest) -> StagePlan:
        return plan_stage(self.settings, request)

    def train(self, plan: StagePlan, request: StageRequest) -> dict[str, Any]:
        return run_stage(self.settings, plan, resume=request.resume, on_event=self.on_event,
                         parent_run_id=self.parent_run_id, processes=request.processes)
