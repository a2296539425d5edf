"""The audit writer's group commit that grows under load (:meth:`agentguard.server.writer._Writer._gather`): what a
batch takes from the queue, when the writer waits for more and that it never waits for an idle request."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa

from agentguard.core.audit import AuditRecord
from agentguard.server.audit import AuditStore
from agentguard.server.writer import _GROW_FROM, _Writer


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


def test_under_load_stops_at_twice_the_previous_batch() -> None:
    w = _writer(delay=3600.0, max_batch=6)  # reaching the target ends the wait, not the clock
    w.last_batch = _GROW_FROM
    for i in range(1, 20):
        w.q.put(i)
    batch: list = [0]
    w._gather(batch, busy=True)
    assert batch == [0, 1, 2, 3, 4, 5]  # max_batch bounds the drain; the target (8) is above it: no wait


def test_under_load_waits_for_more_until_the_target() -> None:
    import threading

    w = _writer(delay=3600.0)  # only reaching the target ends this wait
    w.last_batch = _GROW_FROM
    feeder = threading.Thread(target=lambda: [w.q.put(i) for i in range(1, 2 * _GROW_FROM + 3)])
    batch: list = [0]
    feeder.start()
    w._gather(batch, busy=True)
    feeder.join()
    assert len(batch) >= 2 * _GROW_FROM


def test_the_wait_is_bounded_and_stops_on_close() -> None:
    w = _writer(delay=0.001)
    w.last_batch = 8
    batch: list = [0]
    w._gather(batch, busy=True)  # nothing comes: returns after the bound with what it had
    assert batch == [0]
    w.q.put(None)  # the stop sentinel is left in the queue for run()
    w._gather(batch, busy=True)
    assert batch == [0] and w.q.get_nowait() is None


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
