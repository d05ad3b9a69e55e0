"""Training flows: ``pretrain``, ``finetune`` and the recipe ``train`` (BLEURT, Sellam et al.
2020: synthetic pre-training §4, then fine-tuning on ratings §3, optionally WebNLG §5.3).

Planning happens in :mod:`assay.training.plan` (data pinned by digest, exclusions checked), the
stage itself in :mod:`assay.workers.training.stage_runs` (train, register the checkpoint, record the
run); the two steps are :class:`assay.workers.training.stage_steps.StageSteps`, ordered by
:func:`assay.workers.training.stage_steps.train_stage`, to which the stage flows hand them as tasks
(:data:`STAGE_TASKS`); the order of the recipe's stages is :func:`assay.workers.training.recipe_runs.run_recipe`'s,
to which ``train`` hands its stages (:class:`assay.workers.training.recipe_runs.RecipeStages`) as subflows. Tasks
pass requests and plans, never tables or models. Each stage runs locally or on the ``gpu`` work
pool once deployed; the checkpoints it makes are registered in the catalog.
"""

from __future__ import annotations

import logging
from typing import Any

from prefect import flow, get_run_logger, task

from assay.config import load_settings
from assay.flows.hooks import install_flow_hooks
from assay.flows.step_tasks import as_tasks
from assay.training.stage_request import StageRequest, stage_request

#: each step of :class:`assay.workers.training.stage_steps.StageSteps` as a task
STAGE_TASKS: dict[str, dict[str, Any]] = {
    "plan": {"name": "plan-stage", "task_run_name": "plan-{request.stage}"},
    "train": {"name": "train-stage", "task_run_name": "{plan.stage} {plan.name}"},
}


def _logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    try:
        return get_run_logger()
    except Exception:  # outside a run (a task called directly): the module logger
        return logging.getLogger(__name__)


def _log_event(event: dict[str, Any]) -> None:
    kind = event.get("event")
    if kind in ("validation", "export", "save", "early_stop", "resume"):
        _logger().info("%s", {k: v for k, v in event.items() if v is not None})


def _log_line(line: str) -> None:
    _logger().info(line)


def _train_stage(request: StageRequest) -> dict[str, Any]:
    """One stage with its steps as this flow's tasks; the trainer's events and progress lines go to
    the run's log."""
    from assay.workers.training.stage_steps import StageSteps, train_stage

    steps = StageSteps(load_settings(), on_event=_log_event, progress_sink=_log_line)
    return train_stage(request, as_tasks(steps, STAGE_TASKS), log=_logger().info)


@flow(name="finetune", on_running=[install_flow_hooks])
def finetune_flow(data: list[str], init: str | None = None, config: dict[str, Any] | None = None,
                  name: str | None = None, resume: bool = False, exclude: list[str] | None = None,
                  groups: list[str] | None = None, aspect: str | None = None, processes: int = 1) -> dict[str, Any]:
    """Fine-tune a checkpoint (or the embedded encoder) on human ratings; registers the result."""
    request = stage_request("finetune", data, init=init, config=config or {}, name=name, resume=resume,
                            exclude=exclude or [], groups=groups, aspect=aspect, processes=processes)
    return _train_stage(request)


@flow(name="pretrain", on_running=[install_flow_hooks])
def pretrain_flow(synthetic: str, init: str | None = None, config: dict[str, Any] | None = None,
                  name: str | None = None, resume: bool = False, exclude: list[str] | None = None,
                  signals: list[str] | None = None, processes: int = 1) -> dict[str, Any]:
    """Pre-train on a stored synthetic dataset with one head per signal; registers the result."""
    request = stage_request("pretrain", synthetic, init=init, config=config or {}, name=name, resume=resume,
                            exclude=exclude or [], signals=signals, processes=processes)
    return _train_stage(request)


def _stage_flow(request: StageRequest) -> dict[str, Any]:
    """A recipe's stage as its own flow, a subflow of ``train``: ``pretrain`` or ``finetune``."""
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
    """One trial of a sweep (:func:`assay.workers.training.sweep_trials.train_trial`): its values from the study,
    its validation taus reported to the pruner, its end told to the study."""
    from assay.workers.training.sweep_trials import train_trial

    def on_event(event: dict[str, Any]) -> None:
        if event.get("event") == "evaluate":
            _logger().info("%s", {k: v for k, v in event.items() if v is not None})

    return train_trial(load_settings(), sweep, number, on_event=on_event, log=_logger().info)


@flow(name="train", on_running=[install_flow_hooks])
def train_flow(recipe: dict[str, Any] | None = None, sweep_trial: dict[str, Any] | None = None) -> dict[str, Any]:
    """A training recipe (``bleurt``: synthesize → pre-train → fine-tune on WMT → optionally WebNLG),
    each stage a subflow; every checkpoint is registered with its lineage. Or, with
    ``sweep_trial`` (``{"sweep": NAME, "trial": NUMBER}``), one trial of an ``assay sweep``."""
    from assay.flows.synthesize import synthesize_flow
    from assay.training.recipes import BleurtRecipe
    from assay.workers.training.recipe_runs import RecipeStages, run_recipe

    if sweep_trial is not None:
        return sweep_trial_task(str(sweep_trial["sweep"]), int(sweep_trial["trial"]))
    if recipe is None:
        raise ValueError("train: give a recipe or a sweep_trial")
    stages = as_tasks(RecipeStages(load_settings()), {}, subflows={"synthesize": synthesize_flow, "train": _stage_flow})
    return run_recipe(BleurtRecipe.from_dict(recipe), stages, log=_logger().info)
