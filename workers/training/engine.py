"""Training a BLEURT-style learned metric on transformers' ``Trainer``.

Sellam et al. (2020) fine-tune BERT with a linear head on the [CLS] vector on human ratings (§3)
and, before that, pre-train it on synthetic pairs with one head per signal and the loss
``Σ_k γ_k ℓ_k`` (§4, eq. 1); appendix B.1: Adam, learning rate 1e-5, batch 32, evaluation every
1,500 steps, keeping the checkpoint that is best on held-out data. :func:`train` does both:
which heads it trains is given by its objectives (:mod:`assay.workers.training.objectives`).

What it does, in order:

1. checks the table (:mod:`~assay.workers.training.data`), holds out 10% of the *items* for
   validation (seeded) and standardises the regression targets on the training split (A.2);
2. starts from ``init``: an Assay checkpoint folder (e.g. a pre-trained one) or an encoder (folder,
   hub id, or None for the embedded MiniLM), which is first made a checkpoint by
   :func:`~assay.workers.checkpoint.create_from_encoder` under ``work_dir/init-<key>``;
3. encodes every pair once with :meth:`BleurtScorer.encode` (the scoring input, exactly) and trains
   with ``Trainer``: AdamW, linear warm-up and decay, gradient clipping, length-grouped batches
   padded per batch, bf16 autocast on CUDA, data parallel under ``torchrun``;
4. every ``eval_every`` steps and after the last, computes Kendall τ (scipy ``kendalltau``, τ-b)
   and Pearson r between the primary objective's predictions and targets on the validation split;
   an improvement writes the weights to ``work_dir/best/step-N.safetensors``; early stopping after
   ``patience`` validations without improvement;
5. every ``save_every`` steps, Trainer's resumable state (weights, optimizer, scheduler, RNG, and
   the position in the data through the step count) goes to ``work_dir/trainer/checkpoint-N``;
   ``resume=True`` continues from the last complete one;
6. exports the best step's weights with :func:`~assay.workers.checkpoint.save_checkpoint` (written
   beside ``out`` and renamed into place), with the lineage: the caller's, plus the objectives,
   hyper-parameters, split digests, best step and validation curve.

Heads in the exported checkpoint: the rating ``head`` is the one trained by the objective named
``rating`` (its normalisation undoes the standardisation of the ratings); without such an objective
(pre-training) the init's rating head and normalisation are kept as they were. Signal heads are the
ones trained in this run; an init's signal heads that no objective trains are **dropped** (they
were fitted to the encoder as it was before this run, so their outputs would no longer mean
anything; the parent's digest in the lineage still leads to them).

On CUDA the steps are short for a small encoder (MiniLM: ~25 ms, mostly Python), so the defaults
avoid making the CPU wait for the GPU: the per-step loss is kept as a tensor and read every
``log_every`` (50) steps, host-to-device copies are asynchronous from pinned memory, and batches
are padded to a multiple of 16 tokens (each new sequence length costs a one-time kernel selection).
On the CPU every step is logged and there is no extra padding. AdamW is the fused kernel on both.
Frozen blocks (staged unfreezing) stop autograd, so they cost no backward pass.
``benchmarks/train_throughput.py`` measures the effect.

``work_dir`` layout: ``run.json`` (what is being trained; a resume must match it), ``init-<key>/``,
``trainer/checkpoint-N/``, ``best/step-N.safetensors``, ``steps.jsonl`` (step, loss, learning rate)
and ``evals.jsonl`` (the validation curve).
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import PartialState
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from scipy.stats import kendalltau, pearsonr
from torch import nn
from transformers import (
    EarlyStoppingCallback,
    EvalPrediction,
    PrinterCallback,
    Trainer,
    TrainerCallback,
    TrainerState,
    TrainingArguments,
)

from assay.atomic import atomic_path
from assay.checkpoints.folder import CONFIG_FILE, checkpoint_digest
from assay.errors import CheckpointError, UsageError
from assay.provenance import code_version, short
from assay.training.config import DEFAULT_POOLING, WSD_DECAY_RATIO, TrainConfig
from assay.workers.bleurt import BleurtScorer
from assay.workers.checkpoint import create_from_encoder, save_checkpoint
from assay.workers.device import pick_device
from assay.workers.training.batches import EpochSampler, PairCollator, PairDataset
from assay.workers.training.data import (
    Standardisation,
    check_split,
    items_digest,
    label_matrix,
    read_rows,
    rows_digest,
    split_by_item,
)
from assay.workers.training.model import MultiTaskModel, encoder_blocks, prepare_model
from assay.workers.training.objectives import RATING, Objective, check_objectives

__all__ = ["TrainResult", "train"]

EventHandler = Callable[[dict[str, Any]], None]
_CHECKPOINT_DIR = re.compile(r"^checkpoint-(\d+)$")
_BEST_FILE = re.compile(r"^step-(\d+)\.safetensors$")
RUN_FILE = "run.json"
STEPS_FILE = "steps.jsonl"
EVALS_FILE = "evals.jsonl"


@dataclass
class TrainResult:
    """What a training run produced, and how."""

    checkpoint: Path
    digest: str
    best_step: int
    """the optimizer step whose weights were exported"""
    best_kendall_tau: float | None
    curve: list[dict[str, Any]]
    """validation curve: {step, epoch, train_loss, val_loss, val_kendall_tau, val_pearson}"""
    steps: int
    """optimizer steps done in all (a resumed run counts the steps before the interruption)"""
    steps_run: int
    """optimizer steps done by this call"""
    resumed_from: int | None
    stopped_early: bool
    n_train: int
    n_validation: int
    n_train_items: int
    n_validation_items: int
    splits: dict[str, str]
    """sha256 of the sorted item ids of each split (:func:`~assay.workers.training.data.items_digest`)"""
    n_truncated: int
    """pairs longer than max_length (truncated longest first, as in scoring)"""
    seconds: float
    pairs_per_second: float
    """training pairs per second over this call's ``Trainer.train`` (its setup and saves included,
    validation excluded); ``benchmarks/train_throughput.py`` times the steps alone"""
    device: str
    world_size: int
    lineage: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in vars(self).items()}
        data["checkpoint"] = str(self.checkpoint)
        return _json_safe(data)


def _json_safe(value: Any) -> Any:
    """NaN/inf -> None (JSON has no NaN), recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        return _json_safe(value.item())
    if isinstance(value, Path):
        return str(value)
    return value


