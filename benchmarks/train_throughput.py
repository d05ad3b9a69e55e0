"""Fine-tuning throughput (pairs/second) of BLEURT-style training on WMT16 to-English segments with
the embedded all-MiniLM-L6-v2, three ways, in one run on the same pairs:

(i) ``ours``: :func:`assay.workers.training.train` (transformers' ``Trainer`` with length-grouped
    batches padded to their longest pair, per-step loss record, AdamW, linear schedule, clipping);
(ii) ``trainer_default``: a plain ``transformers.Trainer`` in its default configuration (random
    batches, no length grouping) on the same model, pairs, collator and hyper-parameters.
    Target: ours >= 1.3x its pairs/second;
(iii) ``floor``: a bare loop over the same batches as (i), with the padding removed: each batch of
    B pairs becomes a B x (mean real length) block of real tokens (so only real positions are
    computed; attention cost Σ l_i² is even slightly understated), forward + backward + AdamW step,
    nothing else (no scheduler, clipping, logging, per-step synchronisation). A lower bound on
    time: target ours <= 1.3x its time per pair.

The segments are read with Assay's ``wmt16-daseg`` parser (what ``assay ingest`` stores), and
turned into the training table by :func:`~assay.workers.training.training_table_from_segments`.

Pairs/second is timed from the end of step ``--warmup`` to the end of the last step (so CUDA kernel
selection and first-call costs are out), for each of the three; the floor's batches all run once
untimed on CUDA first, so it pays no first-call cost at all. On CUDA the clock is the wall clock;
on the CPU it is the CPU time of this process with one torch thread (``--threads``), because on a
shared machine other processes stretch wall-clock time unevenly between the three measurements
(both are printed). bf16 autocast on CUDA, float32 on
the CPU, all three alike. Also reported: the share of padded positions in the batches of (i) and of
random batches as (ii) draws them.

    .venv/bin/python benchmarks/train_throughput.py --steps 30 --device cpu
    .venv/bin/python benchmarks/train_throughput.py --steps 200 --device cuda   # e.g. on an H100

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import PrinterCallback, Trainer, TrainerCallback, TrainingArguments

from assay.datasets import formats
from assay.workers.bleurt import BleurtScorer
from assay.workers.checkpoint import create_from_encoder
from assay.workers.device import pick_device
from assay.workers.training import Objective, TrainConfig, train, training_table_from_segments
from assay.workers.training.batches import EpochSampler, PairCollator, PairDataset
from assay.workers.training.data import Standardisation, label_matrix, read_rows, split_by_item
from assay.workers.training.model import prepare_model

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "wmt16-da-seg"


Stamp = tuple[int, float, float]
"""(optimizer steps done, wall-clock seconds, CPU seconds of this process)"""


def _stamp(step: int) -> Stamp:
    return step, time.perf_counter(), time.process_time()


class _StepClock(TrainerCallback):
    """A stamp at the end of each optimizer step (a plain Trainer reads the loss every step, so the
    GPU has finished the step)."""

    def __init__(self) -> None:
        self.stamps: list[Stamp] = []

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.stamps.append(_stamp(int(state.global_step)))


def _rates(stamps: list[Stamp], warmup: int, batch: int) -> dict[str, float]:
    """Pairs per wall-clock second and per CPU second, from the first stamp at or after step
    ``warmup`` to the last."""
    usable = [s for s in stamps if s[0] >= warmup]
    if len(usable) < 2 or usable[-1][0] == usable[0][0]:
        raise SystemExit("too few steps to time: raise --steps well above --warmup")
    first, last = usable[0], usable[-1]
    pairs = (last[0] - first[0]) * batch
    return {"wall": pairs / (last[1] - first[1]), "cpu": pairs / max(last[2] - first[2], 1e-9)}


def _batches(lengths: list[int], batch: int, seed: int, grouped: bool, steps: int) -> list[list[int]]:
    """The first ``steps`` batches :class:`EpochSampler` gives, epoch after epoch (the last batch of
    an epoch may be smaller), as the Trainer draws them."""
    sampler = EpochSampler(lengths, batch, seed, group_by_length=grouped)
    out: list[list[int]] = []
    epoch = 0
    while len(out) < steps:
        sampler.set_epoch(epoch)
        order = list(sampler)
        out += [order[i:i + batch] for i in range(0, len(order), batch)]
        epoch += 1
    return out[:steps]


def _padding(lengths: list[int], batches: list[list[int]]) -> float:
    real = sum(lengths[i] for b in batches for i in b)
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    return 1 - real / padded


def _describe(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({platform.machine()}, {torch.get_num_threads()} torch threads, {os.cpu_count()} cores)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=60, help="optimizer steps per measurement")
    parser.add_argument("--warmup", type=int, default=None,
                        help="steps left out of the timing (default: 5 on the CPU, 60 on CUDA, where each new "
                             "sequence length costs a one-time kernel selection: 60 steps cover the first "
                             "mega-batch of length-grouped batches)")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (on the CPU the rates are "
                        "per CPU second of this process: with one thread, time no other process can inflate)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the WMT16 DAseg folder")
    parser.add_argument("--encoder", default=None,
                        help="an encoder folder instead of the embedded all-MiniLM-L6-v2 (e.g. a copy of it)")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="assay-train-bench-") as tmp_name:
        print(json.dumps(run(args, Path(tmp_name)), indent=2))


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    device = pick_device(args.device)
    cuda = device.type == "cuda"
    batch, steps = args.batch_size, args.steps
    warmup = args.warmup if args.warmup is not None else (60 if cuda else 5)
    seed = 12345

    segments = formats.parse(args.data).tables["segments"]  # Assay's wmt16-daseg parser, as ingest reads it
    groups = sorted(g for g in set(segments.column("group").to_pylist()) if g.endswith("-en"))
    table = training_table_from_segments(segments, groups=groups)
    objectives = [Objective("rating", "human_z")]
    init = create_from_encoder(args.encoder, tmp / "init", seed=seed)
    log_every = 50 if cuda else 1  # train()'s defaults, named so that the timing can use them
    config = TrainConfig(max_steps=steps, batch_size=batch, eval_every=10**9, save_every=10**9, seed=seed,
                         device=device.type, log_every=log_every)

    # (i) ours, timed from its step events. On CUDA they come in groups when the step log is written
    # (every log_every steps): only the last of a group arrives right after its step ends.
    stamps: list[Stamp] = []

    def on_event(event: dict[str, Any]) -> None:
        if event["event"] == "step" and (event["step"] % log_every == 0 or event["step"] == steps):
            stamps.append(_stamp(event["step"]))

    result = train(table, init=init, out=tmp / "out", objectives=objectives, primary="rating", config=config,
                   work_dir=tmp / "work", on_event=on_event)
    ours = _rates(stamps, warmup, batch)

    # the same training pairs and labels, for (ii) and (iii)
    rows = read_rows(table, objectives)
    train_idx, _ = split_by_item(rows.item_ids, config.validation_fraction, seed)
    train_rows = rows.take(train_idx)
    norms = {"rating": Standardisation.fit(train_rows.targets["human_z"], "human_z", "bench")}
    scorer = BleurtScorer(init, device="cpu")
    pairs = scorer.encode(train_rows.references, train_rows.candidates)
    dataset = PairDataset(pairs, label_matrix(train_rows, objectives, norms))
    lengths = dataset.lengths

    # (ii) a plain Trainer, default sampling (random batches)
    model = prepare_model(scorer, objectives, config)
    clock = _StepClock()
    plain = Trainer(
        model=model,
        args=TrainingArguments(output_dir=str(tmp / "plain"), per_device_train_batch_size=batch, max_steps=steps,
                               learning_rate=config.learning_rate, seed=seed, save_strategy="no", report_to="none",
                               disable_tqdm=True, logging_strategy="no", use_cpu=not cuda, bf16=cuda,
                               remove_unused_columns=False, label_names=["labels"], log_level="warning"),
        train_dataset=dataset,
        data_collator=PairCollator(scorer),
        callbacks=[clock],
    )
    plain.remove_callback(PrinterCallback)  # stdout is the JSON result
    plain.train()
    default = _rates(clock.stamps, warmup, batch)
    del plain, model

    # (iii) the floor: ours's batches without padding, bare forward + backward + AdamW step
    floor_scorer = BleurtScorer(init, device="cpu")
    floor_model = prepare_model(floor_scorer, objectives, config).to(device)
    optimizer = torch.optim.AdamW([p for p in floor_model.parameters() if p.requires_grad], lr=config.learning_rate)
    grouped = _batches(lengths, batch, seed, True, steps)
    blocks = []
    for chosen in grouped:
        width = max(1, round(float(np.mean([lengths[i] for i in chosen]))))
        ids = torch.tensor([(pairs[i].input_ids * (width // len(pairs[i]) + 1))[:width] for i in chosen])
        types = torch.tensor([(pairs[i].token_type_ids * (width // len(pairs[i]) + 1))[:width] for i in chosen])
        labels = torch.from_numpy(dataset.labels[chosen])
        blocks.append((ids, types, labels))
    def bare_step(ids: torch.Tensor, types: torch.Tensor, labels: torch.Tensor) -> None:
        ids, types, labels = ids.to(device), types.to(device), labels.to(device)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=cuda):
            out = floor_model(ids, torch.ones_like(ids), types, labels)
        out["loss"].backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for block in blocks if cuda else blocks[:warmup]:  # every shape seen once before timing (see --warmup)
        bare_step(*block)
    if cuda:
        torch.cuda.synchronize()
    floor_stamps = [_stamp(warmup)]
    for block in blocks[warmup + 1:]:
        bare_step(*block)
    if cuda:
        torch.cuda.synchronize()
    floor = _rates([*floor_stamps, _stamp(steps - 1)], warmup, batch)

    # CUDA: wall-clock time. CPU: this process's CPU time, which other processes on a shared machine
    # do not inflate (one torch thread, so no thread waits for another; see --threads)
    clock_name, other = ("wall", "cpu") if cuda else ("cpu", "wall")
    return {
        "benchmark": "train_throughput",
        "device": _describe(device),
        "model": "all-MiniLM-L6-v2 (embedded)" if args.encoder is None else str(args.encoder),
        "data": f"WMT16 DAseg to-English ({', '.join(groups)}): {len(rows)} pairs, {len(dataset)} in training",
        "batch_size": batch,
        "steps": steps,
        "timed_steps": steps - 1 - warmup,
        "bf16_autocast": cuda,
        "clock": clock_name,
        "pairs_per_second": {"ours": round(ours[clock_name], 2), "trainer_default": round(default[clock_name], 2),
                             "floor": round(floor[clock_name], 2)},
        "pairs_per_second_other_clock": {"clock": other, "ours": round(ours[other], 2),
                                         "trainer_default": round(default[other], 2), "floor": round(floor[other], 2)},
        "ours_vs_trainer_default": round(ours[clock_name] / default[clock_name], 3),
        "ours_time_vs_floor": round(floor[clock_name] / ours[clock_name], 3),
        "targets": {"ours_vs_trainer_default >=": 1.3, "ours_time_vs_floor <=": 1.3},
        "met": {"vs_trainer_default": ours[clock_name] / default[clock_name] >= 1.3,
                "vs_floor": floor[clock_name] / ours[clock_name] <= 1.3},
        "padding_share": {"ours_length_grouped": round(_padding(lengths, grouped), 3),
                          "random_batches": round(_padding(lengths, _batches(lengths, batch, seed, False, steps)), 3)},
        "ours_result": {"pairs_per_second_reported": round(result.pairs_per_second, 2), "steps": result.steps,
                        "n_truncated": result.n_truncated},
        "torch": torch.__version__,
    }


if __name__ == "__main__":
    main()
