"""A plain GuardStack whose every member is decided on the event loop (synchronous and ``inline_safe``, or such
a stack) is decided by the async path through its ``check`` (core/guard.py ``_inline_stack``), without the
coroutine layers of ``acheck``: the same verdict, the same fail-closed answers, the same per-member deadline
rule. A stack with any other member, or a subclass of GuardStack, still goes through ``acheck``."""

from __future__ import annotations

import asyncio
import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.guard import BaseGuard, GuardStack, _arun_async, arun_guard, run_guard
from agentguard.core.types import Context, Decision, ToolCall, Verdict


class Pure(BaseGuard):
    inline_safe = True

    def __init__(self, name: str, answer: str) -> None:
        self.name, self.answer = name, answer

    def check(self, context, proposal):
        if self.answer == "raise":
            raise RuntimeError(f"{self.name} broke")
        if self.answer == "junk":
            return "not a verdict"
        return Verdict(Decision[self.answer], f"{self.name} says {self.answer}", self.name)


class Threaded(Pure):  # overrides nothing but does not declare inline_safe itself: a worker thread
    def check(self, context, proposal):
        return super().check(context, proposal)


def _ask(guard, **kw):
    return asyncio.run(arun_guard(guard, Context(run_id="r"), ToolCall("x"), **kw))


def test_an_inline_stack_is_decided_without_acheck(monkeypatch):
    stack = GuardStack([Pure("a", "ALLOW"), GuardStack([Pure("b", "REJECT")])])

    async def broken(self, context, proposal):  # if the async path still used acheck, this would HALT
        raise AssertionError("acheck used")

    monkeypatch.setattr(GuardStack, "acheck", broken)
    v = _ask(stack)
    assert v.decision is Decision.REJECT and v.guard == "b"
    assert v.to_dict() == run_guard(stack, Context(run_id="r"), ToolCall("x")).to_dict()


def test_a_stack_with_a_threaded_member_or_a_subclass_still_uses_acheck():
    used: list[str] = []

    class Mine(GuardStack):
        async def acheck(self, context, proposal):
            used.append("sub")
            return await super().acheck(context, proposal)

    seen: list[int] = []

    class Where(Threaded):
        def check(self, context, proposal):
            seen.append(threading.get_ident())
            return super().check(context, proposal)

    assert _ask(Mine([Pure("a", "ALLOW")])).decision is Decision.ALLOW and used == ["sub"]

    async def go():
        return threading.get_ident(), await arun_guard(GuardStack([Pure("a", "ALLOW"), Where("t", "ALLOW")]),
                                                       Context(), ToolCall("x"))

    loop_thread, v = asyncio.run(go())
    assert v.decision is Decision.ALLOW and seen and seen[0] != loop_thread  # still a worker thread


ANSWERS = st.sampled_from(["ALLOW", "MODIFY", "REJECT", "ESCALATE", "HALT", "raise", "junk"])
MEMBERS = st.recursive(
    st.builds(lambda n, a: ("pure", n, a), st.integers(0, 99), ANSWERS),
    lambda inner: st.builds(lambda ms, sc, oe: ("stack", ms, sc, oe), st.lists(inner, min_size=1, max_size=3),
                            st.booleans(), st.sampled_from(["HALT", "REJECT", "ESCALATE"])),
    max_leaves=6)


def _build(spec):
    if spec[0] == "pure":
        return Pure(f"g{spec[1]}", spec[2])
    _, members, short, on_error = spec
    return GuardStack([_build(m) for m in members], short_circuit=short, on_error=on_error)


@settings(max_examples=200, deadline=None)
@given(spec=MEMBERS.filter(lambda s: s[0] == "stack"))
def test_the_inline_path_answers_as_acheck_and_check(spec):
    """Property: over nested stacks of inline guards that allow, refuse, raise or return junk, with any
    short-circuit and on_error, the async path's verdict is the one ``acheck`` gives (the path before this
    change) and the one ``check`` gives."""
    stack = _build(spec)
    ctx, call = Context(run_id="r"), ToolCall("x")
    new = asyncio.run(arun_guard(stack, ctx, call)).to_dict()
    old = asyncio.run(_arun_async(stack, ctx, call, None, Decision.HALT)).to_dict()
    sync = run_guard(stack, ctx, call).to_dict()
    assert new == old == sync
    first = spec[1][0]
    if first[0] == "pure" and first[2] in ("raise", "junk"):  # always asked: fails closed
        assert new["decision"] != "ALLOW"