# ---------------------------------------------------------------------------------------------
# The Trainer and its callbacks
# ---------------------------------------------------------------------------------------------


class _Progress:
    """Per-step losses not yet written: kept as tensors, read in one go when the log is flushed, so
    that on CUDA a step does not wait for the GPU to finish (the CPU prepares the next step)."""

    def __init__(self) -> None:
        self.loss: torch.Tensor | None = None
        self.pending: list[tuple[dict[str, Any], torch.Tensor]] = []


class _AssayTrainer(Trainer):
    """``Trainer`` with Assay's batch order, staged unfreezing and a per-step loss record."""

    def __init__(self, *args: Any, sampler: EpochSampler, progress: _Progress,
                 stage_params: Callable[[int], list[nn.Parameter]] | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._assay_sampler = sampler
        self._progress = progress
        self._stage_params = stage_params
        self._staged: list[nn.Parameter] | None = None  # the parameters staged unfreezing switches
        self._frozen_now: set[int] | None = None

    def _get_train_sampler(self, train_dataset: Any = None) -> EpochSampler:
        return self._assay_sampler

    def _freeze(self, frozen_params: list[nn.Parameter]) -> None:
        """Stop autograd at the blocks not yet unfrozen, so that they cost no backward pass (the
        lowest frozen blocks need no input gradient either: with the embeddings and the bottom two of
        MiniLM's six blocks frozen, a pre-training step took about a quarter less time on the CPU).

        Called from the first step on, when Trainer has already built AdamW over every trainable
        parameter, so a block unfrozen later is in the optimizer. One process only: DDP registers
        its gradient hooks once, for the parameters that required a gradient then."""
        assert self.model is not None
        if self._staged is None:
            self._staged = [p for p in self.model.parameters() if p.requires_grad]
        frozen = {id(p) for p in frozen_params}
        if frozen != self._frozen_now:
            for p in self._staged:
                p.requires_grad_(id(p) not in frozen)
            self._frozen_now = frozen

    def training_step(self, model: nn.Module, inputs: dict[str, Any], num_items_in_batch: Any = None,
                      ) -> torch.Tensor:
        frozen = self._stage_params(self.state.global_step) if self._stage_params is not None else []
        if self._stage_params is not None and self.accelerator.num_processes == 1:
            self._freeze(frozen)
        loss = super().training_step(model, inputs, num_items_in_batch)
        # staged unfreezing: blocks not yet unfrozen take no step (AdamW skips a None grad)
        for p in frozen:
            p.grad = None
        # the loss of the whole global batch (each process holds its share of it); read when flushed
        self._progress.loss = self.accelerator.reduce(loss.detach().clone(), "mean")
        return loss


class _Recorder(TrainerCallback):
    """Step log, validation curve, best-weights snapshots, events (main process writes)."""

    def __init__(self, run: _Run, log_every: int) -> None:
        self.run = run
        self.log_every = log_every
        self.eval_seconds = 0.0

    def on_step_end(self, args: TrainingArguments, state: Any, control: Any, **kwargs: Any) -> None:
        step = int(state.global_step)
        if step >= state.max_steps:
            control.should_evaluate = True  # the last step is always validated
        scheduler = kwargs.get("lr_scheduler")
        lr = float(scheduler.get_last_lr()[0]) if scheduler is not None else math.nan
        progress = self.run.progress
        if progress.loss is not None:
            progress.pending.append(({"step": step, "epoch": float(state.epoch or 0.0), "lr": lr}, progress.loss))
            progress.loss = None
        # written before every validation and save: a resumed run finds every step up to its save
        if control.should_evaluate or control.should_save or step % self.log_every == 0:
            self.flush()

    def flush(self) -> None:
        pending, self.run.progress.pending = self.run.progress.pending, []
        if not pending or not self.run.is_main:
            return
        losses = torch.stack([loss.float().reshape(()) for _, loss in pending]).tolist()
        for (entry, _), loss in zip(pending, losses, strict=True):
            entry = {"step": entry["step"], "epoch": entry["epoch"], "loss": loss, "lr": entry["lr"]}
            self.run.append(STEPS_FILE, entry)
            self.run.emit({"event": "step", **entry})

    def on_evaluate(self, args: TrainingArguments, state: Any, control: Any, **kwargs: Any) -> None:
        metrics: dict[str, float] = kwargs["metrics"]
        step = int(state.global_step)
        self.eval_seconds += float(metrics.get("eval_runtime", 0.0))
        tau = float(metrics["eval_kendall_tau"])
        improved = not math.isnan(tau) and (state.best_metric is None or tau > state.best_metric)
        entry = {"step": step, "epoch": float(state.epoch or 0.0), "val_loss": float(metrics["eval_val_loss"]),
                 "val_kendall_tau": tau, "val_pearson": float(metrics["eval_pearson"]),
                 "val_pairs": int(metrics["eval_pairs"])}
        self.run.append(EVALS_FILE, entry)
        if improved and self.run.is_main:
            self.run.save_best(step, kwargs["model"])
        self.run.emit({"event": "evaluate", **entry, "best": improved})

    def on_save(self, args: TrainingArguments, state: Any, control: Any, **kwargs: Any) -> None:
        if self.run.is_main:
            current = {int(state.best_global_step)} if state.best_global_step is not None else set()
            self.run.prune_best(self.run.recorded_bests() | current)
        self.run.emit({"event": "save", "step": int(state.global_step)})


# ---------------------------------------------------------------------------------------------
# A run's files
# ---------------------------------------------------------------------------------------------


class _Run:
    """The files of one training run under ``work_dir`` (see the module docstring)."""

    def __init__(self, work_dir: Path, is_main: bool, on_event: EventHandler | None) -> None:
        self.work_dir = work_dir
        self.is_main = is_main
        self.on_event = on_event
        self.progress = _Progress()

    @property
    def trainer_dir(self) -> Path:
        return self.work_dir / "trainer"

    @property
    def best_dir(self) -> Path:
        return self.work_dir / "best"

    def emit(self, event: dict[str, Any]) -> None:
        if self.is_main and self.on_event is not None:
            self.on_event(_json_safe(event))

    def append(self, name: str, entry: dict[str, Any]) -> None:
        if self.is_main:
            with (self.work_dir / name).open("a", encoding="utf-8") as f:
                f.write(json.dumps(_json_safe(entry)) + "\n")

    def read(self, name: str) -> list[dict[str, Any]]:
        path = self.work_dir / name
        if not path.is_file():
            return []
        entries = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by a kill
                continue
        return entries

    def truncate(self, name: str, last_step: int) -> None:
        """Keep the entries of steps <= last_step (a resumed run redoes the later ones)."""
        kept = [e for e in self.read(name) if int(e["step"]) <= last_step]
        with atomic_path(self.work_dir / name) as tmp:
            tmp.write_text("".join(json.dumps(e) + "\n" for e in kept), encoding="utf-8")

    def checkpoints(self) -> list[tuple[int, Path, bool]]:
        """(step, folder, complete) of Trainer's checkpoints; complete = trainer_state.json written
        (Trainer writes it last)."""
        if not self.trainer_dir.is_dir():
            return []
        found = []
        for path in self.trainer_dir.iterdir():
            m = _CHECKPOINT_DIR.match(path.name)
            if m and path.is_dir():
                found.append((int(m[1]), path, (path / "trainer_state.json").is_file()))
        return sorted(found)

    def last_checkpoint(self) -> tuple[int, Path] | None:
        complete = [(step, path) for step, path, ok in self.checkpoints() if ok]
        return complete[-1] if complete else None

    def best_path(self, step: int) -> Path:
        return self.best_dir / f"step-{step}.safetensors"

    def save_best(self, step: int, model: nn.Module) -> None:
        metric = model.metric if isinstance(model, MultiTaskModel) else model
        state = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in metric.state_dict().items()}
        self.best_dir.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.best_path(step)) as tmp:
            save_file(state, str(tmp), metadata={"format": "pt", "step": str(step)})

    def best_steps(self) -> list[int]:
        if not self.best_dir.is_dir():
            return []
        return sorted(int(m[1]) for p in self.best_dir.iterdir() if (m := _BEST_FILE.match(p.name)))

    def recorded_bests(self) -> set[int]:
        """The best steps recorded by the complete Trainer checkpoints still on disk: a resume from
        any of them needs that step's snapshot."""
        bests = set()
        for _, path, complete in self.checkpoints():
            if complete:
                best = json.loads((path / "trainer_state.json").read_text(encoding="utf-8")).get("best_global_step")
                if best is not None:
                    bests.add(int(best))
        return bests

    def prune_best(self, keep: set[int], newer_than: int | None = None) -> None:
        """Delete the best-weights snapshots not in ``keep`` that are older than its newest (no saved
        state can need them), and with ``newer_than`` those after that step (redone on resume)."""
        newest = max(keep, default=-1)
        for step in self.best_steps():
            if step not in keep and (step < newest or (newer_than is not None and step > newer_than)):
                self.best_path(step).unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------
