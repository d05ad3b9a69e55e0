"""Wall time of everyday commands, exactly as a user types them (subprocesses of the installed
``assay`` entry point, interpreter start-up included), each against its target.

Setup, untimed, in a temporary ASSAY_HOME:

- ``--repeats`` + 1 tiny datasets, ``tiny-0`` ... (20 de-en segments of WMT17 each, distinct
  segments, written in the generic format and ingested with ``assay ingest FILE --format generic``;
  the first command starts the background Prefect server that later commands share,
  :mod:`assay.cli.background_server`);
- unless ``--skip-wmt17``, once the flow rows are timed (WMT17's scores would answer the tiny
  sets', which are slices of it): ``assay ingest <wmt17-da>``, ``assay score --dataset wmt17 --metric
  sentbleu`` and ``assay evaluate --dataset wmt17 --level seg``, for the earlier rows.

The first flow command also starts the command preloader (:mod:`assay.cli.command_preloader`); the
setup waits until it serves (``preloader_ready_s``), so that every timed flow command runs as a user's
later commands do. ``ASSAY_PRELOAD=0`` in the environment times every command in its own process.
Then each command below runs ``--repeats`` times; the median is compared with its target.

Flow commands with little work (the issue-29 target: 1.5 s, with the background server up). Run
``k`` scores ``tiny-k``, which nobody has scored, so every run computes and records a run:

- ``score_chrf``, ``score_sentbleu``, ``score_ter``: ``assay score --dataset tiny-k --metric ...``
- ``evaluate``: ``assay evaluate --dataset tiny-k`` (its three metrics, 1000 bootstrap resamples)

Refused options (exit status 2; checked before any flow starts, so they cost what a cached command
costs; target 1.5 s, they once took 3.1 s):

- ``refused_rater``: ``assay evaluate --dataset tiny-0 --rater nobody``
- ``refused_dataset``: ``assay score --dataset nosuch --metric chrf``

Cached commands (no flow):

- ``help``: ``assay --help`` (0.3 s)
- ``datasets_list``: ``assay datasets list`` (no target of its own: reported beside the others; most
  of it is importing SQLAlchemy for the catalog)
- ``score_cached_tiny``: ``assay score --dataset tiny-0 --metric chrf``, every segment cached (1.5 s)
- ``leaderboard``: ``assay leaderboard --dataset wmt17 --level seg --stat kendall --json`` (0.4 s)
- ``score_cached``: ``assay score --dataset wmt17 --metric sentbleu``, every segment cached (1.5 s)
- ``ingest_unchanged``: ``assay ingest <wmt17-da>`` of an unchanged source, answered without parsing (1.5 s)

``--compare-ephemeral`` also times each command with ``ASSAY_PREFECT_SERVER=ephemeral`` (Prefect's
temporary server per process, in its own PREFECT_HOME migrated by an untimed warm-up), the setting
that every command paid for before the background server.

Why these targets: a new user's ``assay score`` of chrF on a 20-segment dataset took 3.4-3.7 s for
milliseconds of scoring, and a bad ``--rater`` was refused after 3.1 s of start-up (issue 29); a
fully cached ``assay score`` once took 7.8 s (almost all of it Prefect's temporary per-process
server) and an unchanged re-ingest 15 s for about 1 s of work; the leaderboard once took 0.57 s,
0.41 s of it importing the catalog (SQLAlchemy, Alembic) only to name checkpoints.

Each row of the JSON gives every run's wall time and the CPU time of the ``assay`` process (user +
system; neither the server's nor, for a command the preloader ran, its forked child's), the medians,
the target and whether the median meets it (None for a row without a target);
``all_targets_met`` sums it up. ``imports_s`` gives the
median wall time of bare imports (the CLI, the CLI with Prefect and the score flow) and
``load_average_before``/``_after`` the machine's load, so the figures can be re-measured on a quiet
machine and compared. The background server is stopped
and the temporary home removed at the end.

    .venv/bin/python benchmarks/cli_latency.py [--data ../shared/data/wmt17-da] [--repeats 5]
        [--skip-wmt17] [--compare-ephemeral] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
#: segments per tiny dataset, and the language pair they are taken from
TINY_SEGMENTS = 20
TINY_PAIR = "de-en"
#: the issue-29 target of a flow command with little work
FLOW_TARGET_S = 1.5
#: (name, the command's arguments after ``assay``, target seconds, expected exit status); ``{data}`` is
#: the WMT17 folder, ``{tiny}`` the run's tiny dataset (``tiny-k`` in run ``k``)
FLOW_COMMANDS: tuple[tuple[str, tuple[str, ...], float, int], ...] = (
    ("score_chrf", ("score", "--dataset", "{tiny}", "--metric", "chrf"), FLOW_TARGET_S, 0),
    ("score_sentbleu", ("score", "--dataset", "{tiny}", "--metric", "sentbleu"), FLOW_TARGET_S, 0),
    ("score_ter", ("score", "--dataset", "{tiny}", "--metric", "ter"), FLOW_TARGET_S, 0),
    ("evaluate", ("evaluate", "--dataset", "{tiny}"), FLOW_TARGET_S, 0),
)
CACHED_COMMANDS: tuple[tuple[str, tuple[str, ...], float | None, int], ...] = (
    ("refused_rater", ("evaluate", "--dataset", "tiny-0", "--rater", "nobody"), FLOW_TARGET_S, 2),
    ("refused_dataset", ("score", "--dataset", "nosuch", "--metric", "chrf"), FLOW_TARGET_S, 2),
    ("help", ("--help",), 0.3, 0),
    ("datasets_list", ("datasets", "list"), None, 0),
    ("score_cached_tiny", ("score", "--dataset", "tiny-0", "--metric", "chrf"), 1.5, 0),
)
WMT17_COMMANDS: tuple[tuple[str, tuple[str, ...], float | None, int], ...] = (
    ("leaderboard", ("leaderboard", "--dataset", "wmt17", "--level", "seg", "--stat", "kendall", "--json"), 0.4, 0),
    ("score_cached", ("score", "--dataset", "wmt17", "--metric", "sentbleu"), 1.5, 0),
    ("ingest_unchanged", ("ingest", "{data}"), 1.5, 0),
)
WMT17_SETUP: tuple[tuple[str, ...], ...] = (
    ("ingest", "{data}"),
    ("score", "--dataset", "wmt17", "--metric", "sentbleu"),
    ("evaluate", "--dataset", "wmt17", "--level", "seg"),
)
#: bare imports timed for the record (``python -c``), with the environment a flow command has
IMPORTS = {
    "cli": "import assay.cli.main",
    "cli_and_prefect": "import assay.cli.main, prefect",
    "score_flow": "import assay.cli.main, assay.flows.score",
}


def environment(home: Path, **extra: str) -> dict[str, str]:
    """The caller's environment with a fresh ASSAY_HOME and no Prefect server of its own."""
    env = {**os.environ, "ASSAY_HOME": str(home)}
    for key in ("PREFECT_API_URL", "PREFECT_HOME", "ASSAY_PREFECT_SERVER"):
        env.pop(key, None)
    return {**env, **extra}


