"""A disk that fills while the checkpoint is exported leaves no partial checkpoint.

A subprocess trains the tiny RANDOM BERT; when the run announces the export, it lowers its own
``RLIMIT_FSIZE`` below the size of ``model.safetensors`` (and ignores SIGXFSZ), so the write fails
with EFBIG ("File too large") as on a full disk. The checkpoint is written beside ``out`` and
renamed into place only when complete (:func:`assay.atomic.atomic_path`): afterwards neither ``out``
nor a temporary folder beside it may exist. The same limit from the start makes Trainer's own save
fail first; then too, nothing is exported.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assay.workers.checkpoint import verify_checkpoint
from assay.workers.training import Objective, TrainConfig, train

CHILD = """
import json, resource, signal, sys
import torch
torch.set_num_threads(1)
from assay.workers.training.launch import run_spec

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write then fails with EFBIG instead of killing us
limit, when = int(sys.argv[2]), sys.argv[3]

def limit_writes():
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

if when == "start":
    limit_writes()

def on_event(event):
    print(json.dumps(event), flush=True)
    if when == "export" and event["event"] == "export":
        limit_writes()

run_spec(sys.argv[1], on_event=on_event)
"""


@pytest.mark.parametrize("when", ["export", "start"])
def test_a_full_disk_leaves_no_partial_checkpoint(
    tmp_path: Path, tiny_encoder: Path, make_rows: Any, child_env: dict[str, str], python: str, when: str,
) -> None:
    table = tmp_path / "table.parquet"
    pq.write_table(pa.Table.from_pylist(make_rows()), table)
    out = tmp_path / "exports" / "out"
    out.parent.mkdir()
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({
        "table": str(table), "init": str(tiny_encoder), "out": str(out), "work_dir": str(tmp_path / "work"),
        "objectives": [{"name": "rating", "column": "human"}], "primary": "rating",
        "config": {"learning_rate": 1e-3, "batch_size": 8, "max_steps": 4, "eval_every": 4, "save_every": 4,
                   "device": "cpu"},
    }))
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    weights_size = (tiny_encoder / "model.safetensors").stat().st_size
    limit = weights_size // 4  # the tokenizer and JSON files fit, the weights do not
    done = subprocess.run([python, str(script), str(spec), str(limit), when], env=child_env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode != 0
    assert "File too large" in done.stderr or "EFBIG" in done.stderr or "Errno 27" in done.stderr, done.stderr[-3000:]
    events = [json.loads(line)["event"] for line in done.stdout.splitlines() if line.startswith("{")]
    assert ("export" in events) == (when == "export")
    assert "exported" not in events
    assert not out.exists()
    assert list(out.parent.iterdir()) == []  # no .tmp- folder either
    if when == "export":
        assert "[Errno 27]" in done.stderr and "nothing was exported" in done.stderr
        # with space again, resuming exports the run's best step without training it again
        config = TrainConfig(**json.loads(spec.read_text())["config"])
        result = train(pq.read_table(table), init=tiny_encoder, out=out, objectives=[Objective("rating", "human")],
                       primary="rating", config=config, work_dir=tmp_path / "work", resume=True)
        assert result.resumed_from == 4 and result.steps_run == 0 and result.best_step == 4
        assert verify_checkpoint(out)["heads"] == ["rating"]
