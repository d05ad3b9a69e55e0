"""Progress as a person and a script see it (issue 18): ``assay synth`` and ``assay train`` at a
pseudo-terminal draw bars with ETA (pairs; steps with the loss and the last validation tau); in a
pipe they write a plain line every ASSAY_PROGRESS_EVERY seconds; ``--quiet`` writes neither; and
transformers' own "Loading weights" bar never shows. ``assay score`` does the same in segments
(issue 28), and no command prints Prefect's notices (its first-run telemetry notice is written only
at a terminal, so only a terminal test can see it).

The encoder is a tiny RANDOM BERT with MiniLM's real tokenizer (no model of that size is available
offline); the ratings and sentences are the real WMT16 data in ``../shared/data``.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from assay.cli.main import cli
from tests.robustness_support import save_tiny_encoder

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _at_a_terminal(args: list[str], env: dict[str, str], timeout: float = 300) -> tuple[int, str]:
    """Run ``assay ARGS`` with stdout and stderr on a pseudo-terminal; its exit status and output."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "assay.cli.main", *args], stdin=slave, stdout=slave, stderr=slave,
                            env=env, close_fds=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other side closed (the process ended)
            break
        if not data:
            break
        chunks.append(data)
        assert time.monotonic() < deadline, "the command did not finish"
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


#: every command here: a line every 0.2 s in a pipe, and a terminal 160 columns wide
PROGRESS_SETTINGS = {"ASSAY_PROGRESS_EVERY": "0.2", "COLUMNS": "160"}


def _in_a_pipe(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_bars_at_a_terminal_lines_in_a_pipe_and_nothing_when_quiet(prefect_engine: None,
                                                                    ingested: Callable[..., Path],
                                                                    tmp_path: Path) -> None:
    runner = CliRunner()
    ingested("wmt16-da-seg")
    encoder = save_tiny_encoder(tmp_path / "tiny-random-bert")
    env = {**os.environ, **PROGRESS_SETTINGS}
    env.pop("ASSAY_PROGRESS", None)

    def train(name: str) -> list[str]:
        return ["train", "--stage", "finetune", "--data", "wmt16", "--init", str(encoder), "--steps", "16",
                "--eval-every", "8", "--save-every", "8", "--batch-size", "8", "--max-length", "64", "--name", name]

    # at a terminal: tqdm bars (redrawn with \r) with rate and ETA
    status, out = _at_a_terminal(["synth", "--from", "wmt16", "--exclude", "wmt17", "--pairs", "60",
                                  "--signal", "bleu", "--signal", "chrf"], env)
    assert status == 0, out
    plain = ANSI.sub("", out)
    assert "\r" in out, out
    assert re.search(r"synthesizing \S+: signals: 100%\|[^|]*\| 60/60 \[\d\d:\d\d<00:00, ", plain), plain
    status, out = _at_a_terminal(train("tty"), env)
    assert status == 0, out
    plain = ANSI.sub("", out)
    # tqdm's rate is s/steps below one step a second; the last validation tau once there is one
    assert re.search(r"finetune tty: +\d+%\|[^|]*\| \d+/16 \[\d\d:\d\d<\d\d:\d\d, +[\d.]+(?:steps/s|s/steps), "
                     r"loss [\d.e-]+\]", plain), plain
    assert re.search(r"finetune tty: 100%\|[^|]*\| 16/16 \[\d\d:\d\d<00:00, +[\d.]+(?:steps/s|s/steps), "
                     r"loss [\d.e-]+, val tau [\d.e-]+\]", plain), plain
    assert "Loading weights" not in out and "Writing model shards" not in out

    # not at a terminal: plain lines, no carriage returns, the same facts. Run in this process, whose
    # captured stderr is no terminal, as a pipe is not (a training subprocess cost seconds of CPU for
    # its imports alone; test_score_... below runs a command in a real pipe)
    in_process = {**PROGRESS_SETTINGS, "ASSAY_PROGRESS": None}  # what `env` sets, for CliRunner
    piped = runner.invoke(cli, train("pipe"), env=in_process)
    assert piped.exit_code == 0, piped.output
    lines = [line for line in piped.stderr.splitlines() if "finetune pipe: " in line]
    assert len(lines) >= 2 and "\r" not in piped.stderr, piped.stderr
    assert re.fullmatch(r"\[\d\d:\d\d:\d\d\] finetune pipe: 16/16 steps \(100%\), loss [\d.e-]+, val tau [\d.e-]+, "
                        r"[\d.]+ steps/s, elapsed \dm\d\ds", lines[-1]), lines[-1]
    assert any("ETA" in line for line in lines[:-1]), lines
    assert "Loading weights" not in piped.stderr + piped.stdout

    # --quiet: neither, and the result as usual (in this process: its stderr is not a terminal either)
    quiet = runner.invoke(cli, [*train("quiet"), "--quiet"], env=in_process)
    assert quiet.exit_code == 0, quiet.output
    assert "finetune quiet: " not in quiet.stderr and "quiet" in quiet.stdout


#: what Prefect prints the first time it is imported at a terminal by a new user
#: (prefect/_internal/analytics/notice.py)
PREFECT_NOTICE = "anonymous usage data"
#: the variables by which Prefect tells a CI run, where it never shows the notice
#: (prefect/_internal/analytics/ci_detection.py, Prefect 3.8)
PREFECT_CI_VARIABLES = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL", "TRAVIS", "CIRCLECI", "BUILDKITE",
                        "TF_BUILD", "CODEBUILD_BUILD_ID", "BITBUCKET_COMMIT", "TEAMCITY_VERSION", "DRONE", "SEMAPHORE",
                        "APPVEYOR", "BUDDY", "CI_NAME")


