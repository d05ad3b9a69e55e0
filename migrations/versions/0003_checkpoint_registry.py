"""Checkpoint registry: a learned-metric checkpoint's lineage, the run that made it, unique names.

A checkpoint is registered once per content digest. Its name is unique (``--checkpoint NAME``
resolves it); ``lineage`` holds what made it (operation, parent digest, data versions and digests,
hyperparameters, seed, best step, validation curve) and ``heads`` the heads it carries.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch:
        batch.add_column(sa.Column("run_id", sa.String(36), nullable=True))
        batch.add_column(sa.Column("lineage", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("heads", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("code_version", sa.String(128), nullable=True))
        batch.add_column(sa.Column("size_bytes", sa.BigInteger(), nullable=True))
        batch.create_foreign_key("fk_checkpoints_run", "runs", ["run_id"], ["id"])
        batch.create_unique_constraint("uq_checkpoints_name", ["name"])


def downgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch:
        batch.drop_constraint("uq_checkpoints_name", type_="unique")
        batch.drop_constraint("fk_checkpoints_run", type_="foreignkey")
        batch.drop_column("size_bytes")
        batch.drop_column("code_version")
        batch.drop_column("heads")
        batch.drop_column("lineage")
        batch.drop_column("run_id")
