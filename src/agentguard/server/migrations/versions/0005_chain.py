"""the tamper-evident chain: decisions.seq / chain_hash / run_hash, and signed audit_checkpoints

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.add_column(sa.Column("seq", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("chain_hash", sa.String(64), nullable=True))
        batch.add_column(sa.Column("run_hash", sa.String(64), nullable=True))
    op.create_index("ux_decisions_seq", "decisions", ["seq"], unique=True)
    op.create_index("ix_decisions_run_seq", "decisions", ["run_id", "seq"])
    op.create_table(
        "audit_checkpoints",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("seq", sa.BigInteger(), nullable=False, unique=True),
        sa.Column("chain_hash", sa.String(64), nullable=False),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("public_key", sa.String(64), nullable=False),
        sa.Column("signature", sa.String(128), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("audit_checkpoints")
    op.drop_index("ix_decisions_run_seq", table_name="decisions")
    op.drop_index("ux_decisions_seq", table_name="decisions")
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("run_hash")
        batch.drop_column("chain_hash")
        batch.drop_column("seq")
