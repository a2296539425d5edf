"""The audit-store schema (SQLAlchemy Core), the same on SQLite and PostgreSQL.

The Alembic migrations in ``agentguard/server/migrations`` create exactly these tables; a test
compares the migrated database against this metadata so the two cannot drift apart.

``decisions``: one row per verdict the service returned (time, run id, endpoint kind, guard, SHA-256
digest of the canonical input, decision, reason, numbers as JSON, version of the guard files in
force). ``steps``: the steps fed to
``/v1/runs/{run_id}/steps`` (their JSON), so the dashboard can draw a run. ``inputs`` (migration 0003):
every decided input of a run in one sequence (``idx`` 0, 1, 2, ... over checks, steps, signals and
approvals), with the run's enforcement state after it, so any replica (or a process that had to let
the run go) rebuilds the run exactly; ``(run_id, idx)`` is unique, so two replicas can never both
decide the run's next input from the same state (the loser's write fails and it rebuilds): signals
and checks are serialised per run exactly like steps. ``idempotency_keys`` (migration 0007): the
answer to each write request sent with an ``Idempotency-Key`` header (``scope``: SHA-256 of the
caller's identity and the key, unique; ``request_digest``: SHA-256 of the path and canonical body),
written in the decision's own transaction, so a retried request is answered from here, never decided
twice (:mod:`agentguard.server.idempotency`). ``trace_claims`` and ``trace_quota`` (migration 0010): the trace
store's slots and each identity's trace bytes, shared by every replica (:mod:`agentguard.server.trace_ledger`).
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = ["audit_checkpoints", "decisions", "idempotency_keys", "inputs", "metadata", "steps", "trace_claims",
           "trace_quota", "webhook_dead_letters"]

metadata = sa.MetaData()

decisions = sa.Table(
    "decisions",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("decision_id", sa.String(32), nullable=False, unique=True),
    sa.Column("ts", sa.Float(), nullable=False),
    sa.Column("run_id", sa.String(128), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("guard", sa.String(128), nullable=False),
    sa.Column("input_digest", sa.String(64), nullable=False),
    sa.Column("decision", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text(), nullable=False),
    sa.Column("numbers", sa.Text(), nullable=False),
    sa.Column("guard_version", sa.String(64), nullable=True),  # migration 0002
    sa.Column("principal", sa.String(100), nullable=True),  # migration 0004: who asked (or answered)
    sa.Column("seq", sa.BigInteger(), nullable=True),  # migration 0005: the hash chain (.chain)
    sa.Column("chain_hash", sa.String(64), nullable=True),
    sa.Column("run_hash", sa.String(64), nullable=True),
    sa.Column("shadow", sa.Text(), nullable=True),  # migration 0009: would-be verdicts of shadow guards (JSON)
    sa.Index("ix_decisions_ts", "ts"),
    sa.Index("ux_decisions_seq", "seq", unique=True),
    # migration 0011: one index by run (was (run_id, ts) and (run_id, seq)): each index costs every insert
    sa.Index("ix_decisions_run_seq_ts", "run_id", "seq", "ts"),
)

audit_checkpoints = sa.Table(  # migration 0005: signed (seq, chain_hash) checkpoints (.chain)
    "audit_checkpoints",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("seq", sa.BigInteger(), nullable=False, unique=True),
    sa.Column("chain_hash", sa.String(64), nullable=False),
    sa.Column("ts", sa.Float(), nullable=False),
    sa.Column("key_id", sa.String(32), nullable=False),
    sa.Column("public_key", sa.String(64), nullable=False),
    sa.Column("signature", sa.String(128), nullable=False),
)

steps = sa.Table(
    "steps",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(128), nullable=False),
    sa.Column("idx", sa.Integer(), nullable=False),
    sa.Column("ts", sa.Float(), nullable=False),
    sa.Column("decision_id", sa.String(32), nullable=False),
    sa.Column("payload", sa.Text(), nullable=False),
    sa.UniqueConstraint("run_id", "idx", name="uq_steps_run_idx"),
)

inputs = sa.Table(
    "inputs",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(128), nullable=False),
    sa.Column("idx", sa.Integer(), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("ts", sa.Float(), nullable=False),
    sa.Column("decision_id", sa.String(32), nullable=False),
    sa.Column("payload", sa.Text(), nullable=False),
    sa.UniqueConstraint("run_id", "idx", name="uq_inputs_run_idx"),
)

webhook_dead_letters = sa.Table(  # migration 0006: escalation notifications given up on (.webhook)
    "webhook_dead_letters",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("ts", sa.Float(), nullable=False),
    sa.Column("delivery", sa.String(64), nullable=False),
    sa.Column("decision_id", sa.String(32), nullable=False),
    sa.Column("url", sa.String(500), nullable=False),
    sa.Column("attempts", sa.Integer(), nullable=False),
    sa.Column("error", sa.Text(), nullable=False),
    sa.Column("payload", sa.Text(), nullable=False),
)

idempotency_keys = sa.Table(  # migration 0007: answers of requests sent with an Idempotency-Key (.idempotency)
    "idempotency_keys",
    metadata,
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

trace_claims = sa.Table(  # migration 0010: the trace store's claimed slots (.trace_ledger)
    "trace_claims",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("key", sa.String(64), nullable=False),
    sa.Column("identity_key", sa.String(32), nullable=False),
    sa.Column("ts", sa.Float(), nullable=False),
    sa.UniqueConstraint("key", name="uq_trace_claims_key"),
)

trace_quota = sa.Table(  # migration 0010: the bytes each identity's kept trace batches cost (.trace_ledger)
    "trace_quota",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("identity_key", sa.String(32), nullable=False),
    sa.Column("used", sa.BigInteger(), nullable=False),
    sa.UniqueConstraint("identity_key", name="uq_trace_quota_identity"),
)
