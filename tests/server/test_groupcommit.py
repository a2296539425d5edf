"""The audit writer's batches (:mod:`agentguard.server.groupcommit`): what a batch takes from the queue, when the
writer waits for more (group commit that grows under load) and that it never waits for an idle request."""

from __future__ import annotations

import asyncio

import pytest

from agentguard.core.audit import AuditRecord
from agentguard.server.audit import AuditStore
from agentguard.server.groupcommit import GROW_FROM, Batches, delay_from_env


def test_idle_or_light_load_never_waits() -> None:
    b = Batches(64, commit_delay_s=3600.0)  # a sleep would hang the test
    batch: list = ["a"]
    b.gather(batch, busy=False)
    b.last_batch = GROW_FROM
    b.gather(batch, busy=False)  # the previous batch ended long ago
    b.last_batch = GROW_FROM - 1
    b.gather(batch, busy=True)  # the previous batch was small
    assert batch == ["a"]


def test_takes_what_waits_up_to_max_batch() -> None:
    b = Batches(5, commit_delay_s=0.0)
    for i in range(8):
        b.q.put(i)
    assert b.next() == [0, 1, 2, 3, 4]
    assert b.q.get_nowait() == 5


def test_no_sleep_once_the_batch_holds_twice_the_previous() -> None:
    b = Batches(64, commit_delay_s=3600.0)  # a sleep would hang the test
    b.done(GROW_FROM)
    for i in range(2 * GROW_FROM):
        b.q.put(i)
    assert b.next() == list(range(2 * GROW_FROM))


def test_under_load_sleeps_once_then_takes_what_waits() -> None:
    b = Batches(64, commit_delay_s=0.001)
    b.done(8)
    batch: list = [0]
    b.gather(batch, busy=True)  # nothing comes: returns after the sleep with what it had
    assert batch == [0]


def test_stop_ends_the_batch_and_the_next_call_says_so() -> None:
    b = Batches(64, commit_delay_s=3600.0)
    b.done(8)
    for item in (1, 2, None, 3):
        b.q.put(item)
    assert b.next() == [1, 2]  # no sleep once told to stop; what was taken is written
    assert b.next() == [3]  # the stop goes back at the end of the queue: what was queued is still written
    assert b.next() is None


@pytest.mark.parametrize(("raw", "want"), [(None, 1e-3), ("0", 0.0), ("250", 2.5e-4), ("-5", 0.0), ("junk", 1e-3),
                                           ("nan", 1e-3), ("1e12", 0.1)])
def test_delay_from_env(monkeypatch: pytest.MonkeyPatch, raw: str | None, want: float) -> None:
    if raw is None:
        monkeypatch.delenv("AGENTGUARD_AUDIT_COMMIT_DELAY_US", raising=False)
    else:
        monkeypatch.setenv("AGENTGUARD_AUDIT_COMMIT_DELAY_US", raw)
    assert delay_from_env() == pytest.approx(want)
    assert Batches(8).commit_delay_s == pytest.approx(want)


def test_store_with_delay_commits_every_record(tmp_path) -> None:
    store = AuditStore(f"sqlite:///{tmp_path / 'a.sqlite'}")
    store._writer.batching.commit_delay_s = 0.002

    async def many() -> None:
        recs = [AuditRecord(time=1.0 + i, run_id=f"r{i % 5}", decision="ALLOW", reason="ok", guard="g")
                for i in range(200)]
        await asyncio.gather(*[store.arecord(r) for r in recs])

    try:
        asyncio.run(many())
        assert store.count() == 200
        assert store.stats["records"] == 200
    finally:
        store.close()
