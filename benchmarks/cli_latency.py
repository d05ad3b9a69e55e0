"""Wall time of everyday commands, exactly as a user types them (subprocesses of the installed
``assay`` entry point, interpreter start-up included), each against its target.

Setup, untimed, in a temporary ASSAY_HOME: ``assay ingest <wmt17-da>``, ``assay score --dataset
wmt17 --metric sentbleu`` and ``assay evaluate --dataset wmt17 --level seg`` (the first command
starts the background Prefect server that later commands share, :mod:`assay.cli.background_server`).
Then each command below runs ``--repeats`` times (default 5); the median is compared with its target:

- ``help``: ``assay --help`` (0.3 s)
- ``leaderboard``: ``assay leaderboard --dataset wmt17 --level seg --stat kendall --json`` (0.4 s)
- ``score_cached``: ``assay score --dataset wmt17 --metric sentbleu``, every segment cached (1.5 s)
- ``ingest_unchanged``: ``assay ingest <wmt17-da>`` of an unchanged source, answered without parsing (1.5 s)

``--compare-ephemeral`` also times each command with ``ASSAY_PREFECT_SERVER=ephemeral`` (Prefect's
temporary server per process, in its own PREFECT_HOME migrated by an untimed warm-up), the setting
that every command paid for before the background server.

Why these targets: a fully cached ``assay score`` once took 7.8 s (almost all of it Prefect's
temporary per-process server) and an unchanged re-ingest 15 s for about 1 s of work; the
leaderboard once took 0.57 s, 0.41 s of it importing the catalog (SQLAlchemy, Alembic) only to
name checkpoints. Each row of the JSON gives every run's time, the median, the target and whether
the median meets it; ``all_targets_met`` sums it up. The background server is stopped and the
temporary home removed at the end.

    .venv/bin/python benchmarks/cli_latency.py [--data ../shared/data/wmt17-da] [--repeats 5]
        [--compare-ephemeral] [--out FILE]
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
#: (name, the command's arguments after ``assay``, target seconds); ``{data}`` is the WMT17 folder
COMMANDS: tuple[tuple[str, tuple[str, ...], float], ...] = (
    ("help", ("--help",), 0.3),
    ("leaderboard", ("leaderboard", "--dataset", "wmt17", "--level", "seg", "--stat", "kendall", "--json"), 0.4),
    ("score_cached", ("score", "--dataset", "wmt17", "--metric", "sentbleu"), 1.5),
    ("ingest_unchanged", ("ingest", "{data}"), 1.5),
)
SETUP: tuple[tuple[str, ...], ...] = (
    ("ingest", "{data}"),
    ("score", "--dataset", "wmt17", "--metric", "sentbleu"),
    ("evaluate", "--dataset", "wmt17", "--level", "seg"),
)


def environment(home: Path, **extra: str) -> dict[str, str]:
    """The caller's environment with a fresh ASSAY_HOME and no Prefect server of its own."""
    env = {**os.environ, "ASSAY_HOME": str(home)}
    for key in ("PREFECT_API_URL", "PREFECT_HOME", "ASSAY_PREFECT_SERVER"):
        env.pop(key, None)
    return {**env, **extra}


def command_line(arguments: tuple[str, ...], data: Path) -> list[str]:
    return [str(ASSAY), *(a.format(data=data) for a in arguments)]


def run(command: list[str], env: dict[str, str]) -> float:
    """Seconds one subprocess took; a failure ends the benchmark with its stderr."""
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "wmt17-da")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--compare-ephemeral", action="store_true",
                        help="Also time each command on Prefect's temporary per-process server.")
    parser.add_argument("--out", type=Path, help="Also write the JSON object to this file.")
    args = parser.parse_args()
    if args.repeats < 3:
        raise SystemExit("--repeats must be at least 3 (the median of fewer says little)")
    if not ASSAY.is_file():
        raise SystemExit(f"{ASSAY}: no installed assay entry point beside this interpreter")
    data = args.data.resolve()
    home = Path(tempfile.mkdtemp(prefix="assay-cli-latency-"))
    env = environment(home)
    ephemeral = environment(home, ASSAY_PREFECT_SERVER="ephemeral", PREFECT_HOME=str(home / "prefect-ephemeral"))
    result: dict[str, Any] = {"data": str(data), "repeats": args.repeats, "python": sys.version.split()[0],
                              "cpus": os.cpu_count(), "load_average": list(os.getloadavg())}
    try:
        result["setup_s"] = {arguments[0]: round(run(command_line(arguments, data), env), 1) for arguments in SETUP}
        if args.compare_ephemeral:  # migrates the ephemeral server's database, untimed
            run(command_line(SETUP[1], data), ephemeral)
        measured: dict[str, Any] = {}
        for name, arguments, target in COMMANDS:
            command = command_line(arguments, data)
            runs = [round(run(command, env), 3) for _ in range(args.repeats)]
            median = round(statistics.median(runs), 3)
            measured[name] = {"command": " ".join(["assay", *command[1:]]), "runs_s": runs, "median_s": median,
                              "target_s": target, "meets_target": median <= target}
            if args.compare_ephemeral:
                measured[name]["ephemeral_median_s"] = round(statistics.median(
                    run(command, ephemeral) for _ in range(args.repeats)), 3)
        result["commands"] = measured
        result["all_targets_met"] = all(entry["meets_target"] for entry in measured.values())
    finally:
        subprocess.run([str(ASSAY), "server", "stop"], capture_output=True, env=env, timeout=120, check=False)
        shutil.rmtree(home, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
