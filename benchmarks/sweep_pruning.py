"""A sweep with median pruning against the same trials run to completion, and against the recipe's
default fine-tuning settings at the same budget; prints JSON.

The sweep (``assay sweep``'s own code, :func:`assay.workers.training.sweep_trials.run_sweep`, trials in this
process) fine-tunes ``--init`` (default: the embedded all-MiniLM-L6-v2; the recipe's pre-trained
checkpoint is the interesting one) on WMT16 to-English for ``--epochs`` with a validation every
``--eval-every`` steps, searching the learning rate (log scale) and the warm-up share with TPE
(Bergstra et al., 2011); the median rule (Golovin et al., 2017) stops a trial whose validation
Kendall tau is below the median of earlier trials at the same validation, after 2 startup trials
(``--pruner halving``: asynchronous successive halving, Li et al., 2020, instead).
Early stopping is off, so a trial that is not pruned trains its full budget.

Compute is counted in optimizer steps (every trial has the same batch size, so a step costs the
same): the same ``--trials`` trials run to completion would train ``trials x steps per trial``; the
sweep trains the sum of what each trial actually trained. Wall time is reported too.

"At least as good as the recipe's defaults": the recipe's fine-tuning settings (learning rate and
warm-up of :class:`assay.training.recipes.BleurtRecipe`) trained with the same budget from the same
init, compared by the same validation tau; with ``--wmt17`` also by WMT17 to-English average
Kendall tau of the two checkpoints.

    .venv/bin/python benchmarks/sweep_pruning.py --trials 6 --init /path/to/pretrained-checkpoint
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SPACE = """\
[trial]
data = ["wmt16"]
{init}exclude = ["wmt17"]
[trial.config]
epochs = {epochs}
eval_every = {eval_every}
save_every = {eval_every}
seed = {seed}

[params.learning_rate]
low = 1e-5
high = 3e-4
log = true
[params.warmup_ratio]
low = 0.0
high = 0.3

[pruner]
kind = "{pruner}"
startup_trials = 2
warmup_evaluations = 1
"""


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--home", type=Path, help="ASSAY_HOME (default: a new temporary folder)")
    p.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--init", help="checkpoint folder or name to fine-tune (default: the embedded encoder)")
    p.add_argument("--trials", type=int, default=6)
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=24)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--pruner", choices=["median", "halving"], default="median",
                   help="the median rule, or asynchronous successive halving (reduction factor 3)")
    p.add_argument("--wmt17", action="store_true", help="also score WMT17 with the best trial and the defaults")
    p.add_argument("--out", type=Path)
    return p.parse_args()


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def main() -> int:
    args = _args()
    home = args.home or Path(tempfile.mkdtemp(prefix="assay-sweep-bench-"))
    os.environ["ASSAY_HOME"] = str(home)
    os.environ.pop("ASSAY_CATALOG_URL", None)
    os.environ.setdefault("ASSAY_PROGRESS", "quiet")
    from assay.config import load_settings
    from assay.jobs.ingest import ingest_path
    from assay.sweeps.space import load_space
    from assay.training.recipes import BleurtRecipe
    from assay.training.stage_request import StageRequest
    from assay.workers.training.recipe_runs import RecipeStages
    from assay.workers.training.sweep_trials import run_sweep

    settings = load_settings()
    for folder in ("wmt16-da-seg", "wmt17-da"):
        ingest_path(args.data_dir / folder, settings=settings)
    space_file = home / "space.toml"
    init = f'init = "{args.init}"\n' if args.init else ""
    space_file.write_text(SPACE.format(init=init, epochs=args.epochs, eval_every=args.eval_every, seed=args.seed,
                                       pruner=args.pruner), encoding="utf-8")
    space = load_space(space_file)

    defaults = BleurtRecipe().stage_config("finetune")
    config = {**space.config, "learning_rate": defaults["learning_rate"], "warmup_ratio": defaults["warmup_ratio"],
              "head_input": defaults["head_input"]}
    _log(f"the recipe's defaults at the same budget: {config}")
    started = time.perf_counter()
    baseline = RecipeStages(settings).train(StageRequest("finetune", space.data, init=space.init, config=config,
                                                            name="defaults", exclude=space.exclude))
    baseline_seconds = time.perf_counter() - started

    started = time.perf_counter()
    summary = run_sweep(space, "bench", args.trials, settings, seed=args.seed, log=_log)
    sweep_seconds = time.perf_counter() - started
    full_steps = int(baseline["steps"])
    trials = [t for t in summary["trials"] if t["state"] in ("COMPLETE", "PRUNED")]
    steps = sum(int(t["steps"] or 0) for t in trials)
    best = summary["best"]
    report: dict[str, Any] = {
        "home": str(home), "init": args.init or "embedded all-MiniLM-L6-v2", "space": space.canonical(),
        "defaults": {"learning_rate": config["learning_rate"], "warmup_ratio": config["warmup_ratio"],
                     "val_kendall_tau": baseline["best_kendall_tau"], "steps": full_steps,
                     "seconds": round(baseline_seconds, 1)},
        "trials": [{"number": t["number"], "state": t["state"], "params": t["params"], "steps": t["steps"],
                    "val_kendall_tau": t["value"], "validations": len(t["intermediate"])} for t in trials],
        "best": {"number": best["number"], "params": best["params"], "val_kendall_tau": best["value"],
                 "checkpoint": best["checkpoint"]} if best else None,
        "compute": {"steps_trained": steps, "steps_if_run_to_completion": full_steps * len(trials),
                    "share": round(steps / (full_steps * len(trials)), 3), "sweep_seconds": round(sweep_seconds, 1),
                    "seconds_if_run_to_completion_estimate": round(baseline_seconds * len(trials), 1)},
    }
    report["goals"] = {
        "compute_at_most_60_percent": report["compute"]["share"] <= 0.60,
        "best_at_least_defaults": bool(best) and best["value"] >= baseline["best_kendall_tau"],
    }
    if args.wmt17 and best:
        report["wmt17"] = _wmt17(settings, {"defaults": "defaults", "best": best["checkpoint"]})
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


def _wmt17(settings: Any, checkpoints: dict[str, str]) -> dict[str, Any]:
    """WMT17 to-English average Kendall tau (x100) of each checkpoint, evaluated as `assay evaluate` does."""
    from assay.checkpoints.registry import resolve_folder
    from assay.jobs.evaluation import evaluate
    from assay.jobs.scoring import score_dataset
    from assay.metrics.registry import MetricSpec

    signatures = {}
    for key, name in checkpoints.items():
        folder = resolve_folder(settings, name)
        spec = MetricSpec.from_dict({"name": "bleurt", "params": {"checkpoint": str(folder)}})
        signatures[key] = score_dataset("wmt17", spec, settings=settings)["signature"]
    rows = evaluate("wmt17", level="seg", metrics=list(signatures.values()), statistics=["kendall"], n_resamples=200,
                    settings=settings)["rows"]
    out = {}
    for key, signature in signatures.items():
        taus = [r["value"] for r in rows if r["signature"] == signature and r["group"].endswith("-en")
                and r["statistic"] == "kendall" and r["value"] is not None]
        out[key] = round(100 * sum(taus) / len(taus), 2) if taus else None
    return out


if __name__ == "__main__":
    sys.exit(main())
