"""Team scale: evaluation suites, the nightly ledger, regressions and watched checkpoint folders.

``suites`` holds named, versioned suite definitions (datasets pinned by version x levels x
statistics) with their content signature. ``suite_evaluations`` is the nightly ledger: one row per
(checkpoint digest, dataset version digest, suite signature), which is what makes the nightly
evaluation exactly-once. ``regressions`` records checkpoints significantly worse than the team's
best. ``watched_folders`` is the shared configuration of ``assay checkpoints watch``.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "suites",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("definition", sa.JSON(), nullable=False),
        sa.Column("signature", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("name", "version", name="uq_suites_name_version"),
    )
    op.create_table(
        "watched_folders",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("path", name="uq_watched_folders_path"),
    )
    op.create_table(
        "suite_evaluations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("checkpoint_digest", sa.String(64), nullable=False),
        sa.Column("dataset_digest", sa.String(64), nullable=False),
        sa.Column("dataset_version_id", sa.Integer(), sa.ForeignKey("dataset_versions.id"), nullable=False),
        sa.Column("suite_id", sa.Integer(), sa.ForeignKey("suites.id"), nullable=False),
        sa.Column("suite_signature", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("flow_run_id", sa.String(64), nullable=True),
        sa.Column("score_run_id", sa.String(36), nullable=True),
        sa.Column("evaluate_run_id", sa.String(36), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.UniqueConstraint("checkpoint_digest", "dataset_digest", "suite_signature",
                            name="uq_suite_evaluations_key"),
    )
    op.create_index("ix_suite_evaluations_status", "suite_evaluations", ["status"])
    op.create_table(
        "regressions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("checkpoint_digest", sa.String(64), nullable=False),
        sa.Column("baseline_digest", sa.String(64), nullable=False),
        sa.Column("suite_signature", sa.String(64), nullable=False),
        sa.Column("dataset_version_id", sa.Integer(), sa.ForeignKey("dataset_versions.id"), nullable=False),
        sa.Column("level", sa.String(16), nullable=False),
        sa.Column("group", sa.String(128), nullable=False),
        sa.Column("aspect", sa.String(64), nullable=False),
        sa.Column("statistic", sa.String(32), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("baseline_value", sa.Float(), nullable=False),
        sa.Column("p_value", sa.Float(), nullable=False),
        sa.Column("test", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_regressions_checkpoint", "regressions", ["checkpoint_digest"])


def downgrade() -> None:
    op.drop_index("ix_regressions_checkpoint", table_name="regressions")
    op.drop_table("regressions")
    op.drop_index("ix_suite_evaluations_status", table_name="suite_evaluations")
    op.drop_table("suite_evaluations")
    op.drop_table("watched_folders")
    op.drop_table("suites")