def command_line(arguments: tuple[str, ...], data: Path, tiny: str = "tiny-0") -> list[str]:
    return [str(ASSAY), *(a.format(data=data, tiny=tiny) for a in arguments)]


def run(command: list[str], env: dict[str, str], expect: int = 0) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process) of one subprocess; an unexpected exit status ends
    the benchmark with its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}, expected {expect}:\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu


def write_tiny_datasets(data: Path, folder: Path, count: int) -> list[Path]:
    """``count`` generic-format TSV files of :data:`TINY_SEGMENTS` distinct WMT17 segments each
    (:data:`TINY_PAIR`, single-system rows of ``DA-seglevel.csv`` in file order, with their source,
    reference and system output), so that no file shares a scored segment with another."""
    lines = (data / "DA-seglevel.csv").read_text(encoding="utf-8").splitlines()[1:]
    rows = [fields for fields in (line.split() for line in lines) if fields[0] == TINY_PAIR and "+" not in fields[2]]
    if len(rows) < count * TINY_SEGMENTS:
        raise SystemExit(f"{data}: {len(rows)} {TINY_PAIR} rows, fewer than {count} x {TINY_SEGMENTS}")
    code = TINY_PAIR.replace("-", "")
    source = (data / "sources" / f"newstest2017-{code}-src.{TINY_PAIR[:2]}").read_text(encoding="utf-8").splitlines()
    reference = (data / "references" / f"newstest2017-{code}-ref.en").read_text(encoding="utf-8").splitlines()
    outputs: dict[str, list[str]] = {}
    files = []
    for k in range(count):
        out = ["group\tsystem\tsegment_id\tsource\treferences\tcandidate\thuman_z"]
        for pair, test_set, system, sid, human in rows[k * TINY_SEGMENTS:(k + 1) * TINY_SEGMENTS]:
            if system not in outputs:
                path = data / "system-outputs" / test_set / pair / f"{test_set}.{system}.{pair}"
                outputs[system] = path.read_text(encoding="utf-8").splitlines()
            line = int(sid) - 1
            out.append("\t".join([pair, system, sid, source[line], reference[line], outputs[system][line], human]))
        path = folder / f"tiny-{k}.tsv"
        path.write_text("\n".join(out) + "\n", encoding="utf-8")
        files.append(path)
    return files