# train()
# ---------------------------------------------------------------------------------------------


def _is_checkpoint_folder(init: str | Path | None) -> bool:
    return init is not None and Path(init).expanduser().is_dir() and (Path(init).expanduser() / CONFIG_FILE).is_file()


def _stage_params_fn(model: MultiTaskModel, config: TrainConfig) -> Callable[[int], list[nn.Parameter]] | None:
    """For staged unfreezing: step -> the encoder parameters that take no step at that step."""
    if not config.unfreeze:
        return None
    encoder = model.metric.encoder
    blocks = encoder_blocks(encoder)
    embeddings = getattr(encoder, "embeddings", None)

    def frozen(step: int) -> list[nn.Parameter]:
        n = config.trainable_blocks(step)
        if n is None or n >= len(blocks):
            return []
        params = [p for block in blocks[: len(blocks) - n] for p in block.parameters()]
        if embeddings is not None:
            params += list(embeddings.parameters())
        return params

    return frozen


def _metrics_fn(model: MultiTaskModel, primary: Objective, norm: Standardisation,
                ) -> Callable[[EvalPrediction], dict[str, float]]:
    index = model.objectives.index(primary)
    out_col = model.output_slices[index].start
    label_col = model.label_slices[index].start

    def compute(pred: EvalPrediction) -> dict[str, float]:
        logits = np.asarray(pred.predictions, dtype=np.float32)
        labels = np.asarray(pred.label_ids, dtype=np.float32)
        was_training = model.training
        model.eval()  # a masked mean over the whole split, no cross-process counts
        with torch.no_grad():
            val_loss = float(model.loss(torch.from_numpy(logits), torch.from_numpy(labels)))
        model.train(was_training)
        target = labels[:, label_col].astype(np.float64) * norm.std + norm.mean
        predicted = logits[:, out_col].astype(np.float64) * norm.std + norm.mean
        present = np.isfinite(target)
        x, y = predicted[present], target[present]
        constant = np.ptp(x) == 0 or np.ptp(y) == 0
        tau = math.nan if constant else float(kendalltau(x, y).statistic)
        r = math.nan if constant else float(pearsonr(x, y).statistic)
        return {"kendall_tau": tau, "pearson": r, "val_loss": val_loss, "pairs": float(present.sum())}

    return compute


