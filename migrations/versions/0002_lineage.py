"""Lineage: derived dataset versions name their parent; runs name their parent run and flow run.

Derived versions (quality-drift samples) and reruns need these links. Added in batch mode so the
same migration alters the tables on SQLite and PostgreSQL.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dataset_versions") as batch:
        batch.add_column(sa.Column("parent_version_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("derivation", sa.JSON(), nullable=True))
        batch.create_foreign_key(
            "fk_dataset_versions_parent", "dataset_versions", ["parent_version_id"], ["id"]
        )
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("parent_run_id", sa.String(36), nullable=True))
        batch.add_column(sa.Column("flow_run_id", sa.String(64), nullable=True))
        batch.create_foreign_key("fk_runs_parent", "runs", ["parent_run_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_constraint("fk_runs_parent", type_="foreignkey")
        batch.drop_column("flow_run_id")
        batch.drop_column("parent_run_id")
    with op.batch_alter_table("dataset_versions") as batch:
        batch.drop_constraint("fk_dataset_versions_parent", type_="foreignkey")
        batch.drop_column("derivation")
        batch.drop_column("parent_version_id")
