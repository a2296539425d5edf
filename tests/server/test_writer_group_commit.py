"""The audit writer's group commit that grows under load (:meth:`agentguard.server.writer._Writer._gather`): what a
batch takes from the queue, when the writer waits for more and that it never waits for an idle request."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from agentguard.core.audit import AuditRecord
from agentguard.server.audit import AuditStore
from agentguard.server.writer import _GROW_FROM, _delay_from_env, _Writer


def _writer(delay: float, max_batch: int = 64) -> _Writer:
    return _Writer(sa.create_engine("sqlite://"), max_batch, commit_delay_s=delay)


def test_idle_or_light_load_never_waits() -> None:
    w = _writer(delay=3600.0)  # a wait would hang the test
    batch: list = [("a", None)]
    w._gather(batch, busy=False)
    w.last_batch = _GROW_FROM
    w._gather(batch, busy=False)  # the previous batch ended long ago
    w.last_batch = _GROW_FROM - 1
    w._gather(batch, busy=True)  # the previous batch was small
    assert batch == [("a", None)]


def test_takes_what_waits_up_to_max_batch() -> None:
    w = _writer(delay=0.0, max_batch=5)
    for i in range(8):
        w.q.put(i)
    batch: list = [-1]
    w._gather(batch, busy=True)
    assert batch == [-1, 0, 1, 2, 3]
    assert w.q.get_nowait() == 4


def test_no_sleep_once_the_batch_holds_twice_the_previous() -> None:
    w = _writer(delay=3600.0)  # a sleep would hang the test
    w.last_batch = _GROW_FROM
    for i in range(1, 2 * _GROW_FROM):
        w.q.put(i)
    batch: list = [0]
    w._gather(batch, busy=True)
    assert batch == list(range(2 * _GROW_FROM))


def test_under_load_sleeps_once_then_takes_what_waits() -> None:
    w = _writer(delay=0.001)
    w.last_batch = 8
    batch: list = [0]
    w._gather(batch, busy=True)  # nothing comes: returns after the sleep with what it had
    assert batch == [0]
    w.q.put(None)  # the stop sentinel is left in the queue for run()
    w._gather(batch, busy=True)
    assert batch == [0] and w.q.get_nowait() is None


@pytest.mark.parametrize(("raw", "want"), [(None, 1e-3), ("0", 0.0), ("250", 2.5e-4), ("-5", 0.0), ("junk", 1e-3),
                                           ("nan", 1e-3), ("1e12", 0.1)])
def test_delay_from_env(monkeypatch: pytest.MonkeyPatch, raw: str | None, want: float) -> None:
    if raw is None:
        monkeypatch.delenv("AGENTGUARD_AUDIT_COMMIT_DELAY_US", raising=False)
    else:
        monkeypatch.setenv("AGENTGUARD_AUDIT_COMMIT_DELAY_US", raw)
    assert _delay_from_env() == pytest.approx(want)


def test_store_with_delay_commits_every_record(tmp_path) -> None:
    store = AuditStore(f"sqlite:///{tmp_path / 'a.sqlite'}")
    store._writer.commit_delay_s = 0.002

    async def many() -> None:
        recs = [AuditRecord(time=1.0 + i, run_id=f"r{i % 5}", call={"name": "t", "arguments": {}},
                            decision="ALLOW", reason="ok", guard="g") for i in range(200)]
        await asyncio.gather(*[store.arecord(r) for r in recs])

    try:
        asyncio.run(many())
        assert store.count() == 200
        assert store.stats["records"] == 200
    finally:
        store.close()


def test_the_tail_stamp_is_the_lock_files_first_bytes(tmp_path) -> None:
    """The stamp goes through a mapping of the lock file: what pread of another process sees, and a tail whose stamp
    would not fit is stamped as matching none (the next writer reads the store)."""
    import os

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
