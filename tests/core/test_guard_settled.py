"""GuardStack (core.guard, session 24): a member whose verdict cannot change the stack's answer is not asked (nor
listed in ``details['verdicts']``): decided inline, without per-run memory, declaring ``strictest()``, when the verdict
in hand is at least as strict as both that and the stack's ``on_error``. Anything else is asked as before; the
synchronous and the asynchronous path ask the same guards and answer the same."""

import asyncio

import pytest

from agentguard import BaseGuard, Context, Decision, GuardStack, ToolCall, Verdict
from agentguard.core.guard import arun_guard
from agentguard.core.replacement import adecided


class Fixed(BaseGuard):
    inline_safe = True

    def __init__(self, name, decision, top=Decision.REJECT):
        self.name, self.decision, self.top, self.asked = name, decision, top, 0

    def strictest(self):
        return self.top

    def check(self, context, proposal):
        self.asked += 1
        return Verdict(self.decision, f"{self.name} says {self.decision.name}", self.name)


class Undeclared(Fixed):  # a subclass does not inherit the declarations (it may override check)
    pass


class Remembers(Fixed):
    inline_safe = True

    def strictest(self):
        return self.top

    def end_run(self, run_id):
        pass


class Threaded(Fixed):  # not decided inline: always asked
    inline_safe = False

    def strictest(self):
        return self.top


class Unsure(Fixed):
    inline_safe = True

    def strictest(self):
        raise RuntimeError("cannot say")


def both(stack, proposal=None):
    proposal = proposal or ToolCall("x")
    v = stack.check(Context(), proposal)
    va = asyncio.run(stack.acheck(Context(), proposal))
    vr = asyncio.run(adecided(stack, Context(), proposal))
    for w in (va, vr):
        assert (w.decision, w.reason, w.guard) == (v.decision, v.reason, v.guard)
        assert [t["guard"] for t in w.details["verdicts"]] == [t["guard"] for t in v.details["verdicts"]]
    return v


def test_a_member_that_cannot_change_the_answer_is_not_asked():
    a, b = Fixed("a", Decision.REJECT), Fixed("b", Decision.REJECT)
    v = both(GuardStack([a, b], on_error="reject"))
    assert (v.decision, v.guard) == (Decision.REJECT, "a") and b.asked == 0
    assert [t["guard"] for t in v.details["verdicts"]] == ["a"]
    v = both(GuardStack([Fixed("h", Decision.HALT), b], on_error="halt", short_circuit=False))
    assert v.guard == "h" and b.asked == 0  # HALT in hand: nothing is stricter


@pytest.mark.parametrize("make, on_error, first", [
    (lambda: Fixed("b", Decision.HALT, top=Decision.HALT), "reject", Decision.REJECT),  # it may halt
    (lambda: Fixed("b", Decision.REJECT), "halt", Decision.REJECT),  # its failure halts
    (lambda: Fixed("b", Decision.REJECT), "reject", Decision.ESCALATE),  # REJECT is stricter than ESCALATE
    (lambda: Fixed("b", Decision.REJECT), "reject", Decision.ALLOW),
    (lambda: Undeclared("b", Decision.REJECT), "reject", Decision.REJECT),
    (lambda: Remembers("b", Decision.REJECT), "reject", Decision.REJECT),  # per-run memory: it must see every call
    (lambda: Threaded("b", Decision.REJECT), "reject", Decision.REJECT),
    (lambda: Unsure("b", Decision.REJECT), "reject", Decision.REJECT),
])
def test_every_other_member_is_asked(make, on_error, first):
    b = make()
    v = both(GuardStack([Fixed("a", first), b], on_error=on_error))
    assert b.asked == 3 and [t["guard"] for t in v.details["verdicts"]] == ["a", "b"]
    want = max([first, b.decision], key=lambda d: d.strictness)
    assert v.decision is want and v.guard == ("a" if first.strictness >= b.decision.strictness else "b")


def test_an_all_inline_stack_fails_closed_on_the_async_path():
    class Boom(BaseGuard):
        inline_safe = True
        name = "boom"

        def check(self, context, proposal):
            raise RuntimeError("kaput")

    s = GuardStack([Fixed("a", Decision.ALLOW), Boom()], on_error="reject")
    v = asyncio.run(arun_guard(s, Context(), ToolCall("x")))
    assert (v.decision, v.guard) == (Decision.REJECT, "boom") and "kaput" in v.reason
    late = GuardStack([Fixed("a", Decision.ALLOW)], timeout_s=1e-9)
    assert asyncio.run(arun_guard(late, Context(), ToolCall("x"))).decision is Decision.HALT  # late: fails closed
