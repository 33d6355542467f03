"""task leases: owner, expiry and an attempt limit per task; whether its vectors are flushed

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 09:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_owner", sa.String(length=128), nullable=True))
        batch_op.add_column(
            sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(sa.Column("max_attempts", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("vectors_flushed", sa.Boolean(), server_default=sa.true(), nullable=False)
        )
        batch_op.create_index(
            "ix_tasks_ns_status_lease",
            ["plugin_namespace", "status", "lease_expires_at"],
            unique=False,
        )
    # Tasks left queued or processing by a version without leases are stranded: give them a
    # lease that has already expired, so the next start re-queues them.
    op.execute(
        "UPDATE tasks SET lease_expires_at = updated_at WHERE status IN ('queued', 'processing')"
    )


def downgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index("ix_tasks_ns_status_lease")
        batch_op.drop_column("vectors_flushed")
        batch_op.drop_column("max_attempts")
        batch_op.drop_column("lease_expires_at")
        batch_op.drop_column("lease_owner")
