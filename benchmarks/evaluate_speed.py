"""`evaluate --level seg` on WMT17 with sentBLEU, chrF and BERTScore and every segment-level
statistic: today's code against the first evaluation's, in the same run, on the same stored scores.

Why: the first evaluation (commit ``BASELINE``) looped over bootstrap replicates and permutations in
Python (scipy's kendalltau a thousand times per cell); it took about 121 s for the command's default
statistics alone. Evaluation now computes every replicate of every statistic from resample counts
with matrix products (:mod:`assay.stats.resampled`) and every PERM-BOTH permutation the same way
(:mod:`assay.stats.permuted`). Target: at most 8 s for every statistic.

What it does, in a temporary ASSAY_HOME:
1. ingest WMT17 and score it with sentbleu, chrf and bertscore (layer 4, the embedded MiniLM);
2. time ``evaluate("wmt17", level="seg", statistics=SEG_STATS, n_resamples=1000)`` with this
   checkout (and, for reference, the command's default statistics, Pearson and Kendall);
3. time the same call with the first evaluation's code: commit ``BASELINE`` checked out with
   ``git worktree`` into a temporary folder, its flows/workers/migrations linked into its package as
   its pyproject's package-dir maps them, run in a subprocess on the same ASSAY_HOME;
4. compare: point estimates must be identical; intervals come from the same resample indices
   (same seed, same per-group streams), so they must agree up to float summation order, the
   strongest form of statistical equivalence (the same replicates); p-values, ranks and clusters
   must be identical. The worktree is removed at the end.

    nice .venv/bin/python benchmarks/evaluate_speed.py [--data ../shared/data/wmt17-da] [--resamples 1000]

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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "789ed3b"  # the first evaluation: Python loops over bootstrap replicates and permutations
METRICS = [("sentbleu", {}), ("chrf", {}), ("bertscore", {"layer": 4})]
CI_TOLERANCE = 1e-12

# Run by the baseline's interpreter: its own evaluate, its own SEG_STATS (the same eight names).
OLD_EVALUATE = """
import json, sys, time
from assay.jobs.evaluation import SEG_STATS, evaluate
t0 = time.perf_counter()
result = evaluate("wmt17", level="seg", statistics=list(SEG_STATS), n_resamples=int(sys.argv[1]))
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "run_id": result["run_id"], "statistics": list(SEG_STATS),
                  "rows": result["rows"]}, default=str))
