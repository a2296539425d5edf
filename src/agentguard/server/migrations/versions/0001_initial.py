"""initial audit schema: decisions and steps

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _pk() -> sa.types.TypeEngine:
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "decisions",
        sa.Column("id", _pk(), primary_key=True, autoincrement=True),
        sa.Column("decision_id", sa.String(32), nullable=False, unique=True),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.Column("run_id", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("guard", sa.String(128), nullable=False),
        sa.Column("input_digest", sa.String(64), nullable=False),
        sa.Column("decision", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("numbers", sa.Text(), nullable=False),
    )
    op.create_index("ix_decisions_run_ts", "decisions", ["run_id", "ts"])
    op.create_index("ix_decisions_ts", "decisions", ["ts"])
    op.create_table(
        "steps",
        sa.Column("id", _pk(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(128), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.Column("decision_id", sa.String(32), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.UniqueConstraint("run_id", "idx", name="uq_steps_run_idx"),
    )


def downgrade() -> None:
    op.drop_table("steps")
    op.drop_index("ix_decisions_ts", table_name="decisions")
    op.drop_index("ix_decisions_run_ts", table_name="decisions")
    op.drop_table("decisions")
