"""Core catalog: datasets, dataset versions, systems, runs, checkpoints, result files.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.UniqueConstraint("name", name="uq_datasets_name"),
    )
    op.create_table(
        "dataset_versions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "dataset_id",
            sa.Integer(),
            sa.ForeignKey("datasets.id", ondelete="CASCADE", name="fk_dataset_versions_dataset"),
            nullable=False,
        ),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("format", sa.String(64), nullable=False),
        sa.Column("store_path", sa.Text(), nullable=False),
        sa.Column("source_path", sa.Text(), nullable=False),
        sa.Column("source_files", sa.JSON(), nullable=False),
        sa.Column("row_counts", sa.JSON(), nullable=False),
        sa.Column("warnings", sa.JSON(), nullable=False),
        sa.Column("info", sa.JSON(), nullable=False),
        sa.Column("code_version", sa.String(128), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.UniqueConstraint("dataset_id", "digest", name="uq_dataset_versions_digest"),
        sa.UniqueConstraint("dataset_id", "number", name="uq_dataset_versions_number"),
    )
    op.create_table(
        "systems",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "version_id",
            sa.Integer(),
            sa.ForeignKey("dataset_versions.id", ondelete="CASCADE", name="fk_systems_version"),
            nullable=False,
        ),
        sa.Column("group", sa.String(128), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("is_human", sa.Boolean(), nullable=False),
        sa.Column("segment_judgments", sa.Integer(), nullable=False),
        sa.Column("system_judgments", sa.Integer(), nullable=False),
        sa.Column("outputs", sa.Integer(), nullable=False),
        sa.UniqueConstraint("version_id", "group", "name", name="uq_systems_version_group_name"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("parameters", sa.JSON(), nullable=False),
        sa.Column("code_version", sa.String(128), nullable=False),
        sa.Column("started_at", TZ, nullable=False),
        sa.Column("finished_at", TZ, nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("summary", sa.JSON(), nullable=False),
    )
    op.create_index("ix_runs_kind_started", "runs", ["kind", "started_at"])
    op.create_table(
        "checkpoints",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("base_model", sa.String(256), nullable=True),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("parent_id", sa.Integer(), sa.ForeignKey("checkpoints.id", name="fk_checkpoints_parent")),
        sa.Column("created_at", TZ, nullable=False),
        sa.UniqueConstraint("digest", name="uq_checkpoints_digest"),
    )
    op.create_table(
        "result_files",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "run_id",
            sa.String(36),
            sa.ForeignKey("runs.id", ondelete="CASCADE", name="fk_result_files_run"),
            nullable=False,
        ),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.UniqueConstraint("path", name="uq_result_files_path"),
    )


def downgrade() -> None:
    op.drop_table("result_files")
    op.drop_table("checkpoints")
    op.drop_index("ix_runs_kind_started", table_name="runs")
    op.drop_table("runs")
    op.drop_table("systems")
    op.drop_table("dataset_versions")
    op.drop_table("datasets")
