"""The run recorder: the one place a job's run row is written to the catalog.

Every job (ingest, score, evaluate, select, drift, rerun, bertscore-baseline, report, and the
training jobs) is *plan -> compute -> record*. Its record step is a :class:`RunRecorder`: it
writes the catalog row for the run (kind, inputs by digest, parameters, code version, status,
timings, the parent run of a rerun and, when the job runs inside a Prefect flow, the flow-run id)
and indexes the immutable result files the run wrote, with their sha256 and row counts.

The platform never imports the orchestrator: the flow layer tells the recorder how to find the
current flow-run id (:mod:`assay.flow_context`) when a flow starts running (:mod:`assay.flows.hooks`).

A run's ``status`` is one of :data:`STATUSES`: ``running`` while its process works, then
``completed`` or ``failed`` (closed by that process), or ``crashed`` when its process died without
closing it (SIGKILL, OOM, a lost node). A process cannot record its own death, so ``crashed`` is
written by whoever learns of it: a scorer that holds the signature lock the dead run would hold
(:func:`mark_crashed`, see :mod:`assay.jobs.signature_lock`), or the flow layer when the orchestrator
reports the run's flow run crashed (:func:`mark_crashed_by_flow_run`).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from assay.catalog.engine import session_scope
from assay.catalog.models import ResultFile, Run
from assay.config import Settings
from assay.datasets.names import VersionRef
from assay.errors import NotFoundError
from assay.flow_context import current_flow_run_id
from assay.provenance import code_version

RUNNING, COMPLETED, FAILED, CRASHED = "running", "completed", "failed", "crashed"
STATUSES = (RUNNING, COMPLETED, FAILED, CRASHED)


def new_run_id() -> str:
    return uuid.uuid4().hex


def version_inputs(version: VersionRef, **inputs: Any) -> dict[str, Any]:
    """A run's ``inputs`` that name the dataset version it read: ``version`` as
    :meth:`~assay.datasets.names.VersionRef.as_dict` (``name``, ``number``, ``digest``, ``label``), beside
    the run's other ``inputs`` by digest. The one shape of a dataset version in the catalog's ``runs``
    (a training run's ``data`` is a list of these; migration 0006 brought older runs to it); read it
    back with :func:`inputs_version`."""
    return {"version": version.as_dict(), **inputs}


def inputs_version(inputs: Mapping[str, Any]) -> VersionRef:
    """The dataset version a run's inputs name (written by :func:`version_inputs`)."""
    return VersionRef.from_dict(inputs["version"])


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
        """Write the run as running. Idempotent: a retry after a commit whose answer was lost finds
        its own running row and leaves it."""
        with session_scope(self.settings) as session:
            existing = session.get(Run, self.run_id)
            if existing is None or existing.status != RUNNING or existing.kind != self.kind:
                session.add(self._row(RUNNING))
        return self

    def complete(self, summary: dict[str, Any], files: Iterable[RecordedFile] = ()) -> float:
        """Mark the run completed with its summary and files; returns its duration in seconds."""
        return self._close(COMPLETED, summary, list(files), None)

    def fail(self, error: str, summary: dict[str, Any] | None = None, files: Iterable[RecordedFile] = ()) -> float:
        return self._close(FAILED, summary or {}, list(files), error)

    def record(self, summary: dict[str, Any], files: Iterable[RecordedFile] = ()) -> float:
        """Write a finished run in one transaction (no ``running`` row first)."""
        finished = time.time()
        with session_scope(self.settings) as session:
            run = self._row(COMPLETED)
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
            if run.status == status and run.finished_at is not None:
                # closed already: a retry after a commit whose answer was lost; files are indexed
                return run.duration_s or 0.0
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


# --- runs whose process died -------------------------------------------------------------------


def running_score_runs(settings: Settings, signature: str) -> list[str]:
    """Ids of the ``score`` runs still marked running whose inputs carry ``signature``.

    The JSON inputs are matched here, not in SQL, so the query is the same on SQLite and
    PostgreSQL; running runs are few.
    """
    with session_scope(settings) as session:
        rows = session.execute(
            select(Run.id, Run.inputs).where(Run.kind == "score", Run.status == RUNNING)
        ).all()
    return sorted(run_id for run_id, inputs in rows if (inputs or {}).get("signature") == signature)


def mark_crashed(settings: Settings, run_ids: Iterable[str], reason: str) -> list[str]:
    """Mark the given runs ``crashed`` (those still running; others are left as they are):
    ``finished_at`` now, ``error`` the reason; their summary and files are kept, and their
    duration stays unknown (when the process died is not known). Returns the ids marked."""
    wanted = sorted(set(run_ids))
    if not wanted:
        return []
    return _crash(settings, select(Run).where(Run.id.in_(wanted), Run.status == RUNNING), reason)


def mark_crashed_by_flow_run(settings: Settings, flow_run_id: str, reason: str) -> list[str]:
    """Mark ``crashed`` every run still running that was recorded inside the flow run
    ``flow_run_id`` (for the flow layer, once the orchestrator reports that flow run crashed).
    Returns the ids marked."""
    if not flow_run_id:
        return []
    return _crash(settings, select(Run).where(Run.flow_run_id == str(flow_run_id), Run.status == RUNNING), reason)


def _crash(settings: Settings, query: Any, reason: str) -> list[str]:
    now = datetime.now(UTC)
    with session_scope(settings) as session:
        runs = list(session.scalars(query.with_for_update()).all())
        for run in runs:
            run.status = CRASHED
            run.finished_at = now
            run.error = reason
        return sorted(run.id for run in runs)
