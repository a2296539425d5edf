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
