"""`evaluate --level seg` on WMT17 with sentBLEU, chrF and BERTScore: today's code against the first
wave's, in the same run, on the same stored scores.

Why: the first wave's evaluation looped over bootstrap replicates in Python (scipy's kendalltau a
thousand times per cell) and took about 121 s for this request. Evaluation now computes every
replicate of every statistic from resample counts with numpy (:mod:`assay.stats.resampled`).

What it does, in a temporary ASSAY_HOME:
1. ingest WMT17 and score it with sentbleu, chrf and bertscore (layer 4, the embedded MiniLM);
2. time ``assay evaluate --dataset wmt17 --level seg`` as the command computes it (its default
   statistics, Pearson and Kendall, each with 1,000 bootstrap resamples and PERM-BOTH
   permutations) with this checkout, and, beside it, every segment-level statistic Assay offers
   (``SEG_STATS``: Spearman, tau-c, tau_23, acc_23 and tie-calibrated acc_23 too);
3. time the default request with the first wave's code (commit ``BASELINE``, checked out with
   ``git worktree`` into a temporary folder and run in a subprocess on the same ASSAY_HOME);
4. compare the rows: point estimates must be identical; intervals come from the same resample
   indices (same seed, same per-group streams), so they must agree up to float rounding, which
   is how their statistical equivalence is checked (the strongest form: the same replicates).

    .venv/bin/python benchmarks/evaluate_speed.py [--data ../shared/data/wmt17-da] [--resamples 1000]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "789ed3b"  # the first wave's last commit (evaluation with Python-loop bootstraps)
METRICS = [("sentbleu", {}), ("chrf", {}), ("bertscore", {"layer": 4})]

OLD_EVALUATE = """
import json, sys, time
from assay.evaluation import evaluate
t0 = time.perf_counter()
result = evaluate("wmt17", level="seg", n_resamples=int(sys.argv[1]))
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "rows": result["rows"]}, default=str))
"""


def _key(row: dict) -> tuple:
    return (row["group"], row["aspect"], row["statistic"], row["metric"])


def _old_checkout(tmp: Path) -> Path:
    """The baseline commit as an importable ``assay`` package (its flows/workers mapped in, as its
    pyproject's package-dir did)."""
    worktree = tmp / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), BASELINE],
                   check=True, capture_output=True)
    package = worktree / "platform" / "assay"
    for name in ("flows", "workers", "migrations"):
        (package / name).symlink_to(worktree / name, target_is_directory=True)
    return worktree / "platform"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "wmt17-da")
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="assay-evaluate-speed-"))
    os.environ["ASSAY_HOME"] = str(tmp / "home")
    os.environ.pop("ASSAY_CATALOG_URL", None)
    worktree: Path | None = None
    try:
        from assay.evaluation import SEG_STATS, evaluate
        from assay.ingest import ingest_path
        from assay.metrics.registry import MetricSpec
        from assay.scoring import score_dataset

        ingest_path(args.data)
        scoring = {}
        for name, params in METRICS:
            t0 = time.perf_counter()
            score_dataset("wmt17", MetricSpec(name, params))
            scoring[name] = round(time.perf_counter() - t0, 2)

        t0 = time.perf_counter()
        new = evaluate("wmt17", level="seg", n_resamples=args.resamples)
        new_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        evaluate("wmt17", level="seg", statistics=list(SEG_STATS), n_resamples=args.resamples)
        every_statistic_seconds = time.perf_counter() - t0

        old_root = _old_checkout(tmp)
        worktree = old_root.parent
        env = {**os.environ, "PYTHONPATH": str(old_root)}
        done = subprocess.run([sys.executable, "-c", OLD_EVALUATE, str(args.resamples)], env=env, check=True,
                              capture_output=True, text=True, cwd=tmp)
        old = json.loads(done.stdout.strip().splitlines()[-1])

        old_rows = {_key(r): r for r in old["rows"]}
        new_rows = {_key(r): r for r in new["rows"]}
        shared = sorted(set(old_rows) & set(new_rows))
        value_diff = max((abs(new_rows[k]["value"] - old_rows[k]["value"]) for k in shared
                          if new_rows[k]["value"] is not None and old_rows[k]["value"] is not None), default=None)
        ci_diff = max((abs(new_rows[k][c] - old_rows[k][c]) for k in shared for c in ("ci_low", "ci_high")
                       if new_rows[k][c] is not None and old_rows[k][c] is not None), default=None)
        ranks_same = all((new_rows[k]["rank"], new_rows[k]["cluster"]) == (old_rows[k]["rank"], old_rows[k]["cluster"])
                         for k in shared)
        print(json.dumps({
            "benchmark": "evaluate_speed", "dataset": "wmt17", "level": "seg",
            "statistics": sorted({r["statistic"] for r in new["rows"]}),
            "metrics": [m for m, _ in METRICS], "n_resamples": args.resamples, "rows": len(new_rows),
            "rows_compared": len(shared), "rows_only_in_one": len(set(old_rows) ^ set(new_rows)),
            "new_seconds": round(new_seconds, 2), "old_seconds": round(old["seconds"], 2),
            "speedup": round(old["seconds"] / new_seconds, 1), "target_seconds": 8.0,
            "max_abs_value_diff": value_diff, "max_abs_ci_diff": ci_diff, "ranks_and_clusters_identical": ranks_same,
            "new_seconds_every_statistic": round(every_statistic_seconds, 2), "every_statistic": list(SEG_STATS),
            "scoring_seconds": scoring,
        }, indent=1))
    finally:
        if worktree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                           capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
