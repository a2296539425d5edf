"""server/runs.py ``RunLocks``: one lock per run id shared by every request that holds or waits for it, serialising
them; the entry goes when the last leaves (a cancelled waiter included), so the table holds only runs in use."""

from __future__ import annotations

import asyncio

import pytest

from agentguard.server.runs import RunLocks


def test_requests_of_one_run_share_one_lock_and_run_in_turn() -> None:
    locks = RunLocks()
    order: list[str] = []

    async def one(name: str, run: str) -> None:
        async with locks.hold(run):
            order.append(f"{name}+")
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            order.append(f"{name}-")

    async def go() -> None:
        await asyncio.gather(one("a", "r"), one("b", "r"), one("c", "other"))

    asyncio.run(go())
    ra = [x for x in order if x[0] in "ab"]
    assert ra in (["a+", "a-", "b+", "b-"], ["b+", "b-", "a+", "a-"])
    assert len(locks) == 0


def test_a_cancelled_waiter_leaves_no_entry_and_no_held_lock() -> None:
    locks = RunLocks()

    async def go() -> None:
        async with locks.hold("r"):
            waiter = asyncio.ensure_future(locks.hold("r").__aenter__())
            await asyncio.sleep(0)
            assert len(locks) == 1 and locks.get("r").locked()
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
        assert len(locks) == 0 and not locks.get("r").locked()
        async with locks.hold("r"):  # free again
            pass

    asyncio.run(go())
