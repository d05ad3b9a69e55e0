"""A training stage as a recorded job: plan (platform) -> train (:mod:`assay.workers.training`) ->
register the checkpoint and record the run.

BLEURT's stages (Sellam et al., 2020): pre-training on synthetic pairs with one head per signal
(§4), fine-tuning on human ratings (§3). Each stage here is one run row (kind ``pretrain`` or
``finetune``) whose inputs are the data versions by digest and the parent checkpoint by digest,
and whose output is a checkpoint folder that appears only when complete and is then registered in
the catalog with the run's id. A failure marks the run failed and registers nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from assay.checkpoints import resolve_folder
from assay.config import Settings
from assay.errors import NotFoundError, UsageError
from assay.provenance import code_version
from assay.runs import RunRecorder
from assay.training.plan import StagePlan, finetune_table
from assay.workers.checkpoint import CONFIG_FILE, checkpoint_digest
from assay.workers.checkpoint_registry import register_folder
from assay.workers.training.config import TrainConfig
from assay.workers.training.engine import train
from assay.workers.training.objectives import Objective

EventHandler = Callable[[dict[str, Any]], None]


def resolve_init(settings: Settings, init: str | None) -> tuple[str | None, str | None]:
    """``(init, digest)``: None (the embedded encoder), a checkpoint folder or registered
    checkpoint (with its digest), or an encoder folder / hub id (no digest: it is not a checkpoint)."""
    if init is None:
        return None, None
    path = Path(init).expanduser()
    if path.is_dir() and (path / CONFIG_FILE).is_file():
        folder = path.resolve()
        return str(folder), checkpoint_digest(folder)
    if path.is_dir():
        return str(path.resolve()), None
    try:
        folder = resolve_folder(settings, init)
    except NotFoundError:
        if "/" in init:  # a hub id such as bert-base-uncased or google/bert_uncased_L-2_H-128_A-2
            return init, None
        raise NotFoundError(f"--init {init!r} is neither a folder, a registered checkpoint nor a hub id "
                            "(owner/name)") from None
    return str(folder), checkpoint_digest(folder)


def objectives_of(plan: StagePlan) -> list[Objective]:
    out = []
    for spec in plan.objectives:
        column = spec["column"]
        out.append(Objective(name=spec["name"], column=tuple(column) if isinstance(column, list) else column,
                             kind=spec.get("kind", "regression"), n_classes=int(spec.get("n_classes", 1)),
                             weight=float(spec.get("weight", 1.0))))
    return out


def stage_table(settings: Settings, plan: StagePlan) -> pa.Table:
    """The training table a plan pinned: rated pairs (fine-tuning) or synthetic pairs (pre-training)."""
    if plan.stage == "finetune":
        return finetune_table(settings, plan)
    if plan.stage == "pretrain":
        from assay.training.pretraining import pretrain_table

        return pretrain_table(settings, plan)
    raise UsageError(f"unknown training stage {plan.stage!r} (expected pretrain or finetune)")


def run_stage(settings: Settings, plan: StagePlan, *, resume: bool = False, on_event: EventHandler | None = None,
              parent_run_id: str | None = None) -> dict[str, Any]:
    """Train one planned stage, register its checkpoint and record the run; returns the summary."""
    config = TrainConfig(**plan.config)
    objectives = objectives_of(plan)
    recorder = RunRecorder(
        settings, plan.stage,
        inputs={"data": [d.as_dict() for d in plan.data], "init": plan.init, "init_digest": plan.init_digest},
        parameters={"name": plan.name, "config": config.to_json(), "objectives": plan.objectives,
                    "primary": plan.primary, "excluded": plan.excluded, "resume": resume},
        parent_run_id=parent_run_id,
    )
    recorder.start()
    try:
        table = stage_table(settings, plan)
        lineage = {**plan.lineage(), "run_id": recorder.run_id, "code_version": code_version()}
        result = train(table, init=plan.init, out=plan.out, objectives=objectives, primary=plan.primary,
                       config=config, work_dir=plan.work_dir, resume=resume, lineage=lineage, on_event=on_event)
        registered = register_folder(settings, result.checkpoint, name=plan.name, run_id=recorder.run_id)
    except BaseException as exc:
        recorder.fail(f"{type(exc).__name__}: {exc}")
        raise
    summary = {**result.to_json(), "run_id": recorder.run_id, "stage": plan.stage,
               "registered": registered.as_dict()}
    summary.pop("lineage", None)
    recorder.complete(summary)
    return summary
