"""idempotency_keys: the answer to each write request sent with an Idempotency-Key header

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("scope", sa.String(64), nullable=False),
        sa.Column("request_digest", sa.String(64), nullable=False),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.Column("run_id", sa.String(128), nullable=False),
        sa.Column("decision_id", sa.String(32), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("response", sa.Text(), nullable=False),
        sa.UniqueConstraint("scope", name="uq_idempotency_scope"),
    )


def downgrade() -> None:
    op.drop_table("idempotency_keys")
