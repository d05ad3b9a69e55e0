"""A training stage as a recorded job: plan (platform) -> train (:mod:`assay.workers.training`) ->
register the checkpoint and record the run.

BLEURT's stages (Sellam et al., 2020): pre-training on synthetic pairs with one head per signal
(§4), fine-tuning on human ratings (§3). Each stage here is one run row (kind ``pretrain`` or
``finetune``) whose inputs are the data versions by digest and the parent checkpoint by digest,
and whose output is a checkpoint folder that appears only when complete and is then registered in
the catalog with the run's id. A failure marks the run failed and registers nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from assay.atomic import write_parquet, write_text
from assay.checkpoints.folder import CONFIG_FILE, checkpoint_digest
from assay.checkpoints.registry import folder_of_digest, resolve_checkpoint
from assay.config import Settings
from assay.errors import AssayError, NotFoundError, UsageError
from assay.jobs.runs import RunRecorder, version_inputs
from assay.ports import LOOPBACK, free_port
from assay.progress import TrainingProgress
from assay.provenance import code_version
from assay.training.config import TrainConfig
from assay.training.plan import StagePlan, finetune_table, record_plan_data
from assay.workers.checkpoint_registration import register_folder
from assay.workers.training.engine import TrainResult, train
from assay.workers.training.objectives import Objective

EventHandler = Callable[[dict[str, Any]], None]


def resolve_init(settings: Settings, init: str | None) -> tuple[str | None, str | None]:
    """``(init, digest)``: None (the embedded encoder), a checkpoint folder (hashed once here) or a
    registered checkpoint (its catalog digest, not recomputed), or an encoder folder / hub id (no
    digest: it is not a checkpoint)."""
    if init is None:
        return None, None
    path = Path(init).expanduser()
    if path.is_dir() and (path / CONFIG_FILE).is_file():
        folder = path.resolve()
        return str(folder), checkpoint_digest(folder)
    if path.is_dir():
        return str(path.resolve()), None
    try:  # a registered checkpoint: its catalog digest (verified once, when training loads it)
        digest = resolve_checkpoint(settings, init).digest
    except NotFoundError:
        if "/" in init:  # a hub id such as bert-base-uncased or google/bert_uncased_L-2_H-128_A-2
            return init, None
        raise NotFoundError(f"--init {init!r} is neither a folder, a registered checkpoint nor a hub id "
                            "(owner/name)") from None
    return str(folder_of_digest(settings, digest)[1]), digest


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


def train_data_parallel(table: pa.Table, plan: StagePlan, *, processes: int, resume: bool,
                        lineage: dict[str, Any], on_event: EventHandler | None) -> dict[str, Any]:
    """Train with ``processes`` data-parallel processes under ``torchrun`` (one per GPU; gloo over
    loopback on the CPU) through :mod:`assay.workers.training.launch`; returns the result JSON."""
    work = Path(plan.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    table_path, spec_path = work / "launch-table.parquet", work / "launch.json"
    result_path, log_path = work / "launch-result.json", work / "launch.log"
    write_parquet(table, table_path)
    spec = {"table": str(table_path), "init": plan.init, "out": plan.out, "work_dir": str(work / "state"),
            "objectives": plan.objectives, "primary": plan.primary, "config": plan.config, "resume": resume,
            "lineage": lineage, "result": str(result_path)}
    write_text(json.dumps(spec, indent=2) + "\n", spec_path)
    command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={processes}", "--nnodes=1",
               f"--master_addr={LOOPBACK}", f"--master_port={free_port()}",
               "-m", "assay.workers.training.launch", str(spec_path)]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    with log_path.open("w", encoding="utf-8") as log, \
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:  # process 0 prints one JSON line per event
            if on_event is not None and line.startswith("{"):
                with contextlib.suppress(ValueError):
                    on_event(json.loads(line))
    stderr = log_path.read_text(encoding="utf-8", errors="replace")
    if proc.returncode != 0 or not result_path.is_file():
        errors = [ln for ln in stderr.splitlines() if ln.startswith("error: ")]
        raise AssayError(errors[0][7:] if errors else
                         f"data-parallel training failed (torchrun exit {proc.returncode}): {stderr[-2000:]}")
    return dict(json.loads(result_path.read_text(encoding="utf-8")))


def _with_progress(on_event: EventHandler | None, progress: TrainingProgress) -> EventHandler:
    def both(event: dict[str, Any]) -> None:
        progress(event)
        if on_event is not None:
            on_event(event)

    return both


def run_stage(settings: Settings, plan: StagePlan, *, resume: bool = False, on_event: EventHandler | None = None,
              parent_run_id: str | None = None, processes: int = 1,
              progress_sink: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Train one planned stage, register its checkpoint and record the run; returns the summary.
    ``processes`` > 1 trains data-parallel under ``torchrun`` with the same global batch. Progress
    (steps, loss, last validation tau) is shown as :mod:`assay.progress` says; ``progress_sink``
    takes its lines unless the process configured another (a flow passes its run logger)."""
    if processes < 1:
        raise UsageError(f"--processes is {processes}; expected >= 1")
    shown = TrainingProgress(f"{plan.stage} {plan.name}", fallback_sink=progress_sink)
    on_event = _with_progress(on_event, shown)
    config = TrainConfig(**plan.config)
    objectives = objectives_of(plan)
    recorder = RunRecorder(
        settings, plan.stage,
        inputs={"data": [version_inputs(d.version, role=d.role, rows=d.rows, groups=list(d.groups), aspect=d.aspect)
                         for d in plan.data], "init": plan.init, "init_digest": plan.init_digest},
        parameters={"name": plan.name, "config": config.to_json(), "objectives": plan.objectives,
                    "primary": plan.primary, "excluded": plan.excluded, "resume": resume},
        parent_run_id=parent_run_id,
    )
    record_plan_data(plan)  # what --resume checks is still there
    recorder.start()
    try:
        table = stage_table(settings, plan)
        lineage = {**plan.lineage(), "run_id": recorder.run_id, "code_version": code_version()}
        if processes > 1:
            outcome = train_data_parallel(table, plan, processes=processes, resume=resume, lineage=lineage,
                                          on_event=on_event)
        else:
            result: TrainResult = train(table, init=plan.init, out=plan.out, objectives=objectives,
                                        primary=plan.primary, config=config, work_dir=plan.work_dir, resume=resume,
                                        lineage=lineage, on_event=on_event)
            outcome = result.to_json()
        # the digest training computed when it exported the folder is the one registered
        registered = register_folder(settings, outcome["checkpoint"], name=plan.name, run_id=recorder.run_id,
                                     digest=outcome["digest"])
    except BaseException as exc:
        shown.close()
        recorder.fail(f"{type(exc).__name__}: {exc}")
        raise
    shown.close()
    summary = {**outcome, "run_id": recorder.run_id, "stage": plan.stage, "registered": registered.as_dict()}
    summary.pop("lineage", None)
    recorder.complete(summary)
    return summary
