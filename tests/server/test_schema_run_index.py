"""Migration 0011 (issue 32): ``decisions`` keeps one index by run, ``(run_id, seq, ts)``, in place of
``(run_id, ts)`` and ``(run_id, seq)`` (each index costs the audit writer every insert). A store written before it
is upgraded in place (its chain still verifies, the writer links on from its tail), goes back down with the
downgrade, and every query by run plans on the new index (SQLite: none falls back to a scan of the table)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from agentguard.server import chain
from agentguard.server.audit import MIGRATIONS_DIR, AuditRecord, AuditStore

pytest.importorskip("alembic")


def to_revision(url: str, revision: str, *, down: bool = False) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        (command.downgrade if down else command.upgrade)(cfg, revision)
    engine.dispose()


def indexes(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        return {ix["name"] for ix in sa.inspect(engine).get_indexes("decisions")}
    finally:
        engine.dispose()


def record(run: str, i: int) -> AuditRecord:
    return AuditRecord(run_id=run, time=1000.0 + i, decision="ALLOW", reason="ok", numbers={"i": i}, guard="g")


def test_a_store_written_before_0011_is_upgraded_and_its_chain_goes_on(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.sqlite'}"
    to_revision(url, "0010")
    assert {"ix_decisions_run_ts", "ix_decisions_run_seq"} <= indexes(url)
    store = AuditStore(url, run_migrations=False)  # a writer of the 0010 schema
    try:
        for i in range(6):
            store.record(record(f"r{i % 2}", i))
    finally:
        store.close()
    store = AuditStore(url)  # upgrades
    try:
        for i in range(6, 10):
            store.record(record(f"r{i % 2}", i))
        assert len(store.decisions(run_id="r1", limit=100)) == 5
    finally:
        store.close()
    got = indexes(url)
    assert "ix_decisions_run_seq_ts" in got and not {"ix_decisions_run_ts", "ix_decisions_run_seq"} & got
    engine = sa.create_engine(url)
    report = chain.verify(engine)
    engine.dispose()
    assert report.ok and report.chained == 10, report.problems
    to_revision(url, "0010", down=True)
    got = indexes(url)
    assert {"ix_decisions_run_ts", "ix_decisions_run_seq"} <= got and "ix_decisions_run_seq_ts" not in got


RUN_QUERIES = {
    "recent runs": "SELECT run_id, min(ts), max(ts), count(*) FROM decisions WHERE ts >= 0 GROUP BY run_id "
                   "ORDER BY max(ts) DESC LIMIT 50",
    "counts of runs": "SELECT run_id, decision, count(*) FROM decisions WHERE run_id IN ('r1', 'r2') "
                      "GROUP BY run_id, decision",
    "decisions of a run": "SELECT * FROM decisions WHERE id > 0 AND run_id = 'r1' ORDER BY id DESC LIMIT 200",
    "principals of a run": "SELECT DISTINCT principal FROM decisions WHERE run_id = 'r1' AND kind != 'approval'",
    "count of a run": "SELECT count(*) FROM decisions WHERE run_id = 'r1' AND kind = 'check'",
    "heads of runs": "SELECT run_id, run_hash FROM decisions WHERE seq IN (SELECT max(seq) FROM decisions "
                     "WHERE run_id IN ('r1', 'r2') AND seq IS NOT NULL GROUP BY run_id)",
    "a run's chain": "SELECT id, chain_hash FROM decisions WHERE seq IS NOT NULL AND run_id = 'r1' AND seq > 0 "
                     "ORDER BY seq LIMIT 5000",
}


@pytest.mark.parametrize("name", sorted(RUN_QUERIES))
def test_queries_by_run_use_the_run_index(tmp_path: Path, name: str) -> None:
    import sqlite3

    store = AuditStore(f"sqlite:///{tmp_path / 'q.sqlite'}")
    store.close()
    with sqlite3.connect(tmp_path / "q.sqlite") as db:
        rows = [(f"{i:032x}", time.time() + i, f"r{i % 7}", "check", "g", "a" * 64, "ALLOW", "", "{}", i + 1)
                for i in range(500)]
        db.executemany("INSERT INTO decisions (decision_id, ts, run_id, kind, guard, input_digest, decision, reason, "
                       "numbers, seq) VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
        plan: Any = " | ".join(r[3] for r in db.execute("EXPLAIN QUERY PLAN " + RUN_QUERIES[name]))
    assert "ix_decisions_run_seq_ts" in plan, plan
    assert not [p for p in plan.split(" | ") if p.startswith("SCAN") and "COVERING INDEX" not in p], plan