#: lineage keys the run records itself; a caller's ``lineage`` may not set them
RUN_LINEAGE_KEYS = frozenset({
    "init", "objectives", "primary", "normalisation", "training_data", "best_step", "best_kendall_tau",
    "validation_curve", "steps", "stopped_early", "world_size", "device", "bf16",
})


def _check_lineage(lineage: Mapping[str, Any] | None, config: TrainConfig) -> dict[str, Any]:
    """The caller's lineage, JSON-able. It may set ``operation`` and ``code_version`` (kept), a
    ``parent_digest`` and ``seed`` (they must be the init's digest and the config's seed) and
    ``hyperparameters`` (merged under the config's); the keys of :data:`RUN_LINEAGE_KEYS` are the
    run's."""
    if lineage is None:
        return {}
    if not isinstance(lineage, Mapping):
        raise UsageError(f"lineage must be a mapping, not {type(lineage).__name__}")
    try:
        data = json.loads(json.dumps(dict(lineage), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"lineage must be JSON-serialisable: {exc}") from exc
    clashes = sorted(RUN_LINEAGE_KEYS & set(data))
    if clashes:
        raise UsageError(f"lineage key(s) {', '.join(clashes)} are recorded by the training run itself; "
                         "pass the caller's provenance under other names")
    if "seed" in data and data["seed"] != config.seed:
        raise UsageError(f"lineage seed {data['seed']!r} is not TrainConfig.seed ({config.seed})")
    if "hyperparameters" in data and not isinstance(data["hyperparameters"], dict):
        raise UsageError("lineage hyperparameters must be a mapping")
    return data


def train(
    table_or_examples: Any,
    *,
    init: str | Path | None,
    out: str | Path,
    objectives: Sequence[Objective],
    primary: str,
    config: TrainConfig,
    work_dir: str | Path,
    resume: bool = False,
    lineage: Mapping[str, Any] | None = None,
    on_event: EventHandler | None = None,
    validation: Any = None,
) -> TrainResult:
    """Train a BLEURT-style model and export the best validation step's checkpoint to ``out``.

    ``table_or_examples``: a pyarrow Table, pandas DataFrame or list of row dicts with
    ``reference``, ``candidate``, ``item_id`` and the objectives' columns (see
    :mod:`~assay.workers.training.data`). ``init``: an Assay checkpoint folder, or an encoder (a
    folder, a hub id, or None for the embedded all-MiniLM-L6-v2). ``primary``: the regression
    objective validation ranks (Kendall τ decides the best step). ``validation``: an explicit
    validation table instead of the seeded 10% item split (it must share no item with training).
    ``lineage``: the caller's provenance (data versions, digests, code version, ...), recorded in
    the checkpoint's ``lineage`` with what this run adds. ``on_event`` receives a dict per step,
    validation, save and export (main process only).

    Under ``torchrun`` every process calls ``train`` with the same arguments; process 0 writes the
    files and the checkpoint, and every process returns the result. Bad input raises
    :class:`~assay.errors.InputError` / :class:`~assay.errors.CheckpointError` /
    :class:`~assay.errors.UsageError` before anything is written to ``out``.
    """
    started = time.perf_counter()
    objectives = list(objectives)
    check_objectives(objectives, primary)
    if not isinstance(config, TrainConfig):
        raise UsageError(f"config must be a TrainConfig, not {type(config).__name__}")
    caller_lineage = _check_lineage(lineage, config)
    out = Path(out).expanduser().resolve()
    work_dir = Path(work_dir).expanduser().resolve()
    if out.exists():
        raise UsageError(f"{out} already exists; export the checkpoint into a new folder")
    if work_dir == out or out.is_relative_to(work_dir):
        raise UsageError(f"out ({out}) must not lie inside work_dir ({work_dir}): work_dir holds temporary state")
    by_name = {o.name: o for o in objectives}
    primary_objective = by_name[primary]

    # -- data: checked, split by item, standardised (nothing is written yet) ------------------
    rows = read_rows(table_or_examples, objectives)
    if validation is None:
        train_idx, val_idx = split_by_item(rows.item_ids, config.validation_fraction, config.seed)
        train_rows, val_rows = rows.take(train_idx), rows.take(val_idx)
    else:
        train_rows = rows
        val_rows = read_rows(validation, objectives, source="validation table")
    check_split(train_rows, val_rows, primary_objective.columns[0])
    norms = {o.name: Standardisation.fit(train_rows.targets[o.columns[0]], o.columns[0], train_rows.source)
             for o in objectives if o.kind == "regression"}

    # -- devices and processes ------------------------------------------------------------------
    device = pick_device(config.device)
    use_cpu = device.type == "cpu"
    state = PartialState(cpu=use_cpu)
    world = int(state.num_processes)
    if config.batch_size % world:
        raise UsageError(f"batch_size {config.batch_size} must be a multiple of the {world} processes "
                         "(each process takes an equal share of every global batch)")
    bf16 = (not use_cpu) if config.bf16 is None else bool(config.bf16)
    if bf16 and use_cpu:
        raise UsageError("bf16 autocast is for CUDA; train on the CPU in float32 (bf16=None or False)")

    # -- the init checkpoint ----------------------------------------------------------------------
    init_is_checkpoint = _is_checkpoint_folder(init)
    if init_is_checkpoint:
        init_folder = Path(init).expanduser().resolve()  # type: ignore[arg-type]
    else:
        # named by what it is made from, so a resumed run finds the same one
        head_input = config.head_input or DEFAULT_POOLING
        made_from = f"{init}\0{config.seed}" + ("" if head_input == "cls" else f"\0{head_input}")
        key = short(hashlib.sha256(made_from.encode()).hexdigest())
        init_folder = work_dir / f"init-{key}"
        with state.main_process_first():
            if not init_folder.is_dir():
                work_dir.mkdir(parents=True, exist_ok=True)
                create_from_encoder(init, init_folder, seed=config.seed, head_input=head_input)
    # strict load: refuses damaged or mismatched folders; it hashes the init folder, once
    scorer = BleurtScorer(init_folder, device="cpu")
    parent_digest: str | None = scorer.digest if init_is_checkpoint else None
    if config.head_input is not None and scorer.model.head_input != config.head_input:
        raise UsageError(f"TrainConfig.head_input is {config.head_input!r}, but the init checkpoint {init_folder} "
                         f"reads {scorer.model.head_input!r}: a checkpoint keeps what its heads read (leave "
                         "head_input unset, or start from an encoder)")
    positions = int(scorer.config.encoder_config.get("max_position_embeddings", 0) or 0)
    if config.max_length is not None:
        if positions and config.max_length > positions:
            raise CheckpointError(init_folder, f"TrainConfig.max_length {config.max_length} exceeds the encoder's "
                                  f"{positions} positions", expected=f"max_length <= {positions}")
        scorer.max_length = int(config.max_length)
    if "parent_digest" in caller_lineage and caller_lineage["parent_digest"] != parent_digest:
        raise UsageError(f"lineage parent_digest {caller_lineage['parent_digest']!r} is not the digest of init "
                         f"({parent_digest!r})")

    # -- the run's files --------------------------------------------------------------------------
    spec = {
        "rows_digest": rows_digest(rows),
        "validation_digest": None if validation is None else rows_digest(val_rows),
        "objectives": [o.describe() for o in objectives],
        "primary": primary,
        "config": config.to_json(),
        "init": None if init is None else str(init),
        "init_digest": scorer.digest,
    }
    run = _Run(work_dir, state.is_main_process, on_event)
    resume_from: tuple[int, Path] | None = None
    with state.main_process_first():
        resume_from = _prepare_work_dir(run, spec, resume) if state.is_main_process else run.last_checkpoint()
    if not resume:
        resume_from = None

    # -- encoding, model ------------------------------------------------------------------------
    train_pairs = scorer.encode(train_rows.references, train_rows.candidates)
    val_pairs = scorer.encode(val_rows.references, val_rows.candidates)
    n_truncated = sum(p.truncated for p in train_pairs) + sum(p.truncated for p in val_pairs)
    train_set = PairDataset(train_pairs, label_matrix(train_rows, objectives, norms))
    val_set = PairDataset(val_pairs, label_matrix(val_rows, objectives, norms)).sorted_by_length()
    model = prepare_model(scorer, objectives, config)
    max_steps = _max_steps(config, len(train_set))
    workers = config.dataloader_workers
    eval_batch = config.eval_batch_size or 2 * config.batch_size
    eval_batch = math.ceil(eval_batch / world) * world

    args = _training_arguments(config, run.trainer_dir, max_steps, eval_batch, workers, use_cpu, bf16, world,
                               steps_per_epoch=_batches_per_epoch(config, len(train_set)))
    recorder = _Recorder(run, config.log_every or (1 if use_cpu else 50))
    callbacks: list[TrainerCallback] = [recorder]
    if config.patience is not None:
        callbacks.append(EarlyStoppingCallback(early_stopping_patience=config.patience))
    trainer = _AssayTrainer(
        model=model,
        args=args,
        train_dataset=train_set,
        eval_dataset=val_set,
        data_collator=PairCollator(scorer, config.pad_to_multiple_of or (1 if use_cpu else 16)),
        compute_metrics=_metrics_fn(model, primary_objective, norms[primary]),
        callbacks=callbacks,
        sampler=EpochSampler(train_set.lengths, config.batch_size, config.seed, config.group_by_length),
        progress=run.progress,
        stage_params=_stage_params_fn(model, config),
    )
    trainer.remove_callback(PrinterCallback)  # events go to on_event; stdout stays the caller's
    run.emit({"event": "start", "max_steps": max_steps, "n_train": len(train_set), "n_validation": len(val_set),
              "world_size": world, "device": str(args.device), "resume_from": resume_from[0] if resume_from else None})
    train_started = time.perf_counter()
    if resume_from is not None and _finished(resume_from[1], max_steps):
        # trained to the end already (the export failed, or was interrupted): Trainer would run one
        # more step when resumed at its last step, so its state is read instead
        tstate = TrainerState.load_from_json(str(resume_from[1] / "trainer_state.json"))
    else:
        trainer.train(resume_from_checkpoint=str(resume_from[1]) if resume_from else None)
        tstate = trainer.state
    train_seconds = time.perf_counter() - train_started
    steps_run = int(tstate.global_step) - (resume_from[0] if resume_from else 0)
    stopped_early = int(tstate.global_step) < max_steps

    # -- export the best step ---------------------------------------------------------------------
    state.wait_for_everyone()  # every log line and snapshot is written
    curve = _curve(run)
    best_step = tstate.best_global_step
    best_tau = tstate.best_metric
    if best_step is None:  # every validation was undefined (constant predictions): export the last step
        best_step, best_tau = int(tstate.global_step), math.nan
        if state.is_main_process:
            run.save_best(best_step, model)
    splits = {"train": items_digest(train_rows.item_ids), "validation": items_digest(val_rows.item_ids)}
    full_lineage = {
        "operation": "finetune" if RATING in by_name else "pretrain",
        **caller_lineage,
        "parent_digest": parent_digest,
        "init": {"folder": str(init) if init is not None else None, "checkpoint_digest": spec["init_digest"],
                 "base_encoder": dict(scorer.config.base_encoder)},
        "objectives": [o.describe() for o in objectives],
        "primary": primary,
        "hyperparameters": config.to_json(),
        "seed": config.seed,
        "normalisation": {name: n.to_json() for name, n in norms.items()},
        "training_data": {
            "rows_digest": spec["rows_digest"], "validation_digest": spec["validation_digest"],
            "n_train": len(train_set), "n_validation": len(val_set), "n_train_items": len(set(train_rows.item_ids)),
            "n_validation_items": len(set(val_rows.item_ids)), "splits": splits, "n_truncated": n_truncated,
            "max_length": scorer.max_length,
        },
        "best_step": int(best_step),
        "best_kendall_tau": best_tau,
        "validation_curve": curve,
        "steps": int(tstate.global_step),
        "stopped_early": stopped_early,
        "world_size": world,
        "device": str(args.device),
        "bf16": bf16,
        "code_version": caller_lineage.get("code_version") or code_version(),
    }
    full_lineage["hyperparameters"] = {**dict(caller_lineage.get("hyperparameters") or {}), **config.to_json()}
    full_lineage = _json_safe(full_lineage)
    digest = ""
    if state.is_main_process:
        run.emit({"event": "export", "step": int(best_step), "out": str(out)})
        _export(run, scorer, model, int(best_step), out, norms, full_lineage)
        digest = checkpoint_digest(out)
        run.emit({"event": "exported", "digest": digest, "out": str(out)})
    state.wait_for_everyone()
    digest = _from_main_process(digest, world)  # the export's one hash, not recomputed by the others
    pair_seconds = max(train_seconds - recorder.eval_seconds, 1e-9)
    return TrainResult(
        checkpoint=out,
        digest=digest,
        best_step=int(best_step),
        best_kendall_tau=None if best_tau is None or math.isnan(best_tau) else float(best_tau),
        curve=curve,
        steps=int(tstate.global_step),
        steps_run=steps_run,
        resumed_from=resume_from[0] if resume_from else None,
        stopped_early=stopped_early,
        n_train=len(train_set),
        n_validation=len(val_set),
        n_train_items=len(set(train_rows.item_ids)),
        n_validation_items=len(set(val_rows.item_ids)),
        splits=splits,
        n_truncated=n_truncated,
        seconds=time.perf_counter() - started,
        pairs_per_second=steps_run * config.batch_size / pair_seconds,
        device=str(args.device),
        world_size=world,
        lineage=full_lineage,
    )


def _from_main_process(value: str, world: int) -> str:
    """Process 0's ``value`` in every process (a broadcast under ``torchrun``; as it is alone)."""
    if world == 1 or not torch.distributed.is_available() or not torch.distributed.is_initialized():
        return value
    box = [value]
    torch.distributed.broadcast_object_list(box, src=0)
    return str(box[0])


def _training_arguments(config: TrainConfig, trainer_dir: Path, max_steps: int, eval_batch: int, workers: int,
                        use_cpu: bool, bf16: bool, world: int, *, steps_per_epoch: int) -> TrainingArguments:
    """Trainer's arguments for ``config`` (the paper's optimisation, appendix B.1; see the module
    docstring for what each part does)."""
    return TrainingArguments(
        output_dir=str(trainer_dir),
        per_device_train_batch_size=config.batch_size,  # global: split across processes
        per_device_eval_batch_size=eval_batch,
        accelerator_config={"split_batches": True, "non_blocking": not use_cpu},  # pinned, asynchronous copies
        max_steps=max_steps,
        learning_rate=config.learning_rate,
        weight_decay=config.weight_decay,
        warmup_steps=_warmup_steps(config, max_steps),
        lr_scheduler_type={"linear": "linear", "constant": "constant_with_warmup", "wsd": "warmup_stable_decay",
                           "hold-epoch": "warmup_stable_decay"}[config.lr_schedule],
        lr_scheduler_kwargs=_decay_kwargs(config, max_steps, steps_per_epoch),
        max_grad_norm=config.max_grad_norm,
        # fused: one kernel per step on CUDA; on the CPU one pass over the parameters instead of
        # several (AdamW's update went from about 100 to 30 ms a step for MiniLM on 2 cores)
        optim="adamw_torch_fused",
        seed=config.seed,
        data_seed=config.seed,
        eval_strategy="steps",
        eval_steps=config.eval_every,
        save_strategy="steps",
        save_steps=config.save_every,
        save_total_limit=2,  # the newest may be cut by a kill; the one before it is then resumed
        logging_strategy="steps",
        logging_steps=config.eval_every,
        metric_for_best_model="kendall_tau",
        greater_is_better=True,
        load_best_model_at_end=False,  # the best step's weights are kept by _Recorder, cheaper
        report_to="none",
        disable_tqdm=True,
        use_cpu=use_cpu,
        bf16=bf16,
        dataloader_num_workers=workers,
        dataloader_persistent_workers=workers > 0,
        dataloader_pin_memory=not use_cpu,
        logging_nan_inf_filter=False,  # it reads the loss every step, which waits for the GPU
        remove_unused_columns=False,
        label_names=["labels"],
        ddp_find_unused_parameters=False,
        ddp_backend="gloo" if use_cpu and world > 1 else None,
        restore_callback_states_from_checkpoint=True,
        log_level="warning",
    )


def _decay_kwargs(config: TrainConfig, max_steps: int, steps_per_epoch: int) -> dict[str, Any]:
    """transformers' ``warmup_stable_decay`` arguments of the ``wsd`` and ``hold-epoch`` schedules
    (TrainConfig.lr_schedule); nothing for the others. ``wsd`` decays over the last
    :data:`WSD_DECAY_RATIO` of the steps; ``hold-epoch`` over every step after the first epoch, and
    never over fewer than ``wsd`` (nor over the warm-up)."""
    shortest = math.ceil(WSD_DECAY_RATIO * max_steps)
    if config.lr_schedule == "wsd":
        decay = shortest
    elif config.lr_schedule == "hold-epoch":
        decay = min(max(shortest, max_steps - steps_per_epoch), max_steps - _warmup_steps(config, max_steps))
    else:
        return {}
    return {"num_decay_steps": decay, "decay_type": "linear"}


def _warmup_steps(config: TrainConfig, max_steps: int) -> int:
    return math.ceil(config.warmup_ratio * max_steps)


def _batches_per_epoch(config: TrainConfig, n_train: int) -> int:
    """Optimizer steps in one pass over ``n_train`` pairs (the batch is global)."""
    return math.ceil(n_train / config.batch_size)


def _max_steps(config: TrainConfig, n_train: int) -> int:
    if config.max_steps is not None:
        return int(config.max_steps)
    return max(1, math.ceil(float(config.epochs or 0) * _batches_per_epoch(config, n_train)))


def _finished(checkpoint: Path, max_steps: int) -> bool:
    """Whether the run saved in ``checkpoint`` had ended: all steps done, or stopped early."""
    saved = json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))
    control = saved.get("stateful_callbacks", {}).get("TrainerControl", {}).get("args", {})
    return int(saved.get("global_step", 0)) >= max_steps or bool(control.get("should_training_stop"))


