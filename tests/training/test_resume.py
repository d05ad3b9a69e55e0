"""Resuming after SIGKILL: no step repeated or skipped, the same run as without the interruption.

A subprocess trains the tiny RANDOM BERT (with dropout, so the restored RNG matters) through
``python -m assay.workers.training.launch``-style code, printing one JSON line per event; when it
has printed step 27 (saves were at steps 10 and 20) it waits, and the test kills it with SIGKILL.
A second subprocess resumes with ``resume=True``. Compared with an uninterrupted run of the same
specification: every step 1..40 is in the step log once, the resumed process's first step is the
one after the save it resumed from, and losses, validation curve and exported weights agree
(tolerances: losses and weights 1e-6, final Kendall τ 0.005 as required; on one CPU thread the
runs are in fact bitwise identical, which is what the tighter numbers check).

A copy of the interrupted work dir also loses ``trainer_state.json`` from its last save, the state
a kill *during* that save leaves (Trainer writes it last): that copy resumes from the save before.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from safetensors.torch import load_file

from assay.workers.checkpoint import WEIGHTS_FILE

KILL_AT = 27
MAX_STEPS = 40

CHILD = """
import json, sys
import torch
torch.set_num_threads(1)
from assay.workers.training.launch import run_spec

kill_at = int(sys.argv[2])

def on_event(event):
    print(json.dumps(event), flush=True)
    if kill_at and event["event"] == "step" and event["step"] == kill_at:
        sys.stdin.readline()  # hold here: the test sends SIGKILL now

result = run_spec(sys.argv[1], on_event=on_event)
print(json.dumps({"event": "result", **result.to_json()}), flush=True)
"""


def _spec(root: Path, name: str, table: Path, init: Path, *, resume: bool = False) -> Path:
    spec = {
        "table": str(table), "init": str(init),
        "out": str(root / f"out-{name}"), "work_dir": str(root / f"work-{name}"),
        "objectives": [{"name": "rating", "column": "human"}, {"name": "overlap", "column": "overlap", "weight": 0.5}],
        "primary": "rating", "resume": resume,
        "config": {"learning_rate": 1e-3, "batch_size": 8, "max_steps": MAX_STEPS, "eval_every": 10,
                   "save_every": 10, "seed": 11, "device": "cpu"},
    }
    path = root / f"spec-{name}{'-resume' if resume else ''}.json"
    path.write_text(json.dumps(spec))
    return path


def _run(python: str, env: dict[str, str], script: Path, spec: Path) -> list[dict[str, Any]]:
    done = subprocess.run([python, str(script), str(spec), "0"], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, tiny_encoder: Path, make_rows: Any) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("resume")
    table = root / "table.parquet"
    pq.write_table(pa.Table.from_pylist(make_rows()), table)
    script = root / "child.py"
    script.write_text(CHILD)
    return {"root": root, "table": table, "script": script, "init": tiny_encoder}


@pytest.fixture(scope="module")
def uninterrupted(setup: dict[str, Path], child_env: dict[str, str], python: str) -> list[dict[str, Any]]:
    return _run(python, child_env, setup["script"], _spec(setup["root"], "whole", setup["table"], setup["init"]))


def _steps(work: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (work / "steps.jsonl").read_text().splitlines()]


def test_sigkill_then_resume_repeats_and_skips_nothing(
    setup: dict[str, Path], uninterrupted: list[dict[str, Any]], child_env: dict[str, str], python: str,
) -> None:
    root = setup["root"]
    spec = _spec(root, "killed", setup["table"], setup["init"])
    child = subprocess.Popen([python, str(setup["script"]), str(spec), str(KILL_AT)], env=child_env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[dict[str, Any]] = []
    assert child.stdout is not None
    try:
        for line in child.stdout:
            if line.startswith("{"):
                seen.append(json.loads(line))
                if seen[-1]["event"] == "step" and seen[-1]["step"] == KILL_AT:
                    break
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=60)
        stderr = child.stderr.read() if child.stderr else ""
        for stream in (child.stdin, child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    assert child.returncode == -signal.SIGKILL, stderr
    assert [e["step"] for e in seen if e["event"] == "save"] == [10, 20]
    work = root / "work-killed"
    assert not (root / "out-killed").exists()
    assert [e["step"] for e in _steps(work)] == list(range(1, KILL_AT + 1))  # logged, then lost

    # the same interrupted state, as a kill during the save of step 20 would have left it
    shutil.copytree(work, root / "work-cut")
    (root / "work-cut" / "trainer" / "checkpoint-20" / "trainer_state.json").unlink()

    whole = next(e for e in uninterrupted if e["event"] == "result")
    reference = _steps(root / "work-whole")
    weights = load_file(str(root / "out-whole" / WEIGHTS_FILE))
    for name, expected_from in (("killed", 20), ("cut", 10)):
        events = _run(python, child_env, setup["script"],
                      _spec(root, name, setup["table"], setup["init"], resume=True))
        start = next(e for e in events if e["event"] == "start")
        assert start["resume_from"] == expected_from, name
        resumed_steps = [e["step"] for e in events if e["event"] == "step"]
        assert resumed_steps == list(range(expected_from + 1, MAX_STEPS + 1))  # nothing repeated or skipped
        result = next(e for e in events if e["event"] == "result")
        assert result["resumed_from"] == expected_from and result["steps"] == MAX_STEPS
        assert result["steps_run"] == MAX_STEPS - expected_from

        # the step log is the uninterrupted run's: each step once, the same losses
        log = _steps(root / f"work-{name}")
        assert [e["step"] for e in log] == list(range(1, MAX_STEPS + 1))
        for a, b in zip(log, reference, strict=True):
            assert a["loss"] == pytest.approx(b["loss"], abs=1e-6), (name, a["step"])
            assert a["lr"] == pytest.approx(b["lr"], rel=1e-9)
        assert result["curve"][-1]["val_kendall_tau"] == pytest.approx(whole["curve"][-1]["val_kendall_tau"],
                                                                       abs=0.005)
        for a, b in zip(result["curve"], whole["curve"], strict=True):
            assert a["step"] == b["step"] and a["val_kendall_tau"] == pytest.approx(b["val_kendall_tau"], abs=1e-6)
        assert result["best_step"] == whole["best_step"]
        mine = load_file(str(root / f"out-{name}" / WEIGHTS_FILE))
        assert max(float((mine[k] - weights[k]).abs().max()) for k in weights) <= 1e-6
        assert all(torch.isfinite(t).all() for t in mine.values())
