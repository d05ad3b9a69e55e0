"""The catalog's tables (SQLAlchemy 2 declarative models).

The catalog holds the small, relational, transactional facts; the bulk data lives in Parquet
(see ``docs/STORAGE.md``). Schema changes go through Alembic migrations in ``migrations/``;
``tests/catalog/test_migrations.py`` checks that the models and the migrations agree.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from assay.checkpoints.ref import CheckpointRef
from assay.datasets.names import VersionRef


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class Dataset(Base):
    """A named human-judgment dataset (``wmt17``); its content lives in versions."""

    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("name", name="uq_datasets_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)

    versions: Mapped[list[DatasetVersion]] = relationship(
        back_populates="dataset", order_by="DatasetVersion.number"
    )


class DatasetVersion(Base):
    """One immutable, content-addressed version of a dataset.

    ``digest`` is the sha256 of the canonical tables' content; ``number`` counts versions of the
    dataset from 1. ``store_path`` is relative to ``ASSAY_HOME``.
    """

    __tablename__ = "dataset_versions"
    __table_args__ = (
        UniqueConstraint("dataset_id", "digest", name="uq_dataset_versions_digest"),
        UniqueConstraint("dataset_id", "number", name="uq_dataset_versions_number"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), nullable=False)
    number: Mapped[int] = mapped_column(Integer, nullable=False)
    digest: Mapped[str] = mapped_column(String(64), nullable=False)
    format: Mapped[str] = mapped_column(String(64), nullable=False)
    store_path: Mapped[str] = mapped_column(Text, nullable=False)
    source_path: Mapped[str] = mapped_column(Text, nullable=False)
    source_files: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False)
    row_counts: Mapped[dict[str, int]] = mapped_column(JSON, nullable=False)
    warnings: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    info: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    code_version: Mapped[str] = mapped_column(String(128), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    # lineage (migration 0002): a derived version (e.g. a quality-drift sample) names its parent
    parent_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("dataset_versions.id", name="fk_dataset_versions_parent"), nullable=True
    )
    derivation: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)

    dataset: Mapped[Dataset] = relationship(back_populates="versions")
    systems: Mapped[list[System]] = relationship(back_populates="version", cascade="all, delete-orphan")

    @property
    def label(self) -> str:
        return self.ref.label

    @property
    def ref(self) -> VersionRef:
        """This version as a :class:`VersionRef` (needs ``dataset`` loaded)."""
        return VersionRef(self.dataset.name, self.number, self.digest)


class System(Base):
    """A system (MT engine, NLG team, human writer) that appears in a dataset version."""

    __tablename__ = "systems"
    __table_args__ = (UniqueConstraint("version_id", "group", "name", name="uq_systems_version_group_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version_id: Mapped[int] = mapped_column(
        ForeignKey("dataset_versions.id", ondelete="CASCADE"), nullable=False
    )
    group: Mapped[str] = mapped_column(String(128), nullable=False)
    name: Mapped[str] = mapped_column(String(256), nullable=False)
    is_human: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    segment_judgments: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    system_judgments: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    outputs: Mapped[int] = mapped_column(Integer, nullable=False, default=0)

    version: Mapped[DatasetVersion] = relationship(back_populates="systems")


class Run(Base):
    """One execution of a flow (ingest, score, evaluate, ...), with its inputs by digest."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_kind_started", "kind", "started_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    inputs: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    code_version: Mapped[str] = mapped_column(String(128), nullable=False)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    duration_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    # migration 0002: provenance links
    parent_run_id: Mapped[str | None] = mapped_column(
        ForeignKey("runs.id", name="fk_runs_parent"), nullable=True
    )
    flow_run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)

    result_files: Mapped[list[ResultFile]] = relationship(back_populates="run")


class Checkpoint(Base):
    """A learned-metric checkpoint (safetensors folder) registered for scoring, once per content
    digest, under a unique name; ``lineage`` says what made it (see :mod:`assay.checkpoints.registry`)."""

    __tablename__ = "checkpoints"
    __table_args__ = (
        UniqueConstraint("digest", name="uq_checkpoints_digest"),
        UniqueConstraint("name", name="uq_checkpoints_name"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(256), nullable=False)
    path: Mapped[str] = mapped_column(Text, nullable=False)
    digest: Mapped[str] = mapped_column(String(64), nullable=False)
    base_model: Mapped[str | None] = mapped_column(String(256), nullable=True)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("checkpoints.id"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    # migration 0003: the registry
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", name="fk_checkpoints_run"), nullable=True)
    lineage: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    heads: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    code_version: Mapped[str | None] = mapped_column(String(128), nullable=True)
    size_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)

    @property
    def ref(self) -> CheckpointRef:
        """This checkpoint as a :class:`CheckpointRef` (its digest and name)."""
        return CheckpointRef(self.digest, self.name)


class ResultFile(Base):
    """An immutable Parquet file a run wrote into the results store (path relative to home)."""

    __tablename__ = "result_files"
    __table_args__ = (UniqueConstraint("path", name="uq_result_files_path"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), nullable=False)
    kind: Mapped[str] = mapped_column(String(32), nullable=False)
    path: Mapped[str] = mapped_column(Text, nullable=False)
    sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    rows: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)

    run: Mapped[Run] = relationship(back_populates="result_files")