def _prepare_work_dir(run: _Run, spec: dict[str, Any], resume: bool) -> tuple[int, Path] | None:
    """Check ``work_dir`` against ``spec``; on resume, drop what the last complete save did not
    record (later log lines, best snapshots, cut checkpoint folders). Returns the checkpoint to
    resume from, or None to start afresh."""
    run.work_dir.mkdir(parents=True, exist_ok=True)
    spec_path = run.work_dir / RUN_FILE
    recorded = json.loads(spec_path.read_text(encoding="utf-8")) if spec_path.is_file() else None
    if recorded is not None and not resume:
        raise UsageError(f"{run.work_dir} already holds a training run ({RUN_FILE}); pass resume=True to continue "
                         "it, or use an empty work_dir")
    if recorded is not None and recorded != spec:
        changed = sorted(k for k in set(spec) | set(recorded) if spec.get(k) != recorded.get(k))
        raise UsageError(f"cannot resume the run in {run.work_dir}: {', '.join(changed)} differ from the "
                         f"interrupted run's ({spec_path}); use a new work_dir for a different run")
    last = run.last_checkpoint() if resume else None
    for step, path, complete in run.checkpoints():
        if not complete or last is None or step > last[0]:
            shutil.rmtree(path, ignore_errors=True)  # cut by the interruption, or from a fresh start
    if last is None:
        for name in (STEPS_FILE, EVALS_FILE):
            (run.work_dir / name).unlink(missing_ok=True)
        shutil.rmtree(run.best_dir, ignore_errors=True)
    else:
        run.truncate(STEPS_FILE, last[0])
        run.truncate(EVALS_FILE, last[0])
        run.prune_best(run.recorded_bests(), newer_than=last[0])
    with atomic_path(spec_path) as tmp:
        tmp.write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
    return last


