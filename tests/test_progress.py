"""The progress display (:mod:`assay.progress`): which mode a process gets, what a periodic line
says (position, share, rate, ETA, loss and the last validation tau), and how a training run's
events and synthesis callbacks drive it. The clock is a counter, so the lines are exact."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from assay import progress
from assay.errors import UsageError


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _unconfigured(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("ASSAY_PROGRESS", raising=False)
    monkeypatch.delenv("ASSAY_PROGRESS_EVERY", raising=False)
    progress.configure()
    yield
    progress.configure()


def test_the_mode_follows_the_terminal_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    assert progress.resolved_mode(_Tty()) == "bar"
    assert progress.resolved_mode(io.StringIO()) == "lines"  # a pipe, a file, a Prefect worker's log
    monkeypatch.setenv("ASSAY_PROGRESS", "quiet")
    assert progress.resolved_mode(_Tty()) == "quiet"
    progress.configure("lines")  # the CLI's choice wins over the environment
    assert progress.resolved_mode(_Tty()) == "lines"
    with pytest.raises(UsageError, match="progress mode 'loud': expected one of auto, bar, lines, quiet"):
        progress.configure("loud")
    progress.configure()
    monkeypatch.setenv("ASSAY_PROGRESS", "loud")
    with pytest.raises(UsageError, match="ASSAY_PROGRESS='loud'"):
        progress.resolved_mode()


def test_lines_every_n_seconds_with_rate_and_eta() -> None:
    clock, lines = _Clock(), list[str]()
    shown = progress.Progress("finetune ft", 100, "steps", mode="lines", every=30, sink=lines.append, clock=clock)
    clock.now += 10
    shown.update(10, loss=0.51234)
    assert lines == []  # not yet 30 s
    clock.now += 20
    shown.update(20, loss=0.4)
    clock.now += 5
    shown.update(25, **{"val tau": 0.31234})
    assert len(lines) == 1
    # 20 steps in 30 s: 0.67 steps/s, 80 to go: 2 minutes
    assert lines[0].endswith("finetune ft: 20/100 steps (20%), loss 0.4, 0.67 steps/s, elapsed 0m30s, ETA 2m00s")
    shown.close()
    assert lines[1].endswith("finetune ft: 25/100 steps (25%), loss 0.4, val tau 0.3123, 0.71 steps/s, "
                             "elapsed 0m35s, ETA 1m45s")
    shown.close()
    assert len(lines) == 2  # closed once


def test_training_events_drive_one_display(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    monkeypatch.setenv("ASSAY_PROGRESS", "lines")
    monkeypatch.setenv("ASSAY_PROGRESS_EVERY", "0.000001")
    shown = progress.TrainingProgress("pretrain pre", fallback_sink=lines.append)
    shown({"event": "step", "step": 1, "loss": 2.0})  # before start: nothing to show yet
    shown({"event": "start", "max_steps": 4, "n_train": 32})
    shown({"event": "step", "step": 1, "loss": 1.5})
    shown({"event": "evaluate", "step": 2, "val_kendall_tau": 0.25, "val_loss": 1.0})
    shown({"event": "exported", "digest": "x"})
    shown({"event": "step", "step": 3, "loss": 1.0})  # closed: ignored
    assert [line.split("] ", 1)[1].split(", ")[0] for line in lines] == [
        "pretrain pre: 1/4 steps (25%)", "pretrain pre: 2/4 steps (50%)", "pretrain pre: 2/4 steps (50%)"]
    assert "loss 1.5, val tau 0.25" in lines[-1]


def test_synthesis_shows_each_stage_and_quiet_shows_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.synthetic.synthesize import Progress as SynthesisStep

    lines: list[str] = []
    monkeypatch.setenv("ASSAY_PROGRESS", "lines")
    shown = progress.SynthesisProgress("synthesizing synth-wmt16", fallback_sink=lines.append)
    for step in (SynthesisStep("perturb", 50, 100), SynthesisStep("perturb", 100, 100),
                 SynthesisStep("signals", 100, 100)):
        shown(step)
    shown.close()
    assert [line.split("] ", 1)[1].split(" (")[0] for line in lines] == [
        "synthesizing synth-wmt16: perturb: 100/100 pairs", "synthesizing synth-wmt16: signals: 100/100 pairs"]
    progress.configure("quiet")
    quiet = progress.TrainingProgress("x", fallback_sink=lines.append)
    quiet({"event": "start", "max_steps": 2})
    quiet({"event": "step", "step": 2, "loss": 1.0})
    quiet.close()
    assert len(lines) == 2


def test_a_bar_at_a_terminal(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    shown = progress.Progress("finetune ft", 10, "steps", mode="bar")
    shown.update(5, loss=0.5)
    shown.close()
    err = capsys.readouterr().err
    assert "finetune ft:" in err and "5/10" in err and "10/10" not in err and "loss 0.5" in err


def test_work_in_large_steps_ticks_while_the_position_stands_still() -> None:
    """Scoring moves a shard (thousands of segments) at a time: with ``tick`` a log still gets a line
    every interval, with the elapsed time, and the ticker stops at close (no line after it)."""
    import time

    lines: list[str] = []
    with progress.Progress("scoring bertscore", 4035, "segments", mode="lines", every=0.05, sink=lines.append,
                           tick=True) as shown:
        time.sleep(0.4)  # no update: the position stands at 0
        assert len(lines) >= 2, lines
        assert all(line.split("] ", 1)[1].startswith("scoring bertscore: 0/4035 segments (0%), 0.00 segments/s, "
                                                     "elapsed ") for line in lines), lines
        shown.update(4035)
    closed = len(lines)
    assert lines[-1].split("] ", 1)[1].startswith("scoring bertscore: 4035/4035 segments (100%), ")
    time.sleep(0.2)
    assert len(lines) == closed  # the ticker ended with the display
    assert shown._ticker is not None and not shown._ticker.is_alive()


def test_the_bar_takes_the_size_of_the_terminal_stderr_is_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pseudo-terminal that reports 0 x 0 would make tqdm hide the bar: COLUMNS/LINES, else 100 x 20."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    monkeypatch.setattr(progress.os, "get_terminal_size", lambda fd: progress.os.terminal_size((0, 0)))
    assert tuple(progress._terminal_size()) == (100, 20)
    monkeypatch.setenv("COLUMNS", "160")
    assert tuple(progress._terminal_size()) == (160, 20)
    monkeypatch.setattr(progress.os, "get_terminal_size", lambda fd: progress.os.terminal_size((80, 24)))
    monkeypatch.delenv("COLUMNS")
    assert tuple(progress._terminal_size()) == (80, 24)
