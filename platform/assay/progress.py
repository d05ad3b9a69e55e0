"""How long-running work shows its progress: scoring (segments), synthesis (pairs) and training
(steps, loss, the last validation tau).

Three modes, chosen once per process (:func:`configure`, or ``ASSAY_PROGRESS``):

* ``bar``: a tqdm bar with rate and ETA on stderr, redrawn in place (``\\r``), for a person at a
  terminal;
* ``lines``: one plain line every ``ASSAY_PROGRESS_EVERY`` seconds (30 by default), and one at the
  end, for a script's log, a pipe or a Prefect flow-run log (``sink``); never a ``\\r``;
* ``quiet``: nothing (``--quiet``).

``auto`` (the default) is ``bar`` when stderr is a terminal and ``lines`` otherwise.

Work that moves in large steps (scoring moves one shard, thousands of segments, at a time) starts
its display with ``tick=True``: a timer then writes the line every interval even while the position
stands still, so a log shows the work is alive, and redraws the bar each second, so its elapsed
time moves.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from assay.errors import UsageError

MODES = ("auto", "bar", "lines", "quiet")
DEFAULT_EVERY = 30.0
Sink = Callable[[str], None]


@dataclass
class _Config:
    mode: str | None = None
    every: float | None = None
    sink: Sink | None = None


_CONFIG = _Config()


def configure(mode: str | None = None, *, every: float | None = None, sink: Sink | None = None) -> None:
    """Set this process's progress mode (one of :data:`MODES`), line interval and line sink."""
    if mode is not None and mode not in MODES:
        raise UsageError(f"progress mode {mode!r}: expected one of {', '.join(MODES)}")
    if every is not None and not every > 0:
        raise UsageError(f"progress interval {every!r}: expected seconds > 0")
    _CONFIG.mode, _CONFIG.every, _CONFIG.sink = mode, every, sink