def _curve(run: _Run) -> list[dict[str, Any]]:
    """The validation curve, with the mean training loss of the steps since the previous validation."""
    steps = run.read(STEPS_FILE)
    curve = []
    previous = 0
    for e in run.read(EVALS_FILE):
        step = int(e["step"])
        losses = [s["loss"] for s in steps if previous < int(s["step"]) <= step and s["loss"] is not None]
        curve.append({"step": step, "epoch": e["epoch"], "train_loss": float(np.mean(losses)) if losses else None,
                      "val_loss": e["val_loss"], "val_kendall_tau": e["val_kendall_tau"],
                      "val_pearson": e["val_pearson"]})
        previous = step
    return curve


def _export(run: _Run, scorer: BleurtScorer, model: MultiTaskModel, best_step: int, out: Path,
            norms: Mapping[str, Standardisation], lineage: dict[str, Any]) -> None:
    """Write the checkpoint of ``best_step``'s weights to ``out`` (atomically, by save_checkpoint)."""
    metric = model.metric
    weights = load_file(str(run.best_path(best_step)))
    broken = sorted(name for name, tensor in weights.items() if not torch.isfinite(tensor).all())
    if broken:
        raise CheckpointError(run.best_path(best_step), f"step {best_step}'s weights hold NaN or infinite values "
                              f"({', '.join(broken[:3])}); nothing was exported",
                              expected="finite weights: lower the learning rate or check the targets")
    metric.to("cpu")
    metric.load_state_dict(weights, strict=True)
    signal_objectives = [o for o in model.objectives if o.name != RATING]
    specs = model.signal_specs({o.name: norms[o.name].to_json() for o in signal_objectives if o.name in norms})
    rating_trained = len(signal_objectives) < len(model.objectives)
    try:
        save_checkpoint(
            out, metric.encoder, scorer.tokenizer, metric.head,
            base_encoder={k: v for k, v in scorer.config.base_encoder.items() if k != "model_type"},
            max_length=scorer.max_length,
            normalisation=norms[RATING].to_json() if rating_trained else dict(scorer.config.normalisation),
            lineage=lineage,
            head_input=metric.head_input,
            signal_heads={o.name: model.head_of(o) for o in signal_objectives},
            signal_specs=specs,
        )
    except (OSError, SafetensorError) as exc:  # e.g. a full disk: save_checkpoint left nothing behind
        code = getattr(exc, "errno", None) or int((re.search(r"os error (\d+)", str(exc)) or [0, errno.EIO])[1])
        raise OSError(code,
                      f"{out}: the checkpoint could not be written ({exc}); nothing was exported. The best "
                      f"weights are kept in {run.best_dir}: free space and call train again with resume=True"
                      ) from exc
