"""GuardStack composition (core.guard): the strictest verdict wins and names its guard; errors and timeouts
fail closed."""

import asyncio

import pytest

from agentguard import BaseGuard, Context, Decision, GuardStack, InputError, ToolCall, Verdict


class Fixed(BaseGuard):
    def __init__(self, name, decision):
        self.name, self.decision = name, decision

    def check(self, context, proposal):
        return Verdict(self.decision, f"{self.name} says {self.decision.name}")


class Boom(BaseGuard):
    name = "boom"

    def check(self, context, proposal):
        raise RuntimeError("kaput")


def test_stack_strictest_wins_and_names_guard():
    s = GuardStack([Fixed("a", Decision.ALLOW), Fixed("b", Decision.REJECT), Fixed("c", Decision.MODIFY)])
    v = s.check(Context(), ToolCall("x"))
    assert v.decision is Decision.REJECT and v.guard == "b"
    assert [d["guard"] for d in v.details["verdicts"]] == ["a", "b", "c"]


def test_stack_fails_closed():
    s = GuardStack([Fixed("a", Decision.ALLOW), Boom()])
    v = s.check(Context(), ToolCall("x"))
    assert v.decision is Decision.HALT and v.guard == "boom" and "kaput" in v.reason
    v2 = asyncio.run(GuardStack([Boom()], on_error="reject").acheck(Context(), ToolCall("x")))
    assert v2.decision is Decision.REJECT
    with pytest.raises(InputError):
        GuardStack([Boom()], on_error="allow").check(Context(), None)


def test_stack_async_timeout_fails_closed():
    class Slow(BaseGuard):
        name = "slow"

        async def acheck(self, context, proposal):
            await asyncio.sleep(1)
            return Verdict.allow()

    v = asyncio.run(GuardStack([Slow()], timeout_s=0.01).acheck(Context(), None))
    assert v.decision is Decision.HALT and "timed out" in v.reason


def test_inline_safe_guards_are_decided_on_the_loop_and_still_fail_closed_when_late():
    """A guard whose own class declares ``inline_safe = True`` (fast and pure) is decided on the event loop
    (no worker-thread hop); a late verdict still never allows; a subclass does not inherit the promise."""
    import threading
    import time

    seen: list[int] = []

    class Pure(BaseGuard):
        name = "pure"
        inline_safe = True

        def check(self, context, proposal):
            seen.append(threading.get_ident())
            return Verdict.allow(self.name)

    class SlowPure(Pure):
        inline_safe = True

        def check(self, context, proposal):
            time.sleep(0.05)
            return Verdict.allow(self.name)

    class Inherits(Pure):  # overrides check without declaring anything itself: worker thread
        def check(self, context, proposal):
            seen.append(threading.get_ident())
            return Verdict.allow(self.name)

    async def go(stack):
        return threading.get_ident(), await stack.acheck(Context(), ToolCall("x"))

    loop_thread, v = asyncio.run(go(GuardStack([Pure()])))
    assert v.decision is Decision.ALLOW and seen == [loop_thread]
    loop_thread, v = asyncio.run(go(GuardStack([Inherits()])))
    assert v.decision is Decision.ALLOW and seen[-1] != loop_thread
    _, v = asyncio.run(go(GuardStack([SlowPure()], timeout_s=0.01, on_error="reject")))
    assert v.decision is Decision.REJECT  # returned after its deadline: fails closed
