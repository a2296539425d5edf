"""The tamper-evident audit log (issue 28): records written by the real service are hash-chained and
checkpointed with Ed25519; ``agentguard audit verify`` (the command, in process) passes the intact log
and catches a deleted, inserted, reordered or edited record, a rewritten suffix, and a removed checkpoint,
on SQLite and PostgreSQL. Each tamper is done as a database holder would: plain SQL on the tables."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("cryptography")
import sqlalchemy as sa  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from agentguard.cli import app as cli  # noqa: E402
from agentguard.server.chain import chain_hash, record_hash, run_hash, verify_run_export  # noqa: E402

TOKEN = "chain-token-123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EVERY = 5
N = 23  # records: checkpoints at 5, 10, 15, 20; 3 unsigned at the tail


@pytest.fixture()
def log(tmp_path, store_url):
    """A store holding N chained decisions of 3 runs, written by the service; (url, key file)."""
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    s = ServerSettings(token=TOKEN, db_url=store_url, state_dir=str(tmp_path), checkpoint_every=EVERY)
    app = create_app(s)
    with TestClient(app) as c:
        for i in range(N):
            name = ("read_file", "rent_car", "run_shell")[i % 3]
            r = c.post("/v1/check", headers=AUTH, json={"run_id": f"run-{i % 3}", "tool_call": {"name": name,
                                                                                               "arguments": {"i": i}}})
            assert r.status_code == 200, r.text
    return store_url, tmp_path / "audit_ed25519.pub.pem"


def audit_verify(url, key=None, *extra):
    args = ["audit", "verify", "--db", url, "--json", "--checkpoint-every", str(EVERY), *extra]
    if key is not None:
        args += ["--public-key", str(key)]
    res = CliRunner().invoke(cli, args)
    return res.exit_code, json.loads(res.output) if res.output.strip().startswith("{") else res.output


def sql(url, stmt, **kw):
    eng = sa.create_engine(url)
    with eng.begin() as c:
        out = c.execute(sa.text(stmt), kw)
        rows = out.fetchall() if out.returns_rows else None
    eng.dispose()
    return rows


def test_the_intact_log_verifies(log):
    url, key = log
    code, rep = audit_verify(url, key)
    assert code == 0, rep
    assert rep["chained"] == N and rep["last_seq"] == N and rep["checkpoints"] == N // EVERY
    assert rep["signatures_checked"] == N // EVERY and rep["records_per_s"] > 0


def test_a_deleted_record_is_caught(log):
    url, key = log
    sql(url, "DELETE FROM decisions WHERE seq = 12")
    code, rep = audit_verify(url, key)
    assert code == 1 and any("seq 13 follows seq 11" in p for p in rep["problems"]), rep


def test_a_deleted_tail_record_before_a_checkpoint_is_caught(log):
    url, key = log
    sql(url, "DELETE FROM decisions WHERE seq >= 20")  # the checkpoint at 20 outlives its record
    code, rep = audit_verify(url, key)
    assert code == 1 and any("past the last record" in p for p in rep["problems"]), rep


def test_an_inserted_record_is_caught(log):
    url, key = log
    # a forged ALLOW slipped in as seq 8 (the later records moved up one to make room)
    sql(url, "UPDATE decisions SET seq = seq + 1000 WHERE seq >= 8")
    sql(url, "UPDATE decisions SET seq = seq - 999 WHERE seq >= 1008")
    row = sql(url, "SELECT decision_id, ts, run_id, kind, guard, input_digest, numbers, chain_hash FROM decisions "
                   "WHERE seq = 7")[0]
    sql(url, "INSERT INTO decisions (decision_id, ts, run_id, kind, guard, input_digest, decision, reason, numbers, "
             "seq, chain_hash, run_hash) VALUES ('forged0000000000', :ts, :run, 'check', 'rules', :dig, 'ALLOW', "
             "'fine', '{}', 8, :h, :h)", ts=row[1] + 0.001, run=row[2], dig=row[5], h=row[7])
    code, rep = audit_verify(url, key)
    assert code == 1 and any("seq 8 " in p and "chain hash" in p for p in rep["problems"]), rep


def test_an_inserted_unchained_record_is_caught(log):
    url, key = log
    sql(url, "INSERT INTO decisions (decision_id, ts, run_id, kind, guard, input_digest, decision, reason, numbers) "
             "VALUES ('forged0000000001', 1.0, 'run-0', 'check', 'rules', :d, 'ALLOW', 'fine', '{}')", d="0" * 64)
    code, rep = audit_verify(url, key)
    assert code == 1 and any("without a chain position" in p for p in rep["problems"]), rep


def test_reordered_records_are_caught(log):
    url, key = log
    sql(url, "UPDATE decisions SET seq = -1 WHERE seq = 3")
    sql(url, "UPDATE decisions SET seq = 3 WHERE seq = 4")
    sql(url, "UPDATE decisions SET seq = 4 WHERE seq = -1")
    code, rep = audit_verify(url, key)
    assert code == 1 and any("seq 3 " in p for p in rep["problems"]), rep


def test_an_edited_record_is_caught(log):
    url, key = log
    sql(url, "UPDATE decisions SET decision = 'ALLOW', reason = 'fine' WHERE seq = 9")
    code, rep = audit_verify(url, key)
    assert code == 1 and any(p.startswith("seq 9 ") for p in rep["problems"]), rep


def test_a_rewritten_suffix_with_fresh_hashes_is_caught_by_the_signed_checkpoint(log):
    """The attacker knows the hash rule but not the key: edit seq 7 and recompute every later hash."""
    url, key = log
    sql(url, "UPDATE decisions SET decision = 'ALLOW', reason = 'fine' WHERE seq = 7")
    cols = "decision_id, ts, run_id, kind, guard, input_digest, decision, reason, numbers, guard_version, principal, seq"
    rows = [dict(zip([c.strip() for c in cols.split(",")], r))
            for r in sql(url, f"SELECT {cols} FROM decisions ORDER BY seq")]
    prev, heads = "0" * 64, {}
    for r in rows:
        rec = record_hash(r)
        prev = chain_hash(r["seq"], prev, rec)
        heads[r["run_id"]] = run_hash(heads.get(r["run_id"], "0" * 64), rec)
        sql(url, "UPDATE decisions SET chain_hash = :c, run_hash = :r WHERE seq = :s", c=prev, r=heads[r["run_id"]],
            s=r["seq"])
    code, rep = audit_verify(url, key)
    assert code == 1 and any("checkpoint at seq 10 signs another chain hash" in p for p in rep["problems"]), rep
    # ... and re-signing needs the private key: a forged signature is refused
    sql(url, "UPDATE audit_checkpoints SET chain_hash = (SELECT chain_hash FROM decisions WHERE seq = 10) WHERE seq = 10")
    code, rep = audit_verify(url, key)
    assert code == 1 and any("checkpoint at seq 10: bad signature" in p for p in rep["problems"]), rep


def test_a_removed_checkpoint_and_a_foreign_key_are_caught(log, tmp_path):
    url, key = log
    sql(url, "DELETE FROM audit_checkpoints WHERE seq = 15")
    code, rep = audit_verify(url, key)
    assert code == 1 and any("checkpoint at seq 15 missing" in p for p in rep["problems"]), rep
    from agentguard.server.chain import Signer

    Signer.load_or_create(tmp_path / "other.pem")  # a key the verifier does not trust
    code, rep = audit_verify(url, tmp_path / "other.pub.pem")
    assert code == 1 and any("not a trusted key" in p for p in rep["problems"]), rep


def test_a_run_exports_with_its_proof(log):
    url, _key = log
    res = CliRunner().invoke(cli, ["audit", "export", "--db", url, "--run", "run-1"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert len(doc["records"]) == len(range(1, N, 3))
    assert doc["signed"] is False and doc["checkpoints"] == []  # its last record (seq 23) is past the last checkpoint
    assert verify_run_export(doc) == []
    doc["records"][2]["decision"] = "ALLOW" if doc["records"][2]["decision"] != "ALLOW" else "REJECT"
    assert verify_run_export(doc)  # an edited export is caught without the database
