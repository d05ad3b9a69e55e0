"""Training flows: ``pretrain``, ``finetune`` and the recipe ``train`` (BLEURT, Sellam et al.
2020: synthetic pre-training §4, then fine-tuning on ratings §3, optionally WebNLG §5.3).

Planning happens in :mod:`assay.training.plan` (data pinned by digest, exclusions checked), the
stage itself in :mod:`assay.workers.training_jobs` (train, register the checkpoint, record the
run). Tasks pass plans (JSON), never tables or models. Each stage runs locally or on the ``gpu``
work pool once deployed; the checkpoints it makes are registered in the catalog.
"""

from __future__ import annotations

import logging
from typing import Any

from prefect import flow, get_run_logger, task

from assay.config import load_settings
from assay.training.plan import StagePlan


def _logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    try:
        return get_run_logger()
    except Exception:  # outside a run (a task called directly): the module logger
        return logging.getLogger(__name__)


def _log_event(event: dict[str, Any]) -> None:
    kind = event.get("event")
    if kind in ("validation", "export", "save", "early_stop", "resume"):
        _logger().info("%s", {k: v for k, v in event.items() if v is not None})


@task(name="train-stage", task_run_name="{plan[stage]} {plan[name]}")
def stage_task(plan: dict[str, Any], resume: bool, parent_run_id: str | None = None,
               processes: int = 1) -> dict[str, Any]:
    from assay.workers.training_jobs import run_stage

    return run_stage(load_settings(), StagePlan.from_dict(plan), resume=resume, on_event=_log_event,
                     parent_run_id=parent_run_id, processes=processes)


@task(name="plan-finetune")
def plan_finetune_task(data: list[str], init: str | None, config: dict[str, Any], name: str | None, resume: bool,
                       exclude: list[str], groups: list[str] | None, aspect: str | None) -> dict[str, Any]:
    from assay.training.plan import plan_finetune
    from assay.workers.training_jobs import resolve_init

    settings = load_settings()
    init_folder, init_digest = resolve_init(settings, init)
    return plan_finetune(settings, data, init=init_folder, init_digest=init_digest, config=config, name=name,
                         resume=resume, exclude=exclude, groups=groups, aspect=aspect).as_dict()


@task(name="plan-pretrain")
def plan_pretrain_task(synthetic: str, init: str | None, config: dict[str, Any], name: str | None, resume: bool,
                       exclude: list[str], signals: list[str] | None) -> dict[str, Any]:
    from assay.training.pretraining import plan_pretrain
    from assay.workers.training_jobs import resolve_init

    settings = load_settings()
    init_folder, init_digest = resolve_init(settings, init)
    return plan_pretrain(settings, synthetic, init=init_folder, init_digest=init_digest, config=config, name=name,
                         resume=resume, exclude=exclude, signals=signals).as_dict()


@flow(name="finetune")
def finetune_flow(data: list[str], init: str | None = None, config: dict[str, Any] | None = None,
                  name: str | None = None, resume: bool = False, exclude: list[str] | None = None,
                  groups: list[str] | None = None, aspect: str | None = None, processes: int = 1) -> dict[str, Any]:
    """Fine-tune a checkpoint (or the embedded encoder) on human ratings; registers the result."""
    plan = plan_finetune_task(data, init, config or {}, name, resume, exclude or [], groups, aspect)
    _logger().info("fine-tuning %s on %s", plan["name"], ", ".join(d["label"] for d in plan["data"]))
    return stage_task(plan, resume, processes=processes)


@flow(name="pretrain")
def pretrain_flow(synthetic: str, init: str | None = None, config: dict[str, Any] | None = None,
                  name: str | None = None, resume: bool = False, exclude: list[str] | None = None,
                  signals: list[str] | None = None, processes: int = 1) -> dict[str, Any]:
    """Pre-train on a stored synthetic dataset with one head per signal; registers the result."""
    plan = plan_pretrain_task(synthetic, init, config or {}, name, resume, exclude or [], signals)
    _logger().info("pre-training %s on %s", plan["name"], plan["data"][0]["label"])
    return stage_task(plan, resume, processes=processes)


class _FlowStages:
    """The recipe's stages as subflows of the ``train`` flow."""

    def synthesize(self, spec: dict[str, Any], name: str) -> dict[str, Any]:
        from assay.flows.synthesize import synthesize_flow

        return synthesize_flow(spec, name)

    def pretrain(self, synthetic: str, init: str | None, config: dict[str, Any], name: str,
                 exclude: list[str], signals: list[str] | None) -> dict[str, Any]:
        return pretrain_flow(synthetic, init=init, config=config, name=name, exclude=exclude, signals=signals)

    def finetune(self, data: list[str], init: str | None, config: dict[str, Any], name: str, exclude: list[str],
                 aspect: str | None) -> dict[str, Any]:
        return finetune_flow(data, init=init, config=config, name=name, exclude=exclude, aspect=aspect)


@flow(name="train")
def train_flow(recipe: dict[str, Any]) -> dict[str, Any]:
    """A training recipe (``bleurt``: synthesize → pre-train → fine-tune on WMT → optionally WebNLG),
    each stage a subflow; every checkpoint is registered with its lineage."""
    from assay.training.recipes import BleurtRecipe
    from assay.workers.recipe import run_recipe

    logger = _logger()
    return run_recipe(BleurtRecipe.from_dict(recipe), _FlowStages(), log=logger.info)
