"""SQLite CPU per audit record of the writer's transaction alone, on a store migrated to a given schema revision:
what the schema's indexes cost the audit writer (issue 32).

Each transaction is what the writer does on SQLite for a batch (:mod:`agentguard.server.writer`): ``BEGIN
IMMEDIATE``, one multi-row INSERT of ``--batch`` decision rows and one of their input rows, ``COMMIT`` (WAL,
``synchronous=FULL``: one fdatasync). The rows are shaped like the service's (sequential decision ids of one
process, ``seq`` and hex hashes, ``--runs`` runs drawn at random, input payloads of about 200 bytes). CPU is the
inserting thread's (user + system), split into the statements and the commit; a PASSIVE checkpoint every 500
transactions (the store's checkpointer) is not counted; the WAL frames (pages) the measured transactions wrote
are counted (``frames_per_record``: every page a transaction changed is one frame, written at its commit). Each
revision is measured in a fresh process per round, revisions alternating, so a busy machine weighs on both alike.

    python benchmarks/audit_sql_cost.py --revisions 0010,head --batch 8 --n 600 --rounds 3 \\
        --out benchmarks/results/audit_sql_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agentguard.server import schema
from agentguard.server.audit import MIGRATIONS_DIR


def _migrate(path: Path, revision: str) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
    engine.dispose()


def measure(variant: str, batch: int, n: int, runs: int, seed: int = 1) -> dict[str, Any]:
    """One round of ``variant``: ``REVISION[@SYNCHRONOUS[@PAGE_SIZE]]`` (``head@NORMAL``: no fsync at commit;
    ``head@FULL@2048``: a new file of 2 KiB pages)."""
    parts = variant.split("@")
    revision = parts[0]
    sync = parts[1] if len(parts) > 1 else "FULL"
    page = parts[2] if len(parts) > 2 else "4096"
    tmp = Path(tempfile.mkdtemp(prefix="agentguard-sqlcost-"))
    path = tmp / "audit.sqlite"
    with sqlite3.connect(path) as c:  # the page size of a new, empty file
        c.execute(f"PRAGMA page_size={int(page)}")
        c.execute("VACUUM")
    _migrate(path, revision)
    db = sqlite3.connect(path, isolation_level=None)
    for p in ("PRAGMA journal_mode=WAL", f"PRAGMA synchronous={sync.upper()}", "PRAGMA wal_autocheckpoint=0"):
        db.execute(p)
    indexes = sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND "
                                              "tbl_name IN ('decisions', 'inputs')"))
    dcols = [c.name for c in schema.decisions.columns if c.name != "id"]
    icols = [c.name for c in schema.inputs.columns if c.name != "id"]
    rng = random.Random(seed)
    names = [f"run-{rng.getrandbits(48):012x}" for _ in range(runs)]
    idx = dict.fromkeys(names, 0)
    seq = 0
    payload = json.dumps({"input": {"tool_call": {"name": "run_shell", "arguments": {"cmd": "ls -la /tmp"}}},
                          "state": {"halted": False, "budget": 12.5}, "pad": "x" * 80})

    def rows() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        nonlocal seq
        d: list[Any] = []
        i: list[Any] = []
        for _ in range(batch):
            seq += 1
            run, ts = rng.choice(names), time.time()
            did = f"0123456789abcdef{seq:016x}"
            row = {"decision_id": did, "ts": ts, "run_id": run, "kind": "check", "guard": "rules",
                   "input_digest": f"{rng.getrandbits(256):064x}", "decision": "ALLOW", "reason": "allowed by rule 3",
                   "numbers": '{"cost":1.5}', "guard_version": "v1", "principal": "token-1", "seq": seq,
                   "chain_hash": f"{rng.getrandbits(256):064x}", "run_hash": f"{rng.getrandbits(256):064x}",
                   "shadow": None}
            d.extend(row[c] for c in dcols)
            inp = {"run_id": run, "idx": idx[run], "kind": "check", "ts": ts, "decision_id": did, "payload": payload}
            idx[run] += 1
            i.extend(inp[c] for c in icols)
        return tuple(d), tuple(i)

    def marks(k: int) -> str:
        return ",".join(["(" + ",".join("?" * k) + ")"] * batch)

    dsql = f"INSERT INTO decisions ({', '.join(dcols)}) VALUES {marks(len(dcols))}"
    isql = f"INSERT INTO inputs ({', '.join(icols)}) VALUES {marks(len(icols))}"
    exec_s = commit_s = 0.0
    frames = 0  # WAL frames the measured transactions wrote: the frames in the log at each checkpoint
    for k in range(300 + n):  # 300 to warm up
        if k == 300:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        dp, ip = rows()
        t0 = time.thread_time()
        db.execute("BEGIN IMMEDIATE")
        db.execute(dsql, dp)
        db.execute(isql, ip)
        t1 = time.thread_time()
        db.execute("COMMIT")
        t2 = time.thread_time()
        if k >= 300:
            exec_s += t1 - t0
            commit_s += t2 - t1
        if k % 500 == 499:
            log = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
            frames += log if k >= 300 else 0
    frames += db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1] if (299 + n) % 500 != 499 else 0
    db.close()
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()
    per = n * batch
    return {"revision": variant, "indexes": indexes, "frames_per_record": round(frames / per, 2),
            "statements_us": round(exec_s / per * 1e6, 1),
            "commit_us": round(commit_s / per * 1e6, 1), "total_us": round((exec_s + commit_s) / per * 1e6, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--revisions", default="0010,head", help="schema revisions to compare, comma-separated; each "
                                                             "REVISION[@SYNCHRONOUS[@PAGE_SIZE]] (head@NORMAL)")
    ap.add_argument("--batch", type=int, default=8, help="records per transaction (the service's batches: ~7)")
    ap.add_argument("--n", type=int, default=600, help="measured transactions per round")
    ap.add_argument("--runs", type=int, default=64, help="runs the records are spread over")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--one", default="", help=argparse.SUPPRESS)  # a child round: print its JSON
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if a.one:
        print(json.dumps(measure(a.one, a.batch, a.n, a.runs)))
        return
    revisions = a.revisions.split(",")
    got: dict[str, list[dict[str, Any]]] = {r: [] for r in revisions}
    for _ in range(a.rounds):
        for rev in revisions:
            out = subprocess.run([sys.executable, __file__, "--one", rev, "--batch", str(a.batch), "--n", str(a.n),
                                  "--runs", str(a.runs)], capture_output=True, text=True, check=True)
            got[rev].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(json.dumps(got[rev][-1]), flush=True)
    res = {"benchmark": "SQLite CPU per audit record of the writer's transaction (BEGIN IMMEDIATE, multi-row INSERTs "
                        "of decisions and inputs, COMMIT, WAL synchronous=FULL) by schema revision",
           "command": "python " + " ".join([f"benchmarks/{Path(__file__).name}", *sys.argv[1:]]),
           "label": a.label, "batch": a.batch, "n": a.n, "runs": a.runs,
           "median_us_per_record": {rev: {k: statistics.median(r[k] for r in rs)
                                          for k in ("statements_us", "commit_us", "total_us",
                                                    "frames_per_record")}
                                    for rev, rs in got.items()},
           "indexes": {rev: rs[0]["indexes"] for rev, rs in got.items()}, "rounds": got,
           "loadavg_1_5_15": list(os.getloadavg()), "nproc": os.cpu_count(),
           "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(json.dumps(res["median_us_per_record"]))
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