"""


def _key(row: dict[str, Any]) -> tuple[str, ...]:
    return (row["group"], row["aspect"], row["statistic"], row["signature"])


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


def _p_values(home: Path, run_id: str) -> dict[tuple[str, ...], tuple[float, str]]:
    from dataclasses import replace

    from assay.config import load_settings
    from assay.results import parts, significance

    settings = replace(load_settings(), home=home)
    rows = parts.read_files(significance.files(settings, run_id=run_id), significance.SCHEMA).to_pylist()
    return {(r["group"], r["aspect"], r["statistic"], r["better"], r["worse"]): (r["p_value"], r["test"])
            for r in rows}


def _compare(old: dict[str, Any], new: dict[str, Any], home: Path) -> dict[str, Any]:
    old_rows = {_key(r): r for r in old["rows"]}
    new_rows = {_key(r): r for r in new["rows"]}
    shared = sorted(set(old_rows) & set(new_rows))
    undefined_alike = all((old_rows[k]["value"] is None) == (new_rows[k]["value"] is None) for k in shared)
    values = [abs(new_rows[k]["value"] - old_rows[k]["value"]) for k in shared
              if new_rows[k]["value"] is not None and old_rows[k]["value"] is not None]
    intervals = {(k, end): abs(new_rows[k][end] - old_rows[k][end]) for k in shared for end in ("ci_low", "ci_high")
                 if new_rows[k][end] is not None and old_rows[k][end] is not None}
    ci_by_statistic: dict[str, float] = {}
    for (k, _), diff in intervals.items():
        ci_by_statistic[k[2]] = max(ci_by_statistic.get(k[2], 0.0), diff)
    old_p, new_p = _p_values(home, old["run_id"]), _p_values(home, new["run_id"])
    p_shared = set(old_p) & set(new_p)
    max_ci = max(intervals.values(), default=0.0)
    return {
        "rows": len(new_rows), "rows_compared": len(shared), "rows_only_in_one": len(set(old_rows) ^ set(new_rows)),
        "undefined_values_alike": undefined_alike,
        "max_abs_value_diff": max(values, default=0.0),
        "max_abs_ci_diff": max_ci,
        "max_abs_ci_diff_by_statistic": dict(sorted(ci_by_statistic.items())),
        "intervals_beyond_1e-12": sum(diff > CI_TOLERANCE for diff in intervals.values()),
        "p_values_compared": len(p_shared), "p_values_only_in_one": len(set(old_p) ^ set(new_p)),
        "max_abs_p_value_diff": max((abs(old_p[k][0] - new_p[k][0]) for k in p_shared), default=0.0),
        "tests_identical": all(old_p[k][1] == new_p[k][1] for k in p_shared),
        "ranks_and_clusters_identical": all(
            (new_rows[k]["rank"], new_rows[k]["cluster"]) == (old_rows[k]["rank"], old_rows[k]["cluster"])
            for k in shared),
        "intervals": (f"same resample indices (seed, per-group streams) in both; every interval end agrees within "
                      f"{max_ci:.1e} (float summation order: replicates from resample counts instead of gathered "
                      f"rows), so the intervals are the same intervals, not merely statistically equivalent"
                      if max_ci <= CI_TOLERANCE else
                      f"interval ends differ by up to {max_ci:.3g}: see max_abs_ci_diff_by_statistic"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "wmt17-da")
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="assay-evaluate-speed-"))
    home = tmp / "home"
    os.environ["ASSAY_HOME"] = str(home)
    os.environ.pop("ASSAY_CATALOG_URL", None)
    worktree: Path | None = None
    try:
        from assay.jobs.evaluation import SEG_STATS, evaluate
        from assay.jobs.ingest import ingest_path
        from assay.jobs.scoring import score_dataset
        from assay.metrics.registry import MetricSpec

        ingest_path(args.data)
        scoring = {}
        for name, params in METRICS:
            t0 = time.perf_counter()
            score_dataset("wmt17", MetricSpec(name, params))
            scoring[name] = round(time.perf_counter() - t0, 2)

        t0 = time.perf_counter()
        new = evaluate("wmt17", level="seg", statistics=list(SEG_STATS), n_resamples=args.resamples)
        new_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        evaluate("wmt17", level="seg", n_resamples=args.resamples)
        default_seconds = time.perf_counter() - t0

        old_root = _old_checkout(tmp)
        worktree = old_root.parent
        env = {**os.environ, "PYTHONPATH": str(old_root)}
        done = subprocess.run([sys.executable, "-c", OLD_EVALUATE, str(args.resamples)], env=env, check=True,
                              capture_output=True, text=True, cwd=tmp)
        old = json.loads(done.stdout.strip().splitlines()[-1])

        print(json.dumps({
            "benchmark": "evaluate_speed", "dataset": "wmt17", "level": "seg", "statistics": list(SEG_STATS),
            "baseline_statistics": old["statistics"], "baseline_commit": BASELINE,
            "metrics": [m for m, _ in METRICS], "n_resamples": args.resamples,
            "new_seconds": round(new_seconds, 2), "old_seconds": round(old["seconds"], 2),
            "speedup": round(old["seconds"] / new_seconds, 1), "target_seconds": 8.0,
            "new_seconds_default_statistics": round(default_seconds, 2),
            **_compare(old, new, home),
            "scoring_seconds": scoring, "cpus": os.cpu_count(),
        }, indent=1))
    finally:
        if worktree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                           capture_output=True)
            subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
