"""server/runs.py ``finish_in_thread``: a request cancelled while its run is rebuilt in a worker thread lets go of the
run's lock only once that thread ended, so the rebuild cannot race the next request of the run (session 26 red team:
the two rebuilds fed the guard's per-run memory twice and the stale one installed a state short of a stored input)."""

from __future__ import annotations

import asyncio
import threading

import pytest

pytest.importorskip("fastapi")

from svc_counting import CountingHalt  # noqa: E402

from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.guards import ServiceGuards, default_guards  # noqa: E402
from agentguard.server.runs import finish_in_thread, finished  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

WAIT = 60  # a bound on waits for a worker thread (a hang fails the test; no timing is asserted)


def _service(tmp_path):
    s = ServerSettings(state_dir=str(tmp_path), db_url=f"sqlite:///{tmp_path / 'a.sqlite'}")
    d = default_guards(s)
    return create_app(s, ServiceGuards(tool=d.tool, step=CountingHalt(halt_at=100), signal=d.signal)).state.service


async def _step(svc, k: int):
    payload = {"state": {"k": k}}
    from agentguard.server.models import StepIn
    from agentguard.server.service import to_step

    return await svc.decide("step", "r", to_step(StepIn.model_validate(payload)), {"step": payload},
                            {"run_id": "r", "step": payload}, step=payload, principal="")


def _seen(resp) -> int:
    import json

    return int(json.loads(resp.body)["numbers"]["seen"])


def test_a_cancelled_rebuild_ends_before_the_next_request_of_the_run(tmp_path):
    """A: a step whose rebuild is held inside its replay, then cancelled. B: the next step of the run. Before, A's
    cancellation released the lock at once; B rebuilt the run (so its rebuild released A's), A's thread then replayed
    the run into the guard a second time and installed its stale state: B counted 7th, C 9th (not 4th, 5th)."""
    svc = _service(tmp_path)
    entered, release, a_done = threading.Event(), threading.Event(), threading.Event()
    real_replay, real_rebuild, real_hold = svc._replay, svc.rebuild, svc.locks.hold
    rebuilds: list[int] = []

    def replay(*a, **k):
        if len(rebuilds) == 1 and not entered.is_set():  # A's replay, once: held until released
            entered.set()
            assert release.wait(WAIT)
        return real_replay(*a, **k)

    def rebuild(run_id, pipes):
        rebuilds.append(1)
        first = len(rebuilds) == 1
        try:
            return real_rebuild(run_id, pipes)
        finally:
            if first:
                a_done.set()
            else:
                release.set()  # B rebuilt while A's thread was held (only possible before the fix)

    def hold(run_id):
        h = real_hold(run_id)
        if entered.is_set() and h.lock.locked():
            release.set()  # B waits for the lock A still holds (the fix): A's thread may go on
        return h

    async def run() -> list[int]:
        seen = [_seen(await _step(svc, k)) for k in range(3)]
        svc.runs.end_run("r")  # the next step rebuilds the run
        svc._replay, svc.rebuild, svc.locks.hold = replay, rebuild, hold
        loop = asyncio.get_running_loop()
        a = asyncio.create_task(_step(svc, 3))
        assert await loop.run_in_executor(None, entered.wait, WAIT)
        a.cancel()
        for _ in range(20):  # the cancellation reaches A (before the fix, A then released the lock; now A waits)
            await asyncio.sleep(0)
        b = await _step(svc, 3)
        assert await loop.run_in_executor(None, a_done.wait, WAIT)
        with pytest.raises(asyncio.CancelledError):
            await a
        c = await _step(svc, 4)
        return seen + [_seen(b), _seen(c)]

    assert asyncio.run(run()) == [1, 2, 3, 4, 5]  # before: [1, 2, 3, 7, 9]
    assert len(svc.store.run_inputs("r")) == 5


def test_finish_in_thread_raises_the_cancellation_only_after_the_thread_ended():
    started, release = threading.Event(), threading.Event()
    log: list[str] = []

    def work() -> int:
        started.set()
        assert release.wait(WAIT)
        log.append("thread ended")
        return 1

    async def run() -> None:
        loop = asyncio.get_running_loop()
        t = asyncio.create_task(finish_in_thread(work))
        assert await loop.run_in_executor(None, started.wait, WAIT)
        t.cancel()
        for _ in range(50):  # cancelled again and again while it waits: still waits
            await asyncio.sleep(0)
            t.cancel()
        assert not t.done() and log == []
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await t
        assert log == ["thread ended"]
        assert await finish_in_thread(lambda x: x + 1, 41) == 42
        assert await finished(asyncio.sleep(0, 7), False) == 7 and await finished(asyncio.sleep(0, 8)) == 8

    asyncio.run(run())
