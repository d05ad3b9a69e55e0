"""The run recorder: the one place a job's run row is written to the catalog.

Every job (ingest, score, evaluate, select, drift, rerun, bertscore-baseline, report, and the
training jobs) is *plan -> compute -> record*. Its record step is a :class:`RunRecorder`: it
writes the catalog row for the run (kind, inputs by digest, parameters, code version, status,
timings, the parent run of a rerun and, when the job runs inside a Prefect flow, the flow-run id)
and indexes the immutable result files the run wrote, with their sha256 and row counts.

The platform never imports the orchestrator: the flow layer tells the recorder how to find the
current flow-run id (:mod:`assay.flow_context`) when it is imported.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay.catalog.engine import session_scope
from assay.catalog.models import ResultFile, Run
from assay.config import Settings
from assay.errors import NotFoundError
from assay.flow_context import current_flow_run_id
from assay.provenance import code_version


def new_run_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class RecordedFile:
    """A result file a run wrote, relative to ``ASSAY_HOME``."""

    path: str
    kind: str
    rows: int
    sha256: str

    @classmethod
    def of(cls, settings: Settings, relative: Path | str, kind: str, rows: int) -> RecordedFile:
        absolute = settings.home / relative
        return cls(str(relative), kind, rows, hashlib.sha256(absolute.read_bytes()).hexdigest())

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "rows": self.rows, "sha256": self.sha256}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecordedFile:
        return cls(str(data["path"]), str(data["kind"]), int(data["rows"]), str(data["sha256"]))


@dataclass
class RunRecorder:
    """Records one run. ``start`` writes it as ``running``; ``complete`` or ``fail`` closes it.

    A job that is quick and cannot be interrupted half-way may call :meth:`record` once instead.
    Recorders are plain data (``as_dict``/``from_dict``), so flow tasks can pass them along.
    """

    settings: Settings
    kind: str
    inputs: dict[str, Any]
    parameters: dict[str, Any]
    run_id: str = field(default_factory=new_run_id)
    parent_run_id: str | None = None
    started: float = field(default_factory=time.time)

    def start(self) -> RunRecorder:
        with session_scope(self.settings) as session:
            session.add(self._row("running"))
        return self

    def complete(self, summary: dict[str, Any], files: Iterable[RecordedFile] = ()) -> float:
        """Mark the run completed with its summary and files; returns its duration in seconds."""
        return self._close("completed", summary, list(files), None)

    def fail(self, error: str, summary: dict[str, Any] | None = None, files: Iterable[RecordedFile] = ()) -> float:
        return self._close("failed", summary or {}, list(files), error)

    def record(self, summary: dict[str, Any], files: Iterable[RecordedFile] = ()) -> float:
        """Write a finished run in one transaction (no ``running`` row first)."""
        finished = time.time()
        with session_scope(self.settings) as session:
            run = self._row("completed")
            run.summary = summary
            run.finished_at = datetime.fromtimestamp(finished, UTC)
            run.duration_s = finished - self.started
            session.add(run)
            session.flush()
            self._add_files(session, list(files))
        return finished - self.started

    def _row(self, status: str) -> Run:
        return Run(
            id=self.run_id, kind=self.kind, status=status, code_version=code_version(), inputs=self.inputs,
            parameters=self.parameters, summary={}, started_at=datetime.fromtimestamp(self.started, UTC),
            parent_run_id=self.parent_run_id, flow_run_id=current_flow_run_id(),
        )

    def _close(self, status: str, summary: dict[str, Any], files: list[RecordedFile], error: str | None) -> float:
        finished = time.time()
        with session_scope(self.settings) as session:
            run = session.get(Run, self.run_id)
            if run is None:
                raise NotFoundError(f"run {self.run_id} is not in the catalog (was it started?)")
            run.status = status
            run.error = error
            run.summary = summary
            run.finished_at = datetime.fromtimestamp(finished, UTC)
            run.duration_s = finished - self.started
            if run.flow_run_id is None:
                run.flow_run_id = current_flow_run_id()
            self._add_files(session, files)
        return finished - self.started

    def _add_files(self, session: Any, files: list[RecordedFile]) -> None:
        for f in files:
            session.add(ResultFile(run_id=self.run_id, kind=f.kind, path=f.path, sha256=f.sha256, rows=f.rows))

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "inputs": self.inputs, "parameters": self.parameters, "run_id": self.run_id,
                "parent_run_id": self.parent_run_id, "started": self.started}

    @classmethod
    def from_dict(cls, settings: Settings, data: dict[str, Any]) -> RunRecorder:
        return cls(settings, str(data["kind"]), dict(data["inputs"]), dict(data["parameters"]),
                   run_id=str(data["run_id"]), parent_run_id=data.get("parent_run_id"),
                   started=float(data["started"]))