def resolved_mode(stream: TextIO | None = None) -> str:
    """``bar``, ``lines`` or ``quiet``: the configured mode, else ``ASSAY_PROGRESS``, with ``auto``
    decided by whether ``stream`` (stderr) is a terminal."""
    mode = _CONFIG.mode or os.environ.get("ASSAY_PROGRESS", "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise UsageError(f"ASSAY_PROGRESS={mode!r}: expected one of {', '.join(MODES)}")
    if mode == "auto":
        stream = stream or sys.stderr
        return "bar" if hasattr(stream, "isatty") and stream.isatty() else "lines"
    return mode


def _every() -> float:
    if _CONFIG.every is not None:
        return _CONFIG.every
    raw = os.environ.get("ASSAY_PROGRESS_EVERY")
    try:
        value = float(raw) if raw else DEFAULT_EVERY
    except ValueError as exc:
        raise UsageError(f"ASSAY_PROGRESS_EVERY={raw!r}: expected seconds > 0") from exc
    if not value > 0:
        raise UsageError(f"ASSAY_PROGRESS_EVERY={raw!r}: expected seconds > 0")
    return value


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


@dataclass
class Progress:
    """One piece of work with a known ``total`` of ``unit``: :meth:`update` with the position
    reached (absolute) and what to show beside it; :meth:`close` at the end."""

    desc: str
    total: int
    unit: str
    mode: str = "lines"
    every: float = DEFAULT_EVERY
    sink: Sink = _stderr_line
    clock: Callable[[], float] = time.monotonic
    done: int = 0
    info: dict[str, str] = field(default_factory=dict)
    tick: bool = False
    _bar: Any = None
    _started: float = 0.0
    _last_line: float = 0.0
    _closed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _ticker: threading.Thread | None = None

    def __post_init__(self) -> None:
        self._started = self._last_line = self.clock()
        if self.mode == "bar":
            from tqdm.auto import tqdm

            size = _terminal_size()
            self._bar = tqdm(total=self.total, desc=self.desc, unit=self.unit, file=sys.stderr, ncols=size.columns,
                             nrows=size.lines)
        if self.tick and self.mode in ("bar", "lines"):
            self._ticker = threading.Thread(target=self._tick, name=f"progress: {self.desc}", daemon=True)
            self._ticker.start()

    def update(self, done: int, **info: Any) -> None:
        with self._lock:
            if self._closed:
                return
            self.info.update({k: _show(v) for k, v in info.items() if v is not None})
            step, self.done = done - self.done, done
            if self._bar is not None:
                if self.info:
                    self._bar.set_postfix_str(", ".join(f"{k} {v}" for k, v in self.info.items()), refresh=False)
                self._bar.update(step)
            elif self.mode == "lines" and self.clock() - self._last_line >= self.every:
                self._line()

    def _tick(self) -> None:
        """The timer of ``tick``: each second, the line when none was written for an interval
        (``lines``), or the bar redrawn so that its elapsed time moves (``bar``)."""
        while not self._stop.wait(min(self.every, 1.0)):
            with self._lock:
                if self._closed:
                    return
                if self._bar is not None:
                    self._bar.refresh()
                elif self.clock() - self._last_line >= self.every:
                    self._line()

    def line(self) -> str:
        """The plain line ``lines`` mode writes: position, share, rate, ETA and the shown values."""
        elapsed = self.clock() - self._started
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (f", ETA {_duration((self.total - self.done) / rate)}" if rate > 0 and self.done < self.total
               else "")
        shown = "".join(f", {k} {v}" for k, v in self.info.items())
        return (f"[{time.strftime('%H:%M:%S')}] {self.desc}: {self.done}/{self.total} {self.unit}{share}{shown}, "
                f"{rate:.2f} {self.unit}/s, elapsed {_duration(elapsed)}{eta}")

    def _line(self) -> None:
        self._last_line = self.clock()
        self.sink(self.line())

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop.set()
            if self._bar is not None:
                self._bar.close()
            elif self.mode == "lines":
                self._line()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _show(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _terminal_size() -> os.terminal_size:
    """``COLUMNS`` and ``LINES`` where set, else the size of the terminal stderr is on (where the bar
    is drawn, whatever stdout is), else 100 x 20. A pseudo-terminal may report 0 x 0 (``script``,
    some container and CI runners), and tqdm then hides the bar as "outside the screen"."""
    def number(name: str) -> int:
        try:
            return max(int(os.environ.get(name) or 0), 0)
        except ValueError:
            return 0

    columns, lines = number("COLUMNS"), number("LINES")
    if not (columns and lines):
        try:
            size = os.get_terminal_size(sys.stderr.fileno())
        except (AttributeError, ValueError, OSError):  # no stderr, a replaced one, or not a terminal
            size = os.terminal_size((0, 0))
        columns, lines = columns or size.columns, lines or size.lines
    return os.terminal_size((columns or 100, lines or 20))


def start(desc: str, total: int, unit: str, *, fallback_sink: Sink | None = None,
          tick: bool = False) -> Progress | None:
    """A display for this process's mode (None when ``quiet``); ``lines`` go to the configured sink,
    else to ``fallback_sink`` (a flow's run logger), else to stderr. ``tick``: also write a line (or
    redraw the bar) every interval while the position does not move (work in large steps)."""
    mode = resolved_mode()
    if mode == "quiet":
        return None
    return Progress(desc, total, unit, mode=mode, every=_every(),
                    sink=_CONFIG.sink or fallback_sink or _stderr_line, tick=tick)


class TrainingProgress:
    """A training run's events (``start``, ``step``, ``evaluate``, ``exported``; see
    :mod:`assay.workers.training.engine`) as a progress display in steps, with the loss and the
    last validation tau. Use as (part of) the run's ``on_event``."""

    def __init__(self, desc: str, *, fallback_sink: Sink | None = None) -> None:
        self.desc = desc
        self.fallback_sink = fallback_sink
        self.display: Progress | None = None
        self._open = False

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "start" and not self._open:
            self._open = True
            self.display = start(self.desc, int(event.get("max_steps") or 0), "steps",
                                 fallback_sink=self.fallback_sink)
        elif self.display is None:
            return
        elif kind == "step":
            self.display.update(int(event["step"]), loss=event.get("loss"))
        elif kind == "evaluate":
            self.display.update(int(event["step"]), **{"val tau": event.get("val_kendall_tau")})
        elif kind in ("export", "exported", "early_stop"):
            self.close()

    def close(self) -> None:
        if self.display is not None:
            self.display.close()


class SynthesisProgress:
    """Synthesis callbacks (:class:`assay.synthetic.synthesize.Progress`: a stage and its pairs
    done) as one display per stage (perturbing, then computing the signals)."""

    def __init__(self, desc: str, *, fallback_sink: Sink | None = None) -> None:
        self.desc = desc
        self.fallback_sink = fallback_sink
        self.stage: str | None = None
        self.display: Progress | None = None

    def __call__(self, progress: Any) -> None:
        if progress.stage != self.stage:
            self.close()
            self.stage = progress.stage
            self.display = start(f"{self.desc}: {progress.stage}", int(progress.total), "pairs",
                                 fallback_sink=self.fallback_sink)
        if self.display is not None:
            self.display.update(int(progress.done))
            if progress.done >= progress.total:
                self.close()

    def close(self) -> None:
        if self.display is not None:
            self.display.close()
            self.display = None
