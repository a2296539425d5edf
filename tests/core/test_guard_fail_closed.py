"""The one fail-closed rule of the core (issue 13): late verdicts, BaseExceptions, off-loop sync guards."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agentguard import BaseGuard, Decision, GuardStack, ToolCall, Verdict
from agentguard.core import Context
from agentguard.core.guard import arun_guard, run_guard

CALL = ToolCall("write_note", {"name": "a.txt"})


class LateAllow(BaseGuard):
    """A synchronous guard that blocks (time.sleep: no await point) and then ALLOWs."""

    name = "late-allow"

    def __init__(self, delay: float = 0.5) -> None:
        self.delay = delay
        self.finished = threading.Event()

    def check(self, context, proposal):
        time.sleep(self.delay)
        self.finished.set()
        return Verdict.allow(self.name)


class AsyncLateAllow(BaseGuard):
    name = "async-late-allow"

    def check(self, context, proposal):  # pragma: no cover - the async path is what is tested
        return Verdict.allow(self.name)

    async def acheck(self, context, proposal):
        time.sleep(0.3)  # blocks inside a coroutine: wait_for alone could not stop this
        return Verdict.allow(self.name)


class Raises(BaseGuard):
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.name = f"raises-{type(exc).__name__}"

    def check(self, context, proposal):
        raise self.exc


class AsyncRaises(Raises):
    async def acheck(self, context, proposal):
        raise self.exc


def test_late_allow_is_refused_on_sync_and_async_paths():
    stack = GuardStack([LateAllow(0.3)], timeout_s=0.05, on_error="reject")
    assert stack.check(Context(), CALL).decision is Decision.REJECT
    t0 = time.perf_counter()
    v = asyncio.run(stack.acheck(Context(), CALL))
    took = time.perf_counter() - t0
    assert v.decision is Decision.REJECT and "timed out" in v.reason
    assert took < 0.25, f"the stack waited {took:.2f}s for an abandoned guard"  # abandoned, not awaited


def test_async_guard_that_blocks_still_never_allows_late():
    stack = GuardStack([AsyncLateAllow()], timeout_s=0.05)
    assert asyncio.run(stack.acheck(Context(), CALL)).decision is Decision.HALT


def test_sync_guard_runs_off_the_event_loop():
    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        t = asyncio.create_task(ticker())
        v = await GuardStack([LateAllow(0.3)]).acheck(Context(), CALL)  # no deadline: it may allow
        t.cancel()
        return v, ticks

    v, ticks = asyncio.run(main())
    assert v.decision is Decision.ALLOW and ticks >= 10  # the loop kept running while the guard slept


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt(), asyncio.CancelledError(), GeneratorExit(),
                                 MemoryError(), RecursionError("deep")])
@pytest.mark.parametrize("cls", [Raises, AsyncRaises])
def test_every_base_exception_becomes_the_fail_closed_verdict(exc, cls):
    g = cls(exc)
    for stack in (GuardStack([g]), GuardStack([g], timeout_s=1.0)):
        assert stack.check(Context(), CALL).decision is Decision.HALT
        v = asyncio.run(stack.acheck(Context(), CALL))
        assert v.decision is Decision.HALT and type(exc).__name__ in v.reason
    assert run_guard(g, Context(), CALL, on_error=Decision.REJECT).decision is Decision.REJECT
    assert asyncio.run(arun_guard(g, Context(), CALL, on_error=Decision.ESCALATE)).decision is Decision.ESCALATE


def test_non_verdict_and_bad_on_error_fail_closed():
    class Garbage(BaseGuard):
        name = "garbage"

        def check(self, context, proposal):
            return "ALLOW"

    assert GuardStack([Garbage()]).check(Context(), CALL).decision is Decision.HALT
    assert asyncio.run(GuardStack([Garbage()]).acheck(Context(), CALL)).decision is Decision.HALT
    with pytest.raises(ValueError):
        GuardStack([Garbage()], on_error="allow")


def test_callers_own_cancellation_is_passed_on():
    async def main():
        task = asyncio.create_task(GuardStack([LateAllow(0.5)]).acheck(Context(), CALL))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_saturated_worker_pool_fails_closed_not_open():
    # 40 stuck guards (more than the pool's 32 threads) all answer on time with the fail-closed verdict
    async def main():
        stack = GuardStack([LateAllow(0.4)], timeout_s=0.05)
        return await asyncio.gather(*(stack.acheck(Context(), CALL) for _ in range(40)))

    t0 = time.perf_counter()
    vs = asyncio.run(main())
    assert all(v.decision is Decision.HALT for v in vs) and time.perf_counter() - t0 < 0.5


@pytest.mark.parametrize("limit", [float("nan"), -1.0, 0.0])
def test_a_time_limit_that_is_no_limit_never_lets_a_verdict_in(limit):
    """Session 21: ``run_guard`` compared ``elapsed > timeout_s``, so a NaN limit (a configuration's ``nan``, or a
    Pipeline built with one directly) made no verdict late and a slow ALLOW stood. Only a verdict that came within
    a limit that is a number is accepted, on both paths (asyncio.wait with a NaN timeout already abandons)."""
    class SlowAllow:
        name = "slow"

        def check(self, context, proposal):
            time.sleep(0.05)
            return Verdict.allow("slow", "fine")

    call = ToolCall("send", {})
    assert run_guard(SlowAllow(), Context(run_id="r"), call, timeout_s=limit).decision is Decision.HALT
    assert asyncio.run(arun_guard(SlowAllow(), Context(run_id="r"), call, timeout_s=limit)).decision is Decision.HALT
    assert run_guard(SlowAllow(), Context(run_id="r"), call, timeout_s=None).decision is Decision.ALLOW
