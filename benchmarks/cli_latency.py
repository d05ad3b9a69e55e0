"""Wall time of everyday commands, as a user runs them (subprocesses of `.venv/bin/assay`).

Why: a fully cached `assay score` used to take 7.8 s, almost all of it Prefect's temporary
per-process server, and re-ingesting an unchanged WMT17 took 15 s for about 1 s of work. Now a
command with nothing to do answers from its plan without Prefect, and commands that run flows
share one background local server (:mod:`assay.cli.background_server`).

Measured, each the median of --repeats runs (default 3) in a temporary ASSAY_HOME:

``score_cached``      `assay score --dataset wmt17 --metric sentbleu`, every segment cached (target <= 1.5 s)
``ingest_unchanged``  `assay ingest <wmt17-da>` of an already ingested, unchanged source (target <= 1.5 s)
``leaderboard_json``  `assay leaderboard --dataset wmt17 --json` after one evaluation (target <= 0.4 s)
``help``              `assay --help` (target <= 0.3 s)

each two ways: ``now`` (the defaults: background server, answers from the plan) and ``before``
(``ASSAY_PREFECT_SERVER=ephemeral``, Prefect's temporary server per process, and for score and
ingest the flow path that the commands always took before: the score flow started directly with
``python -c``, since a flow with nothing to compute is no user feature, and `assay ingest
--reparse`). ``ratio`` is before / now. ``flow_on_background_server`` times the same flow paths on
the background server: what a command that does have work saves.

The ephemeral runs use their own PREFECT_HOME (migrated by an untimed warm-up run), so that two
Prefect servers never write one SQLite database at once. The background server is stopped and the
temporary home removed at the end.

    .venv/bin/python benchmarks/cli_latency.py [--data ../shared/data/wmt17-da] [--repeats 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ASSAY = Path(sys.executable).parent / "assay"
TARGETS_S = {"score_cached": 1.5, "ingest_unchanged": 1.5, "leaderboard_json": 0.4, "help": 0.3}
SCORE_FLOW = ("from assay.cli.runner import run_score_flow; "
              "run_score_flow('wmt17', {'name': 'sentbleu', 'params': {}}, progress=False)")


def environment(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "ASSAY_HOME": str(home), **extra}
    for key in ("PREFECT_API_URL", "PREFECT_HOME", "ASSAY_PREFECT_SERVER"):
        if key not in extra:
            env.pop(key, None)
    return env


def run(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return seconds


def median_of(command: list[str], env: dict[str, str], repeats: int) -> float:
    return round(statistics.median(run(command, env) for _ in range(repeats)), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "wmt17-da")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="Also write the JSON object to this file.")
    args = parser.parse_args()
    if args.repeats < 3:
        raise SystemExit("--repeats must be at least 3 (the median of fewer says little)")
    data = args.data.resolve()
    assay = str(ASSAY)
    home = Path(tempfile.mkdtemp(prefix="assay-cli-latency-"))
    now_env = environment(home)
    before_env = environment(home, ASSAY_PREFECT_SERVER="ephemeral", PREFECT_HOME=str(home / "prefect-ephemeral"))
    commands = {
        "score_cached": [assay, "score", "--dataset", "wmt17", "--metric", "sentbleu"],
        "ingest_unchanged": [assay, "ingest", str(data)],
        "leaderboard_json": [assay, "leaderboard", "--dataset", "wmt17", "--json"],
        "help": [assay, "--help"],
    }
    flow_paths = {
        "score_cached": [sys.executable, "-c", SCORE_FLOW],
        "ingest_unchanged": [assay, "ingest", str(data), "--reparse"],
    }
    result: dict[str, Any] = {"data": str(data), "repeats": args.repeats, "python": sys.version.split()[0],
                              "cpus": os.cpu_count()}
    try:
        setup: dict[str, float] = {}
        setup["ingest_and_first_server_start_s"] = round(run(commands["ingest_unchanged"], now_env), 1)
        setup["score_s"] = round(run(commands["score_cached"], now_env), 1)
        setup["evaluate_s"] = round(run([assay, "evaluate", "--dataset", "wmt17", "--level", "seg", "--metric",
                                         "sentbleu", "--resamples", "100"], now_env), 1)
        setup["ephemeral_warmup_s"] = round(run(flow_paths["score_cached"], before_env), 1)
        result["setup"] = setup

        measured: dict[str, Any] = {}
        for name, command in commands.items():
            now = median_of(command, now_env, args.repeats)
            before = median_of(flow_paths.get(name, command), before_env, args.repeats)
            entry: dict[str, Any] = {"now_s": now, "before_s": before, "ratio": round(before / now, 1),
                                     "target_s": TARGETS_S[name], "meets_target": now <= TARGETS_S[name]}
            if name in flow_paths:
                entry["flow_on_background_server_s"] = median_of(flow_paths[name], now_env, args.repeats)
            measured[name] = entry
        result["commands"] = measured
        result["all_targets_met"] = all(entry["meets_target"] for entry in measured.values())
    finally:
        subprocess.run([assay, "server", "stop"], capture_output=True, env=now_env, timeout=120, check=False)
        shutil.rmtree(home, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