def timed_row(commands: list[list[str]], target: float | None, expect: int, env: dict[str, str],
              ephemeral: dict[str, str] | None) -> dict[str, Any]:
    """One row: each of ``commands`` run once (the repeats), their wall and CPU times, the medians."""
    measured = [run(command, env, expect) for command in commands]
    walls = [round(wall, 3) for wall, _ in measured]
    median = round(statistics.median(walls), 3)
    row: dict[str, Any] = {"command": " ".join(["assay", *commands[0][1:]]), "runs_s": walls, "median_s": median,
                           "cpu_runs_s": [round(cpu, 3) for _, cpu in measured],
                           "cpu_median_s": round(statistics.median(cpu for _, cpu in measured), 3),
                           "target_s": target, "meets_target": None if target is None else median <= target}
    if ephemeral is not None:
        row["ephemeral_median_s"] = round(statistics.median(run(c, ephemeral, expect)[0] for c in commands), 3)
    return row


def wait_for_preloader(home: Path, env: dict[str, str], timeout: float = 300.0) -> float | None:
    """Seconds until the home's command preloader serves (None: switched off, or not within ``timeout``)."""
    if env.get("ASSAY_PRELOAD", "").strip() == "0":
        return None
    started = time.perf_counter()
    while not (home / "server" / "preloader.sock").exists():
        if time.perf_counter() - started > timeout:
            return None
        time.sleep(0.2)
    return round(time.perf_counter() - started, 1)


def import_times(env: dict[str, str], repeats: int) -> dict[str, float]:
    """Median wall seconds of each bare import of :data:`IMPORTS` in a new interpreter."""
    return {name: round(statistics.median(run([sys.executable, "-c", code], env)[0] for _ in range(repeats)), 3)
            for name, code in IMPORTS.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "wmt17-da")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-wmt17", action="store_true",
                        help="Leave out the rows on the whole of WMT17 (and their setup: ingest, score, evaluate).")
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
    ephemeral = environment(home, ASSAY_PREFECT_SERVER="ephemeral", PREFECT_HOME=str(home / "prefect-ephemeral")) \
        if args.compare_ephemeral else None
    # tiny-0 for the cached and refused rows, tiny-1 ... for the flow rows (twice as many to compare)
    tiny_count = 1 + args.repeats * (2 if ephemeral is not None else 1)
    result: dict[str, Any] = {"data": str(data), "repeats": args.repeats, "python": sys.version.split()[0],
                              "cpus": os.cpu_count(), "load_average_before": list(os.getloadavg())}
    try:
        files = write_tiny_datasets(data, home, tiny_count)
        setup: dict[str, float] = {}
        for path in files:
            wall, _ = run(command_line(("ingest", str(path), "--format", "generic", "--name", path.stem), data), env)
            setup[f"ingest {path.stem}"] = round(wall, 1)
        run(command_line(CACHED_COMMANDS[-1][1], data), env)  # tiny-0's chrF scores, for score_cached_tiny
        result["preloader_ready_s"] = wait_for_preloader(home, env)
        if ephemeral is not None:  # migrates the ephemeral server's database, untimed
            run(command_line(CACHED_COMMANDS[-1][1], data), ephemeral)
        measured: dict[str, Any] = {}
        # before WMT17 is scored: the tiny sets are slices of it, and its scores would answer theirs
        for name, arguments, target, expect in FLOW_COMMANDS:
            commands = [command_line(arguments, data, f"tiny-{k}") for k in range(1, args.repeats + 1)]
            measured[name] = timed_row(commands, target, expect, env, None)
            if ephemeral is not None:
                measured[name]["ephemeral_median_s"] = round(statistics.median(
                    run(command_line(arguments, data, f"tiny-{args.repeats + k}"), ephemeral, expect)[0]
                    for k in range(1, args.repeats + 1)), 3)
        rows = CACHED_COMMANDS
        if not args.skip_wmt17:
            for arguments in WMT17_SETUP:
                setup[" ".join(arguments[:1])] = round(run(command_line(arguments, data), env)[0], 1)
            rows += WMT17_COMMANDS
        result["setup_s"] = setup
        for name, arguments, cached_target, expect in rows:
            commands = [command_line(arguments, data)] * args.repeats
            measured[name] = timed_row(commands, cached_target, expect, env, ephemeral)
        result["commands"] = measured
        result["flow_target_s"] = FLOW_TARGET_S
        result["all_targets_met"] = all(entry["meets_target"] for entry in measured.values()
                                        if entry["meets_target"] is not None)
        result["imports_s"] = import_times({**env, "PREFECT_HOME": str(home / "prefect"), "DO_NOT_TRACK": "1"},
                                           args.repeats)
        result["load_average_after"] = list(os.getloadavg())
    finally:
        subprocess.run([str(ASSAY), "server", "stop"], capture_output=True, env=env, timeout=120, check=False)
        shutil.rmtree(home, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
