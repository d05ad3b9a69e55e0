"""The checkpoint outbox: an announcement owed for every registered checkpoint.

``checkpoint_outbox`` holds one row per registered checkpoint, written in the same transaction as
its ``checkpoints`` row, until the ``assay.checkpoint.registered`` event has reached the team's
Prefect server (``delivered_at``, ``delivered_by = 'event'``) or a nightly sweep has taken the
checkpoint up itself (``delivered_by = 'sweep'``). A failed delivery keeps the row owed, with the
attempt count and the last error. Checkpoints registered before this revision owe nothing.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "checkpoint_outbox",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("checkpoint_digest", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("delivered_by", sa.String(16), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.UniqueConstraint("checkpoint_digest", name="uq_checkpoint_outbox_digest"),
    )
    op.create_index("ix_checkpoint_outbox_owed", "checkpoint_outbox", ["delivered_at"])


def downgrade() -> None:
    op.drop_index("ix_checkpoint_outbox_owed", table_name="checkpoint_outbox")
    op.drop_table("checkpoint_outbox")
