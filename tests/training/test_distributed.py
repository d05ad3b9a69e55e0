"""Data-parallel training: ``torchrun`` with 2 processes (gloo backend, CPU, 127.0.0.1 and a free
port) against 1 process with the same global batch of 8 pairs.

Each process takes 4 pairs of every global batch (``split_batches``); DistributedDataParallel
averages the gradients, and the masked per-task means divide by the counts summed over both
processes (:mod:`assay.workers.training.model`), so each step is the single process's step. The
second objective is missing for ~30% of the pairs, so this matters. The encoder has no dropout:
two processes draw other dropout masks than one process does for the same pairs.

Tolerance: losses 1e-5, weights 1e-4 (absolute), Kendall τ 0.005. The two runs differ only in
float32 rounding: gloo sums the two halves' gradients in another order than one backward pass over
the whole batch, and each half is padded to its own longest pair (other matrix shapes, other
summation order). That is ~1e-7 relative per step; measured after 30 steps: 1.2e-6 in the weights,
1.2e-7 in the losses. The tolerances are ~100x that, because Adam divides each update by the
running gradient scale, so a rounding difference in a near-zero gradient can grow by more than it
shrinks. τ over 24 validation pairs moves in steps of 1/276 ≈ 0.0036 when two predictions swap
order, so 0.005 allows at most one swapped pair.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from safetensors.torch import load_file

from assay.ports import free_port
from assay.workers.checkpoint import WEIGHTS_FILE


def _spec(root: Path, name: str, table: Path, init: Path) -> Path:
    spec = {
        "table": str(table), "init": str(init), "out": str(root / f"out-{name}"),
        "work_dir": str(root / f"work-{name}"), "result": str(root / f"result-{name}.json"),
        "objectives": [{"name": "rating", "column": "human"}, {"name": "overlap", "column": "overlap", "weight": 0.5}],
        "primary": "rating",
        "config": {"learning_rate": 1e-3, "batch_size": 8, "max_steps": 30, "eval_every": 10, "save_every": 10,
                   "seed": 5, "device": "cpu"},
    }
    path = root / f"spec-{name}.json"
    path.write_text(json.dumps(spec))
    return path


def _steps(root: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / f"work-{name}" / "steps.jsonl").read_text().splitlines()]


def test_two_processes_match_one_with_the_same_global_batch(
    tmp_path: Path, tiny_encoder_no_dropout: Path, make_rows: Any, child_env: dict[str, str], python: str,
) -> None:
    table = tmp_path / "table.parquet"
    pq.write_table(pa.Table.from_pylist(make_rows()), table)
    launch = ["-m", "assay.workers.training.launch"]
    one = subprocess.run([python, *launch, str(_spec(tmp_path, "one", table, tiny_encoder_no_dropout))],
                         env=child_env, capture_output=True, text=True, timeout=300, check=False)
    assert one.returncode == 0, one.stderr[-3000:]
    torchrun = [python, "-m", "torch.distributed.run", "--nproc_per_node=2", "--nnodes=1",
                "--master_addr=127.0.0.1", f"--master_port={free_port()}"]
    two = subprocess.run([*torchrun, *launch, str(_spec(tmp_path, "two", table, tiny_encoder_no_dropout))],
                         env=child_env, capture_output=True, text=True, timeout=300, check=False)
    assert two.returncode == 0, two.stderr[-3000:]

    single = json.loads((tmp_path / "result-one.json").read_text())
    double = json.loads((tmp_path / "result-two.json").read_text())
    assert (single["world_size"], double["world_size"]) == (1, 2)
    start = [json.loads(line) for line in two.stdout.splitlines() if line.startswith('{"event": "start"')]
    assert len(start) == 1 and start[0]["world_size"] == 2  # only process 0 reports
    assert single["n_train"] == double["n_train"] and single["splits"] == double["splits"]

    for a, b in zip(_steps(tmp_path, "one"), _steps(tmp_path, "two"), strict=True):
        assert a["step"] == b["step"] and a["loss"] == pytest.approx(b["loss"], abs=1e-5), a["step"]
    for a, b in zip(single["curve"], double["curve"], strict=True):
        assert a["step"] == b["step"]
        assert a["val_kendall_tau"] == pytest.approx(b["val_kendall_tau"], abs=0.005)
        assert a["val_loss"] == pytest.approx(b["val_loss"], abs=1e-5)
    assert single["best_step"] == double["best_step"]
    w1, w2 = load_file(str(tmp_path / "out-one" / WEIGHTS_FILE)), load_file(str(tmp_path / "out-two" / WEIGHTS_FILE))
    assert w1.keys() == w2.keys()
    assert max(float((w1[k] - w2[k]).abs().max()) for k in w1) <= 1e-4
