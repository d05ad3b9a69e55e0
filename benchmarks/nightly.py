"""The nightly sweep's cost when nothing is new, against a full sweep; and the cost of one new
checkpoint against scoring and evaluating that checkpoint alone. Prints JSON.

In a fresh ASSAY_HOME (``--home``, default a temporary folder): WMT16 DA segment level is ingested
from ``--data-dir`` and made the ``nightly`` suite (Kendall and Pearson), ``--checkpoints``
BLEURT-style checkpoints are created from the embedded all-MiniLM-L6-v2 (random rating heads: the
correlations are meaningless, the work is real: every segment goes through the encoder) and
registered. Then, each through the real ``nightly`` flow on the local Prefect server (the path
``assay nightly run`` takes; no deployments, so the work items run in this process):

1. ``full``: the first sweep evaluates every checkpoint x suite dataset and writes the report;
2. ``noop``: a second sweep, with nothing new; target ``noop / full <= 0.05``;
3. ``one_new``: one more checkpoint is registered and a sweep evaluates it (and only it);
4. ``one_alone``: the same work outside the nightly flow, for a fifth checkpoint, by direct calls
   (``score_dataset`` + ``evaluate``): what that checkpoint's evaluation costs by itself. The ratio
   ``one_new / one_alone`` is the sweep's overhead (flow runs, ledger, comparison with the team's
   best, the report).

    .venv/bin/python benchmarks/nightly.py --checkpoints 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--home", type=Path, help="ASSAY_HOME to use (default: a new temporary folder)")
    p.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--checkpoints", type=int, default=3, help="checkpoints in the full sweep")
    p.add_argument("--out", type=Path, help="also write the JSON here")
    return p.parse_args()


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _checkpoint(settings: Any, folder: Path, seed: int, name: str) -> str:
    from assay.workers.checkpoint import create_from_encoder
    from assay.workers.checkpoint_registration import register_folder

    create_from_encoder(None, folder, seed=seed)
    return register_folder(settings, folder, name=name).digest


def _sweep(label: str) -> dict[str, Any]:
    from assay.cli.runner import run_flow

    started = time.perf_counter()
    result = run_flow("nightly", reason="benchmark", scan=False)
    seconds = time.perf_counter() - started
    _log(f"{label}: {seconds:.1f} s, {result['dispatched']} item(s)")
    return {"seconds": round(seconds, 3), "items": result["dispatched"], "evaluated": len(result["evaluated"]),
            "report": bool(result["report"])}


def main() -> None:
    args = _args()
    home = args.home or Path(tempfile.mkdtemp(prefix="assay-nightly-bench-"))
    os.environ["ASSAY_HOME"] = str(home)
    from assay.config import load_settings
    from assay.jobs.ingest import ingest_path
    from assay.nightly.suites import define_suite

    settings = load_settings()
    ingested = ingest_path(args.data_dir / "wmt16-da-seg", settings=settings)
    dataset = f"{ingested.name}@{ingested.number}"
    define_suite(settings, "nightly", [{"dataset": dataset, "levels": ["seg"], "statistics": ["kendall", "pearson"]}])
    folders = home / "bench-checkpoints"
    for i in range(args.checkpoints):
        _checkpoint(settings, folders / f"bench-{i}", seed=i, name=f"bench-{i}")
    report: dict[str, Any] = {"home": str(home), "dataset": dataset, "checkpoints": args.checkpoints,
                              "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}}
    try:
        _measure(report, settings, dataset, folders)
    finally:  # the sweeps started the local Prefect server in this home: stop it
        from assay.cli.background_server import stop_server

        stop_server(settings)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


def _measure(report: dict[str, Any], settings: Any, dataset: str, folders: Path) -> None:
    from assay.jobs.evaluation import evaluate
    from assay.jobs.scoring import score_dataset
    from assay.metrics.registry import MetricSpec

    report["full"] = _sweep("full sweep")
    report["noop"] = _sweep("no-op sweep")
    report["noop_over_full"] = round(report["noop"]["seconds"] / report["full"]["seconds"], 4)
    report["noop_target_met"] = report["noop_over_full"] <= 0.05

    _checkpoint(settings, folders / "bench-new", seed=100, name="bench-new")
    report["one_new"] = _sweep("sweep with one new checkpoint")
    folder = folders / "bench-alone"
    _checkpoint(settings, folder, seed=101, name="bench-alone")
    started = time.perf_counter()
    scored = score_dataset(dataset, MetricSpec.from_dict({"name": "bleurt", "params": {"checkpoint": str(folder)}}),
                           shard_size=2000, settings=settings)
    evaluate(dataset, level="seg", metrics=[scored["signature"]], statistics=["kendall", "pearson"],
             exclude_groups=sorted(scored["excluded_groups"]), settings=settings)  # as the nightly flow does
    alone = time.perf_counter() - started
    report["one_alone"] = {"seconds": round(alone, 3), "segments": scored["computed"]}
    report["one_new_over_alone"] = round(report["one_new"]["seconds"] / alone, 3)


if __name__ == "__main__":
    main()