# --- migration 0004: team scale (suites, the nightly ledger, regressions, watched folders) -------


class Suite(Base):
    """A named, versioned evaluation suite: datasets pinned by version x levels x statistics.

    ``definition`` is the canonical JSON (see :mod:`assay.nightly.suites`); ``signature`` is its content
    hash, part of the nightly ledger's key. A changed definition is a new version, never an edit.
    """

    __tablename__ = "suites"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_suites_name_version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), nullable=False)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    definition: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    signature: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)


class WatchedFolder(Base):
    """A folder the nightly flow scans for new checkpoint folders (``assay checkpoints watch``)."""

    __tablename__ = "watched_folders"
    __table_args__ = (UniqueConstraint("path", name="uq_watched_folders_path"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    path: Mapped[str] = mapped_column(Text, nullable=False)
    added_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)


class SuiteEvaluation(Base):
    """The nightly ledger: one row per (checkpoint digest, dataset version digest, suite signature),
    the unit that is evaluated exactly once. ``status``: running, completed, failed (bad input: not
    retried) or crashed (its process died: retried up to a limit); ``attempts`` counts claims."""

    __tablename__ = "suite_evaluations"
    __table_args__ = (
        UniqueConstraint("checkpoint_digest", "dataset_digest", "suite_signature", name="uq_suite_evaluations_key"),
        Index("ix_suite_evaluations_status", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    checkpoint_digest: Mapped[str] = mapped_column(String(64), nullable=False)
    dataset_digest: Mapped[str] = mapped_column(String(64), nullable=False)
    dataset_version_id: Mapped[int] = mapped_column(ForeignKey("dataset_versions.id"), nullable=False)
    suite_id: Mapped[int] = mapped_column(ForeignKey("suites.id"), nullable=False)
    suite_signature: Mapped[str] = mapped_column(String(64), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    flow_run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    score_run_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    evaluate_run_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)


class CheckpointOutbox(Base):
    """An announcement owed for a registered checkpoint (migration 0005): written with the
    checkpoint row, delivered when the ``assay.checkpoint.registered`` event reached the team's
    Prefect server (``delivered_by = 'event'``) or a nightly sweep took the checkpoint up itself
    (``'sweep'``). See :mod:`assay.checkpoints.outbox`."""

    __tablename__ = "checkpoint_outbox"
    __table_args__ = (UniqueConstraint("checkpoint_digest", name="uq_checkpoint_outbox_digest"),
                      Index("ix_checkpoint_outbox_owed", "delivered_at"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    checkpoint_digest: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    delivered_by: Mapped[str | None] = mapped_column(String(16), nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    last_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)


class Regression(Base):
    """A checkpoint significantly worse than the team's best on one suite cell (dataset version x
    level x group x statistic), found by the nightly comparison."""

    __tablename__ = "regressions"
    __table_args__ = (Index("ix_regressions_checkpoint", "checkpoint_digest"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    checkpoint_digest: Mapped[str] = mapped_column(String(64), nullable=False)
    baseline_digest: Mapped[str] = mapped_column(String(64), nullable=False)
    suite_signature: Mapped[str] = mapped_column(String(64), nullable=False)
    dataset_version_id: Mapped[int] = mapped_column(ForeignKey("dataset_versions.id"), nullable=False)
    level: Mapped[str] = mapped_column(String(16), nullable=False)
    group: Mapped[str] = mapped_column(String(128), nullable=False)
    aspect: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    """The human target (e.g. WebNLG fluency); empty where a dataset has one."""
    statistic: Mapped[str] = mapped_column(String(32), nullable=False)
    value: Mapped[float] = mapped_column(Float, nullable=False)
    baseline_value: Mapped[float] = mapped_column(Float, nullable=False)
    p_value: Mapped[float] = mapped_column(Float, nullable=False)
    test: Mapped[str] = mapped_column(String(64), nullable=False)
    run_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)
