"""decisions: one index by run, ``(run_id, seq, ts)``, in place of ``(run_id, ts)`` and ``(run_id, seq)``

Every insert pays each index of ``decisions``, and the two led by ``run_id`` cost the most: a batch's records of
different runs land on different pages of each, each page one more WAL frame to write at the commit (issue 32:
the audit writer's CPU per record). Every query by run is served by the one index as it was by one of the two
(the run's records by ``seq``, the run's newest ``seq`` for the chain's heads, a run's decisions or principals),
and the dashboard's runs by time scan it as they scanned ``(run_id, ts)``, covering (``ts`` is in it).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_decisions_run_seq_ts", "decisions", ["run_id", "seq", "ts"])
    op.drop_index("ix_decisions_run_seq", table_name="decisions")
    op.drop_index("ix_decisions_run_ts", table_name="decisions")


def downgrade() -> None:
    op.create_index("ix_decisions_run_ts", "decisions", ["run_id", "ts"])
    op.create_index("ix_decisions_run_seq", "decisions", ["run_id", "seq"])
    op.drop_index("ix_decisions_run_seq_ts", table_name="decisions")
