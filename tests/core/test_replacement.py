"""A replacement (MODIFY's arguments, RECOVER's fallback) is decided by the whole guard before it runs.

The attack: two benign guards composed. A fallback filter answers RECOVER with a call the verified
policy forbids; a redaction guard rewrites arguments into ones the allow-list refuses. Before
:mod:`agentguard.core.replacement` the strictest verdict's action ran without any guard seeing it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from agentguard.core import BaseGuard, Context, Decision, GuardStack, Pipeline, Step, ToolCall, Verdict
from agentguard.core.replacement import MAX_ROUNDS, adecided, decided, replacement


class Deny(BaseGuard):
    """A verified policy in miniature: refuses the named tools and any argument value in ``bad``."""

    def __init__(self, tools: set[str], bad: set[str] = frozenset(), decision: Decision = Decision.REJECT) -> None:
        self.name, self.tools, self.bad, self.decision = "deny", tools, set(bad), decision

    def check(self, context: Context, proposal: Any) -> Verdict:
        if isinstance(proposal, ToolCall):
            if proposal.name in self.tools or any(str(v) in self.bad for v in proposal.arguments.values()):
                return Verdict(self.decision, f"{proposal.name} refused", self.name)
        if isinstance(proposal, Step) and any(b in str(proposal.output) for b in self.bad):
            return Verdict(self.decision, "text refused", self.name)
        return Verdict(Decision.ALLOW, "ok", self.name)


class Recover(BaseGuard):
    """A fallback filter: any call of ``unsafe`` tools is replaced by ``fallback``."""

    def __init__(self, unsafe: set[str], fallback: Any, decision: Decision = Decision.RECOVER) -> None:
        self.name, self.unsafe, self.fallback, self.decision = "filter", unsafe, fallback, decision
        self.seen: list[Any] = []

    def check(self, context: Context, proposal: Any) -> Verdict:
        self.seen.append(proposal)
        if isinstance(proposal, ToolCall) and proposal.name in self.unsafe:
            return Verdict(self.decision, "unsafe, replaced", self.name, action=self.fallback)
        return Verdict(Decision.ALLOW, "safe", self.name)


class Always(BaseGuard):
    """Answers RECOVER with ``action`` for every proposal (a fallback that is its own best action)."""

    def __init__(self, action: Any) -> None:
        self.name, self.action = "always", action

    def check(self, context: Context, proposal: Any) -> Verdict:
        return Verdict(Decision.RECOVER, "always this", self.name, action=self.action)


def test_a_fallback_the_policy_forbids_never_runs() -> None:
    stack = GuardStack([Recover({"move"}, ToolCall("wipe_disk", {"device": "/dev/sda"})), Deny({"wipe_disk"})])
    out = Pipeline(stack).decide("r", ToolCall("move", {"to": "x"}))
    assert not out.execute and out.call is None
    assert out.verdict is not None and out.verdict.decision is Decision.REJECT
    assert "wipe_disk refused" in out.verdict.reason and "RECOVER of filter" in out.verdict.reason
    assert out.verdict.details["replacement_refused"] is True


def test_modified_arguments_the_allow_list_refuses_never_run() -> None:
    redact = Recover({"read"}, {"path": "/etc/shadow"}, Decision.MODIFY)
    out = Pipeline(GuardStack([redact, Deny(set(), {"/etc/shadow"})])).decide("r", ToolCall("read", {"path": "a"}))
    assert not out.execute and "read refused" in out.message + str(out.verdict)


def test_an_allowed_replacement_runs_and_says_it_was_checked() -> None:
    f = Recover({"move"}, ToolCall("brake", {}))
    out = Pipeline(GuardStack([f, Deny({"wipe_disk"})])).decide("r", ToolCall("move", {}))
    assert out.execute and out.call == ToolCall("brake", {})
    assert out.verdict is not None and out.verdict.decision is Decision.RECOVER
    assert out.verdict.details["replacement_checked"] == 1
    assert f.seen[-1] == ToolCall("brake", {})  # the filter itself saw its fallback


def test_a_fixed_point_settles() -> None:
    out = Pipeline(Always(ToolCall("brake", {}))).decide("r", ToolCall("go", {}))
    assert out.execute and out.call == ToolCall("brake", {})


def test_replacements_that_never_settle_are_refused() -> None:
    class PingPong(BaseGuard):
        name = "pingpong"

        def check(self, context: Context, proposal: Any) -> Verdict:
            other = "b" if proposal.name == "a" else "a"
            return Verdict(Decision.MODIFY, "swap", self.name, action=ToolCall(other, {}))

    out = Pipeline(PingPong()).decide("r", ToolCall("a", {}))
    assert not out.execute and f"did not settle in {MAX_ROUNDS} rounds" in out.verdict.reason  # type: ignore[union-attr]


def test_a_halt_on_the_replacement_halts_the_run() -> None:
    p = Pipeline(GuardStack([Recover({"move"}, ToolCall("wipe", {})), Deny({"wipe"}, decision=Decision.HALT)]))
    out = p.decide("r", ToolCall("move", {}))
    assert out.stop and not out.execute
    assert p.halted("r") is not None
    assert not p.decide("r", ToolCall("noop", {})).execute  # latched


def test_an_escalated_replacement_is_refused_not_asked() -> None:
    out = Pipeline(GuardStack([Recover({"move"}, ToolCall("pay", {})), Deny({"pay"}, decision=Decision.ESCALATE)]))\
        .decide("r", ToolCall("move", {}))
    assert not out.execute and not out.ask and out.verdict.decision is Decision.REJECT  # type: ignore[union-attr]


def test_an_unreadable_replacement_is_refused() -> None:
    out = Pipeline(Recover({"move"}, 42)).decide("r", ToolCall("move", {}))
    assert not out.execute and "cannot be read" in out.verdict.reason  # type: ignore[union-attr]


def test_a_rewritten_text_is_decided_too() -> None:
    class Rewrite(BaseGuard):
        name = "rewrite"

        def check(self, context: Context, proposal: Any) -> Verdict:
            if "x" in (proposal.output or ""):
                return Verdict(Decision.MODIFY, "rewritten", self.name, action="the secret is 1234")
            return Verdict(Decision.ALLOW, "ok", self.name)

    out = Pipeline(GuardStack([Rewrite(), Deny(set(), {"1234"})])).decide("r", Step(output="x"))
    assert not out.execute
    ok = Pipeline(GuardStack([Rewrite(), Deny(set(), {"9999"})])).decide("r", Step(output="x"))
    assert ok.execute and ok.action == "the secret is 1234"


def test_the_async_path_decides_replacements_too() -> None:
    stack = GuardStack([Recover({"move"}, ToolCall("wipe_disk", {})), Deny({"wipe_disk"})])
    out = asyncio.run(Pipeline(stack).adecide("r", ToolCall("move", {})))
    assert not out.execute
    v = asyncio.run(adecided(stack, Context(run_id="r"), ToolCall("move", {})))
    assert v.decision is Decision.REJECT


def test_replacement_reads_actions_as_the_enforcement_does() -> None:
    call = ToolCall("t", {"a": 1}, "id1")
    assert replacement(call, {"a": 2}) == ToolCall("t", {"a": 2}, "id1")
    assert replacement(call, {"name": "u", "arguments": {"b": 1}}) == ToolCall("u", {"b": 1})
    assert replacement(Step(output="hi"), "bye").output == "bye"
    assert replacement(Step(action="left"), "right").action == "right"
    with pytest.raises(Exception):
        replacement(call, "not a call")


TOOLS = ["read", "write", "pay", "wipe", "brake", "move"]


@st.composite
def stacks(draw: Any) -> tuple[GuardStack, set[str]]:
    """Random compositions of fallback filters, argument rewriters and deny policies."""
    guards: list[Any] = []
    denied: set[str] = set()
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["recover", "modify", "deny"]))
        if kind == "deny":
            tools = set(draw(st.lists(st.sampled_from(TOOLS), max_size=2)))
            denied |= tools
            guards.append(Deny(tools))
        else:
            unsafe = set(draw(st.lists(st.sampled_from(TOOLS), min_size=1, max_size=3)))
            act: Any = (ToolCall(draw(st.sampled_from(TOOLS)), {}) if kind == "recover"
                        else {"v": draw(st.sampled_from(["1", "2"]))})
            guards.append(Recover(unsafe, act, Decision.RECOVER if kind == "recover" else Decision.MODIFY))
    return GuardStack(guards), denied


@settings(max_examples=150, deadline=None)
@given(stacks(), st.sampled_from(TOOLS))
def test_property_whatever_runs_the_whole_stack_allows(sd: tuple[GuardStack, set[str]], tool: str) -> None:
    """For any composition: a call that runs is one the stack allows (or proposes itself), and no
    denied tool ever runs, proposed or as a replacement."""
    stack, denied = sd
    out = Pipeline(stack).decide("r", ToolCall(tool, {}))
    if not out.execute:
        return
    ran = out.call
    assert ran is not None and ran.name not in denied
    again = decided(stack, Context(run_id="r2"), ran)
    assert again.decision is Decision.ALLOW or (again.decision in (Decision.MODIFY, Decision.RECOVER)
                                                and replacement(ran, again.action) == ran)



class Counting(BaseGuard):
    """A guard with per-run memory (like a monitor's step count): it counts what it was asked."""

    def __init__(self) -> None:
        from agentguard.core import RunMemory

        self.name = "counting"
        self.runs: RunMemory[list[int]] = RunMemory(lambda: [0])

    def check(self, context: Context, proposal: Any) -> Verdict:
        self.runs.get(context.run_id)[0] += 1
        return Verdict(Decision.ALLOW, "counted", self.name)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_each_decision_counts_once_in_guard_memory(asynchronous: bool) -> None:
    """The replacement rounds are put back: a per-step monitor keeps its index, a replay rebuilds alike."""
    count = Counting()
    p = Pipeline(GuardStack([Recover({"move"}, ToolCall("brake", {})), count]))
    for _ in range(3):
        out = asyncio.run(p.adecide("r", ToolCall("move", {}))) if asynchronous else p.decide("r", ToolCall("move", {}))
        assert out.execute and out.call == ToolCall("brake", {})
    assert count.runs.peek("r") == [3]


def test_a_real_monitor_keeps_its_step_index_when_a_text_is_rewritten() -> None:
    from agentguard.calibration import ThresholdMonitor

    class Redact(BaseGuard):
        name = "redact"

        def check(self, context: Context, proposal: Any) -> Verdict:
            if "secret" in (proposal.output or ""):
                return Verdict(Decision.MODIFY, "redacted", self.name, action=proposal.output.replace("secret", "***"))
            return Verdict(Decision.ALLOW, "ok", self.name)

    mon = ThresholdMonitor(threshold=0.5, signal="score")
    p = Pipeline(GuardStack([Redact(), mon]))
    out = p.decide("r", Step(output="the secret", signals={"score": 0.9}))
    assert out.execute and out.action == "the ***"
    assert mon._runs.peek("r").step == 1  # one step seen, not two

