"""server/deciding.py ``in_request``: a decision that does not come back (cancelled during its audit write, or
raising) leaves nothing of itself in the run's memory: the next request of the run is decided on the run rebuilt
from the store (session 26 red team: a cancelled ``confirm`` let the next ``send`` through)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("fastapi")

from agentguard.core.guard import BaseGuard  # noqa: E402
from agentguard.core.types import Decision, ToolCall, Verdict  # noqa: E402
from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.deciding import CALL, Call, in_request  # noqa: E402
from agentguard.server.guards import ServiceGuards, default_guards  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402


class AfterConfirm(BaseGuard):
    """``send`` is allowed only once ``confirm`` was asked in the run (per-run memory, forgotten by end_run)."""

    name = "after-confirm"

    def __init__(self) -> None:
        self.seen: dict[str, bool] = {}

    def check(self, context, proposal):
        if proposal.name == "confirm":
            self.seen[context.run_id] = True
        ok = proposal.name != "send" or self.seen.get(context.run_id, False)
        return Verdict(Decision.ALLOW if ok else Decision.REJECT, proposal.name)

    def end_run(self, run_id) -> None:
        self.seen.pop(run_id, None)


def _service(tmp_path):
    s = ServerSettings(state_dir=str(tmp_path), db_url=f"sqlite:///{tmp_path / 'a.sqlite'}")
    d = default_guards(s)
    return create_app(s, ServiceGuards(tool=AfterConfirm(), step=d.step, signal=d.signal)).state.service


async def _ask(svc, name: str):
    call = ToolCall(name, {}, "")
    return await svc.decide("check", "r1", call, {"tool_call": call.to_dict(), "metadata": {}},
                            {"run_id": "r1", "tool_call": call.to_dict()}, claims={}, principal="")


def test_an_input_whose_write_was_cancelled_allows_nothing_later(tmp_path):
    svc = _service(tmp_path)

    async def run() -> bytes:
        assert b'"ALLOW"' in (await _ask(svc, "other")).body
        real = svc.store.arecord

        async def cut(*_a, **_k):
            raise asyncio.CancelledError()

        svc.store.arecord = cut
        with pytest.raises(asyncio.CancelledError):
            await _ask(svc, "confirm")  # never stored, never answered
        svc.store.arecord = real
        return (await _ask(svc, "send")).body

    body = asyncio.run(run())
    assert b'"REJECT"' in body, body  # before: ALLOW on the confirm the store never got
    names = [r["payload"]["input"]["tool_call"]["name"] for r in svc.store.run_inputs("r1")]
    assert names == ["other", "send"]


def test_in_request_sets_the_call_and_drops_the_run_only_when_it_raises():
    ended: list[str] = []

    class Runs:
        def end_run(self, run_id: str) -> None:
            ended.append(run_id)

    st = type("St", (), {"run_id": "r9"})()
    call = Call("check", st, {}, {})  # type: ignore[arg-type]
    with in_request(call, Runs()):
        assert CALL.get() is call
    assert CALL.get() is None and ended == []
    with pytest.raises(asyncio.CancelledError), in_request(call, Runs()):
        raise asyncio.CancelledError()
    assert CALL.get() is None and ended == ["r9"]


def test_a_guard_thread_of_a_cancelled_decision_ends_before_the_next_request(tmp_path):
    """A: ``confirm``, its guard's check (a worker thread) held, then A cancelled. B: ``send``. Before, A's cancellation
    dropped the run and released the lock at once; B rebuilt the run from the store (no ``confirm``), then A's thread
    recorded ``confirm`` in the guard's memory, and B's ``send`` was ALLOWed on a confirm never stored. Now A's decision
    ends first (its ``confirm`` is stored, the run dropped): B's ALLOW is the one a replay of the store gives."""
    import threading

    wait = 60  # a bound on waits for a worker thread (a hang fails the test; no timing is asserted)
    entered, release, recorded = threading.Event(), threading.Event(), threading.Event()

    class Held(AfterConfirm):
        def check(self, context, proposal):
            held = proposal.name == "confirm" and not entered.is_set()
            if held:
                entered.set()
                assert release.wait(wait)
            try:
                return super().check(context, proposal)
            finally:
                if held:
                    recorded.set()

    s = ServerSettings(state_dir=str(tmp_path), db_url=f"sqlite:///{tmp_path / 'a.sqlite'}")
    d = default_guards(s)
    svc = create_app(s, ServiceGuards(tool=Held(), step=d.step, signal=d.signal)).state.service
    real_rebuild, real_hold = svc.rebuild, svc.locks.hold

    def rebuild(run_id, pipes):
        st = real_rebuild(run_id, pipes)
        if entered.is_set():  # B's rebuild while A's check was held (only possible before the fix)
            release.set()
            assert recorded.wait(wait)
        return st

    def hold(run_id):
        h = real_hold(run_id)
        if entered.is_set() and h.lock.locked():
            release.set()  # B waits for the lock A still holds (the fix): A's check may go on
        return h

    async def run() -> bytes:
        assert b'"ALLOW"' in (await _ask(svc, "other")).body
        svc.rebuild, svc.locks.hold = rebuild, hold
        loop = asyncio.get_running_loop()
        a = asyncio.create_task(_ask(svc, "confirm"))
        assert await loop.run_in_executor(None, entered.wait, wait)
        a.cancel()
        for _ in range(20):  # the cancellation reaches A (before the fix, A then released the lock; now A waits)
            await asyncio.sleep(0)
        body = (await _ask(svc, "send")).body
        with pytest.raises(asyncio.CancelledError):
            await a
        return body

    body = asyncio.run(run())
    names = [r["payload"]["input"]["tool_call"]["name"] for r in svc.store.run_inputs("r1")]
    assert (b'"ALLOW"' in body) == ("confirm" in names), (body, names)  # before: ALLOW, ["other", "send"]
    assert names == ["other", "confirm", "send"]
