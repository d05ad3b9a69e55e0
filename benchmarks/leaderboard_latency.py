"""Leaderboard latency over a results store with at least 1,000,000 segment-score rows.

Builds the store for real: ingests WMT17 and WMT18 from ../shared/data and scores every system
output of both (full test sets, ~373k unique segments) with sentBLEU, chrF and ROUGE-1/2/L, then
evaluates them at segment level (WMT17) and system level (both). Then it times `leaderboard()`
in-process (the query itself: DuckDB over the correlation parts, p-values, clusters) and the
whole `assay leaderboard --json` command as a subprocess (interpreter start-up included).

Prints one JSON object. Target: median in-process answer <= 200 ms.

    .venv/bin/python benchmarks/leaderboard_latency.py [--home DIR] [--repeats 50]

--home reuses (or keeps) the built store; building takes several minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
METRICS = ("sentbleu", "chrf", "rouge1", "rouge2", "rougeL")


def build(data: Path) -> dict[str, float]:
    from assay.jobs.evaluation import evaluate
    from assay.jobs.ingest import ingest_path
    from assay.jobs.scoring import finish_scoring, plan_scoring, score_shard
    from assay.metrics.registry import MetricSpec

    timings = {}
    for folder in ("wmt17-da", "wmt18-da"):
        ingest_path(data / folder)
    for dataset in ("wmt17", "wmt18"):
        for metric in METRICS:
            t = time.perf_counter()
            plan = plan_scoring(dataset, MetricSpec(metric), scope="outputs", shard_size=100_000)
            finish_scoring(plan, [score_shard(plan, i) for i in range(len(plan.shards))])
            timings[f"score_{dataset}_{metric}_s"] = round(time.perf_counter() - t, 1)
    for metric in METRICS:
        plan = plan_scoring("wmt17", MetricSpec(metric), scope="judged")
        finish_scoring(plan, [score_shard(plan, i) for i in range(len(plan.shards))])
    t = time.perf_counter()
    evaluate("wmt17", level="seg", n_resamples=200)
    evaluate("wmt17", level="sys", statistics=["pearson", "kendall"], n_resamples=200)
    evaluate("wmt18", level="sys", statistics=["pearson", "kendall"], n_resamples=200)
    timings["evaluate_s"] = round(time.perf_counter() - t, 1)
    return timings


def count_rows() -> int:
    from assay.config import load_settings
    from assay.results import segment_scores

    return segment_scores.row_count(load_settings())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--home", type=Path, help="ASSAY_HOME to build into or reuse")
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="assay-leaderboard-"))
    os.environ["ASSAY_HOME"] = str(home)
    os.environ.pop("ASSAY_CATALOG_URL", None)

    build_timings: dict[str, float] = {}
    from assay.config import load_settings
    from assay.results import correlations

    if not correlations.files(load_settings()):
        build_timings = build(args.data)
    rows = count_rows()

    from assay.query.leaderboard import LeaderboardQuery, leaderboard

    queries = [
        LeaderboardQuery("wmt17", "seg", "kendall", "de-en"),
        LeaderboardQuery("wmt17", "seg", "pearson", "all"),
        LeaderboardQuery("wmt18", "sys", "pearson", "zh-en"),
        LeaderboardQuery("wmt17@1", "sys", "kendall", "all", metrics=("chrf", "sentbleu")),
    ]
    leaderboard(queries[0])  # warm the OS file cache; the first call is reported separately
    in_process = []
    for i in range(args.repeats):
        t = time.perf_counter()
        result = leaderboard(queries[i % len(queries)])
        in_process.append((time.perf_counter() - t) * 1000)
        assert result and result[0]["rank"] == 1
    command = [str(Path(sys.executable).parent / "assay"), "leaderboard", "--dataset", "wmt17", "--group", "de-en",
               "--json"]
    cli = []
    for _ in range(10):
        t = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=os.environ)
        cli.append((time.perf_counter() - t) * 1000)
    print(json.dumps({
        "benchmark": "leaderboard_latency",
        "home": str(home),
        "segment_score_rows": rows,
        "meets_row_target": rows >= 1_000_000,
        "build": build_timings,
        "in_process_ms": {"median": round(statistics.median(in_process), 1), "p90":
                          round(sorted(in_process)[int(0.9 * len(in_process)) - 1], 1),
                          "min": round(min(in_process), 1), "n": len(in_process)},
        "target_median_ms": 200,
        "meets_latency_target": statistics.median(in_process) <= 200,
        "cli_subprocess_ms": {"median": round(statistics.median(cli), 1), "min": round(min(cli), 1), "n": len(cli)},
        "cpu_count": os.cpu_count(),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
