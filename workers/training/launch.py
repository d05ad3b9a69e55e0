"""Run :func:`~assay.workers.training.engine.train` from a JSON specification, in one process or in
several under ``torchrun`` (data parallel)::

    python -m assay.workers.training.launch SPEC.json
    torchrun --nproc_per_node=4 -m assay.workers.training.launch SPEC.json
    torchrun --nproc_per_node=2 --master_addr=127.0.0.1 --master_port=29500 \\
        -m assay.workers.training.launch SPEC.json          # CPU: processes talk over gloo

``SPEC.json``::

    {
      "table": "train.parquet",            # reference, candidate, item_id and the target columns
      "validation": null,                  # or a Parquet file: an explicit validation split
      "init": "path/to/checkpoint-or-encoder",   # or null: the embedded MiniLM
      "out": "path/to/new-checkpoint",
      "work_dir": "path/to/work",
      "objectives": [{"name": "rating", "column": "human_z", "kind": "regression", "weight": 1.0}],
      "primary": "rating",
      "config": {"max_steps": 40000, "batch_size": 32, ...},   # TrainConfig's fields
      "resume": false,
      "lineage": {...},
      "result": "path/to/result.json"      # optional: process 0 writes TrainResult.to_json() here
    }

Every process reads the same specification and trains its share of each global batch
(``config.batch_size`` pairs per step over all processes). Process 0 prints one JSON line per event
(``on_event``) on stdout and writes the checkpoint and ``result``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from accelerate import PartialState

from assay.atomic import write_text
from assay.errors import AssayError, InputError
from assay.training.config import TrainConfig
from assay.workers.training.engine import TrainResult, train
from assay.workers.training.objectives import Objective

__all__ = ["main", "run_spec"]


def _objective(entry: dict[str, Any]) -> Objective:
    column = entry["column"]
    return Objective(
        name=entry["name"],
        column=tuple(column) if isinstance(column, list) else column,
        kind=entry.get("kind", "regression"),
        n_classes=int(entry.get("n_classes", 1)),
        weight=float(entry.get("weight", 1.0)),
    )


def run_spec(spec_path: str | Path, *, on_event: Callable[[dict[str, Any]], None] | None = None) -> TrainResult:
    """Train as ``spec_path`` says (see the module docstring). Events go to ``on_event``, by default
    printed as JSON lines on stdout."""
    spec_path = Path(spec_path)
    try:
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        table = pq.read_table(spec["table"])
        validation = pq.read_table(spec["validation"]) if spec.get("validation") else None
        objectives = [_objective(e) for e in spec["objectives"]]
        config = TrainConfig(**spec.get("config", {}))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(spec_path, f"not a usable training specification: {exc!r}",
                         expected="the JSON object described in assay.workers.training.launch") from exc

    def echo(event: dict[str, Any]) -> None:
        print(json.dumps(event), flush=True)

    result = train(
        table,
        init=spec.get("init"),
        out=spec["out"],
        objectives=objectives,
        primary=spec["primary"],
        config=config,
        work_dir=spec["work_dir"],
        resume=bool(spec.get("resume", False)),
        lineage=spec.get("lineage"),
        on_event=on_event or echo,
        validation=validation,
    )
    if spec.get("result") and result.digest and _is_main():
        write_text(json.dumps(result.to_json(), indent=2) + "\n", Path(spec["result"]))
    return result


def _is_main() -> bool:
    return bool(PartialState().is_main_process)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assay.workers.training.launch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("spec", help="the JSON training specification")
    args = parser.parse_args(argv)
    try:
        run_spec(args.spec)
    except AssayError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
