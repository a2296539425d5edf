"""The chain writer's in-memory view (server/writer.py): two writers (replicas) on one database keep one
chain that verifies, a writer with the store to itself does not read it per batch, and a stale view (a
writer killed between its commit and its stamp) is caught by the unique ``seq`` and linked again."""

from __future__ import annotations

import os
import threading
import time

import pytest

pytest.importorskip("cryptography")

from agentguard.core.audit import AuditRecord  # noqa: E402
from agentguard.server.audit import AuditStore  # noqa: E402
from agentguard.server.chain import Signer, verify  # noqa: E402

EVERY = 7


def _rec(run: str, i: int) -> AuditRecord:
    return AuditRecord(time=time.time(), run_id=run, decision="ALLOW", reason=f"r{i}", guard="g",
                       numbers={"i": float(i)}, kind="check", input_digest=f"{i:064x}")


def _stores(url, tmp_path, n=2):
    signer = Signer.load_or_create(tmp_path / "k.pem")
    return [AuditStore(url, chain=True, signer=signer, checkpoint_every=EVERY) for _ in range(n)]


def test_two_writers_keep_one_chain(store_url, tmp_path):
    a, b = _stores(store_url, tmp_path)
    runs = [f"run-{k}" for k in range(6)]  # both replicas write every run
    errors = []

    def write(store, tag):
        try:
            for i in range(60):
                store.record(_rec(runs[i % len(runs)], i * 10 + tag))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(s, t)) for s, t in ((a, 1), (a, 2), (b, 3), (b, 4))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    a.close(), b.close()
    s = AuditStore(store_url, chain=True)
    rep = verify(s.engine, checkpoint_every=EVERY)
    s.close()
    assert rep.ok, rep.problems[:5]
    assert rep.chained == rep.records == 240 and rep.last_seq == 240 and rep.checkpoints == 240 // EVERY


def test_a_writer_alone_reads_the_store_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.sqlite'}"
    [a] = _stores(url, tmp_path, 1)
    for i in range(50):
        a.record(_rec(f"run-{i % 3}", i))
    w = a._writer
    # one tail read at start, one lookup of the three (new) runs; none per batch after that
    assert w.batches == 50 and w.store_reads <= 4, w.store_reads
    a.close()


def test_a_stale_view_is_linked_again(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.sqlite'}"
    a, b = _stores(url, tmp_path)
    for i in range(5):
        a.record(_rec("shared", i))
    stamp = os.pread(a._writer._lockfile.fileno(), 96, 0)
    for i in range(5, 9):
        b.record(_rec("shared", i))
    # b "was killed" after its commits and before its stamps: the stamp still names a's tail
    os.pwrite(b._writer._lockfile.fileno(), stamp, 0)
    a.record(_rec("shared", 9))  # a's view is stale: seq 6 is taken, so it re-reads and links at 10
    a.close(), b.close()
    s = AuditStore(url, chain=True)
    rep = verify(s.engine, checkpoint_every=EVERY)
    s.close()
    assert rep.ok, rep.problems[:5]
    assert rep.chained == 10 and rep.last_seq == 10


def test_a_batch_spread_over_several_insert_statements_lands_whole(tmp_path, monkeypatch):
    """On SQLite a batch's rows of one table go in multi-row INSERTs of at most ``_SQLITE_VARS`` parameters:
    with a limit of a few rows per statement, a batch of many records lands whole, each row with its own
    values, in one chain that verifies."""
    import asyncio

    from agentguard.server import writer

    monkeypatch.setattr(writer, "_SQLITE_VARS", 40)  # two or three rows of a table per statement
    url = f"sqlite:///{tmp_path / 'm.sqlite'}"
    [a] = _stores(url, tmp_path, 1)
    recs = [_rec(f"run-{i % 5}", i) for i in range(90)]

    async def burst():
        await asyncio.gather(*(a.arecord(r, inp={"idx": i // 5, "kind": "check", "payload": {"i": i}})
                               for i, r in enumerate(recs)))

    asyncio.run(burst())
    assert a.stats["batches"] < len(recs)  # records did share batches (and so statements)
    got = {d["reason"]: d for d in a.decisions(limit=1000)}
    assert len(got) == 90 and all(got[r.reason]["run_id"] == r.run_id and got[r.reason]["numbers"] == r.numbers
                                  for r in recs)
    assert [x["payload"] for x in a.run_inputs("run-3")] == [{"i": i} for i in range(3, 90, 5)]
    a.close()
    s = AuditStore(url, chain=True)
    rep = verify(s.engine, checkpoint_every=EVERY)
    s.close()
    assert rep.ok and rep.chained == 90, rep.problems[:5]


def test_the_tail_stamp_is_the_lock_files_first_bytes(tmp_path) -> None:
    """The stamp goes through a mapping of the lock file: what pread of another process sees, and a tail whose stamp
    would not fit is stamped as matching none (the next writer reads the store)."""
    store = AuditStore(f"sqlite:///{tmp_path / 'a.sqlite'}")
    try:
        store.record(AuditRecord(time=1.0, run_id="r", decision="ALLOW", reason="ok", guard="g"))
        w = store._writer
        fd = w._lockfile.fileno()
        assert os.pread(fd, 96, 0) == w._stamp_of(w._tail)
        assert not w._others_wrote()
        os.pwrite(fd, b"x" * 96, 0)  # another process's stamp
        assert w._others_wrote()
        w._linked(((10**16, "f" * 64), {}))
        assert os.pread(fd, 96, 0) == bytes(96) and w._others_wrote()
    finally:
        store.close()
