"""Training flows: ``pretrain``, ``finetune`` and the recipe ``train`` (BLEURT, Sellam et al.
2020: synthetic pre-training §4, then fine-tuning on ratings §3, optionally WebNLG §5.3).

Planning happens in :mod:`assay.training.plan` (data pinned by digest, exclusions checked), the
stage itself in :mod:`assay.workers.training_jobs` (train, register the checkpoint, record the
run); the order of the two is :func:`assay.training.stages.train_stage`'s, to which the stage flows
hand these tasks (:class:`TaskStageSteps`), and the order of the recipe's stages is
:func:`assay.workers.recipe.run_recipe`'s, to which ``train`` hands these subflows. Tasks pass
plans (JSON), never tables or models. Each stage runs locally or on the ``gpu`` work pool once
deployed; the checkpoints it makes are registered in the catalog.
"""

from __future__ import annotations

import logging
from typing import Any

from prefect import flow, get_run_logger, task

from assay.config import load_settings
from assay.training.plan import StagePlan
from assay.training.stages import StageRequest, stage_request, train_stage


def _logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    try:
        return get_run_logger()
    except Exception:  # outside a run (a task called directly): the module logger
        return logging.getLogger(__name__)


def _log_event(event: dict[str, Any]) -> None:
    kind = event.get("event")
    if kind in ("validation", "export", "save", "early_stop", "resume"):
        _logger().info("%s", {k: v for k, v in event.items() if v is not None})


@task(name="plan-stage", task_run_name="plan-{request[stage]}")
def plan_task(request: dict[str, Any]) -> dict[str, Any]:
    from assay.workers.training_stages import plan_stage

    return plan_stage(load_settings(), StageRequest.from_dict(request)).as_dict()


@task(name="train-stage", task_run_name="{plan[stage]} {plan[name]}")
def stage_task(plan: dict[str, Any], resume: bool, parent_run_id: str | None = None,
               processes: int = 1) -> dict[str, Any]:
    from assay.workers.training_jobs import run_stage

    return run_stage(load_settings(), StagePlan.from_dict(plan), resume=resume, on_event=_log_event,
                     parent_run_id=parent_run_id, processes=processes, progress_sink=_logger().info)


class TaskStageSteps:
    """A stage's steps as this module's tasks, for :func:`assay.training.stages.train_stage`."""

    def plan(self, request: StageRequest) -> StagePlan:
        return StagePlan.from_dict(plan_task(request.as_dict()))

    def train(self, plan: StagePlan, request: StageRequest) -> dict[str, Any]:
        return stage_task(plan.as_dict(), request.resume, processes=request.processes)


@flow(name="finetune")
def finetune_flow(data: list[str], init: str | None = None, config: dict[str, Any] | None = None,
                  name: str | None = None, resume: bool = False, exclude: list[str] | None = None,
                  groups: list[str] | None = None, aspect: str | None = None, processes: int = 1) -> dict[str, Any]:
    """Fine-tune a checkpoint (or the embedded encoder) on human ratings; registers the result."""
    request = stage_request("finetune", data, init=init, config=config or {}, name=name, resume=resume,
                            exclude=exclude or [], groups=groups, aspect=aspect, processes=processes)
    return train_stage(request, TaskStageSteps(), log=_logger().info)


@flow(name="pretrain")
def pretrain_flow(synthetic: str, init: str | None = None, config: dict[str, Any] | None = None,
                  name: str | None = None, resume: bool = False, exclude: list[str] | None = None,
                  signals: list[str] | None = None, processes: int = 1) -> dict[str, Any]:
    """Pre-train on a stored synthetic dataset with one head per signal; registers the result."""
    request = stage_request("pretrain", synthetic, init=init, config=config or {}, name=name, resume=resume,
                            exclude=exclude or [], signals=signals, processes=processes)
    return train_stage(request, TaskStageSteps(), log=_logger().info)


class _FlowStages:
    """The recipe's stages as subflows of the ``train`` flow."""

    def synthesize(self, spec: dict[str, Any], name: str) -> dict[str, Any]:
        from assay.flows.synthesize import synthesize_flow

        return synthesize_flow(spec, name)

    def train(self, request: StageRequest) -> dict[str, Any]:
        exclude = list(request.exclude)
        if request.stage == "pretrain":
            return pretrain_flow(request.synthetic, init=request.init, config=request.config, name=request.name,
                                 resume=request.resume, exclude=exclude, signals=_listed(request.signals),
                                 processes=request.processes)
        return finetune_flow(list(request.data), init=request.init, config=request.config, name=request.name,
                             resume=request.resume, exclude=exclude, groups=_listed(request.groups),
                             aspect=request.aspect, processes=request.processes)


def _listed(values: tuple[str, ...] | None) -> list[str] | None:
    return None if values is None else list(values)


@task(name="sweep-trial", task_run_name="trial {number} of {sweep}")
def sweep_trial_task(sweep: str, number: int) -> dict[str, Any]:
    """One trial of a sweep (:func:`assay.workers.sweep.train_trial`): its values from the study,
    its validation taus reported to the pruner, its end told to the study."""
    from assay.workers.sweep import train_trial

    def on_event(event: dict[str, Any]) -> None:
        if event.get("event") == "evaluate":
            _logger().info("%s", {k: v for k, v in event.items() if v is not None})

    return train_trial(load_settings(), sweep, number, on_event=on_event, log=_logger().info)


@flow(name="train")
def train_flow(recipe: dict[str, Any] | None = None, sweep_trial: dict[str, Any] | None = None) -> dict[str, Any]:
    """A training recipe (``bleurt``: synthesize → pre-train → fine-tune on WMT → optionally WebNLG),
    each stage a subflow; every checkpoint is registered with its lineage. Or, with
    ``sweep_trial`` (``{"sweep": NAME, "trial": NUMBER}``), one trial of an ``assay sweep``."""
    from assay.training.recipes import BleurtRecipe
    from assay.workers.recipe import run_recipe

    if sweep_trial is not None:
        return sweep_trial_task(str(sweep_trial["sweep"]), int(sweep_trial["trial"]))
    if recipe is None:
        raise ValueError("train: give a recipe or a sweep_trial")
    logger = _logger()
    return run_recipe(BleurtRecipe.from_dict(recipe), _FlowStages(), log=logger.info)
