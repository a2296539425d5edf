"""trace_claims, trace_quota: the trace store's slots and each identity's trace bytes, shared by every replica

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "trace_claims",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("identity_key", sa.String(32), nullable=False),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.UniqueConstraint("key", name="uq_trace_claims_key"),
    )
    op.create_table(
        "trace_quota",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("identity_key", sa.String(32), nullable=False),
        sa.Column("used", sa.BigInteger(), nullable=False),
        sa.UniqueConstraint("identity_key", name="uq_trace_quota_identity"),
    )


def downgrade() -> None:
    op.drop_table("trace_quota")
    op.drop_table("trace_claims")
