"""One training stage (a :class:`assay.training.stage_request.StageRequest`), plan -> train, written once.

The steps are declared once, in :class:`StageSteps`: plan (the initial checkpoint resolved to its
folder and digest, the data pinned) and train (:func:`assay.workers.training.stage_runs.run_stage`:
train, register the checkpoint, record the run). :func:`train_stage` orders them: in this process
(a recipe, a sweep's trial), or with the same steps as Prefect tasks in the ``pretrain`` and
``finetune`` flows (:func:`assay.flows.step_tasks.as_tasks`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from assay.config import Settings
from assay.training.plan import StagePlan, plan_finetune
from assay.training.pretraining import plan_pretrain
from assay.training.stage_request import StageRequest
from assay.workers.training.stage_runs import EventHandler, resolve_init, run_stage


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
class StageSteps:
    """A stage's steps, against ``settings``: ``on_event`` sees the trainer's events and
    ``progress_sink`` takes the progress lines (:func:`~assay.workers.training.stage_runs.run_stage`)."""

    settings: Settings
    on_event: EventHandler | None = None
    parent_run_id: str | None = None
    progress_sink: Callable[[str], None] | None = None

    def plan(self, request: StageRequest) -> StagePlan:
        return plan_stage(self.settings, request)

    def train(self, plan: StagePlan, request: StageRequest) -> dict[str, Any]:
        return run_stage(self.settings, plan, resume=request.resume, on_event=self.on_event,
                         parent_run_id=self.parent_run_id, processes=request.processes,
                         progress_sink=self.progress_sink)


def train_stage(request: StageRequest, steps: StageSteps, *,
                log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Plan the stage, then train it (its checkpoint registered, its run recorded); returns the
    trainer's summary with ``registered`` (name, digest, path)."""
    plan = steps.plan(request)
    if log is not None:
        verb = "pre-training" if plan.stage == "pretrain" else "fine-tuning"
        log(f"{verb} {plan.name} on {', '.join(d.label for d in plan.data)}")
    return steps.train(plan, request)