def test_score_draws_a_bar_at_a_terminal_and_lines_in_a_pipe_and_no_prefect_notice(
        prefect_engine: None, ingested: Callable[..., Path], isolated_assay_home: Path) -> None:
    ingested("wmt16-da-seg")
    env = {**os.environ, **PROGRESS_SETTINGS}
    env.pop("ASSAY_PROGRESS", None)
    # a new Prefect user, not in CI, who did not opt out: where Prefect shows its notice
    for name in ("PREFECT_HOME", "DO_NOT_TRACK", *PREFECT_CI_VARIABLES):
        env.pop(name, None)

    def score(metric: str) -> list[str]:
        return ["score", "--dataset", "wmt16", "--metric", metric, "--shard-size", "200"]

    # at a terminal: one bar in segments, redrawn with \r, ending at 100% with its rate
    status, out = _at_a_terminal(score("sentbleu"), env)
    assert status == 0, out
    plain = ANSI.sub("", out)
    assert "\r" in out, out
    assert re.search(r"scoring sentbleu: 100%\|[^|]*\| (\d+)/\1 \[\d\d:\d\d<00:00, +[\d.]+segments/s\]", plain), plain
    assert PREFECT_NOTICE not in out and "Prefect collects" not in out, out
    assert (isolated_assay_home / "prefect").is_dir()  # the fresh Prefect home this command imported Prefect with

    # in a pipe: plain lines, no carriage return; the last one at 100%
    piped = _in_a_pipe(score("chrf"), env)
    assert piped.returncode == 0, piped.stderr
    assert "\r" not in piped.stderr + piped.stdout, piped.stderr
    lines = [line for line in piped.stderr.splitlines() if "scoring chrf: " in line]
    assert lines and re.fullmatch(r"\[\d\d:\d\d:\d\d\] scoring chrf: (\d+)/\1 segments \(100%\), [\d.]+ segments/s, "
                                  r"elapsed \dm\d\ds", lines[-1]), piped.stderr
    assert PREFECT_NOTICE not in piped.stderr + piped.stdout
