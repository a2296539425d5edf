"""The one decision path (agentguard.core.pipeline.Pipeline): convert, decide fail-closed, enforce, audit,
remember; calls matched by identity; runs never silently reset."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core import (
    BaseGuard, Context, Decision, GuardStack, InputError, MemoryAuditSink, Pipeline, RunEvicted, RunMemory, Step,
    ToolCall, Verdict, approval_request, call_key,
)


class Rule(BaseGuard):
    """REJECT tools whose name starts with ``deny``; ESCALATE those in ``ask``; HALT on ``halt``; counts calls."""

    def __init__(self, name: str = "rule", deny: str = "delete_", ask: tuple[str, ...] = (),
                 halt: str = "halt_") -> None:
        self.name, self.deny, self.ask, self.halt, self.calls = name, deny, ask, halt, 0

    def check(self, context: Context, proposal: Any) -> Verdict:
        self.calls += 1
        if proposal.name.startswith(self.halt):
            return Verdict.halt("halting tool", self.name)
        if proposal.name.startswith(self.deny):
            return Verdict.reject(f"{proposal.name} denied", self.name)
        if proposal.name in self.ask:
            return Verdict(Decision.ESCALATE, f"{proposal.name} needs approval", self.name)
        return Verdict.allow(self.name)


class Boom(BaseGuard):
    name = "boom"

    def check(self, context: Context, proposal: Any) -> Verdict:
        raise RuntimeError("kaput")


def test_refusal_dominates_escalation_and_the_approver_sees_every_verdict() -> None:
    stack = GuardStack([Rule("asker", deny="nothing", ask=("transfer",)), Rule("limit", deny="transfer")])
    out = Pipeline(stack).decide("r", ToolCall("transfer", {"amount": 800}))
    assert out.verdict.decision is Decision.REJECT and not out.ask and not out.execute
    ask_only = GuardStack([Rule("asker", deny="nothing", ask=("transfer",)), Rule("other")])
    asked = Pipeline(ask_only).decide("r", ToolCall("transfer", {"amount": 1}))
    assert asked.ask and not asked.execute
    req = approval_request(asked)
    assert [v["guard"] for v in req["verdicts"]] == ["asker", "other"] and "other" in req["text"]
    assert Decision.REJECT.strictness > Decision.ESCALATE.strictness
    assert Decision.HALT.strictness > Decision.REJECT.strictness


def test_identity_matching_ignores_call_ids() -> None:
    p = Pipeline(GuardStack([Rule()]))
    calls = [ToolCall("delete_note", {"id": "x"}, ""), ToolCall("read_note", {"id": "x"}, "")]
    outs = p.decide_turn("t", calls)
    assert [o.execute for o in outs] == [False, True]
    # the ids the executor reports may be anything: the delete is matched by what it is
    assert p.take("t", ToolCall("read_note", {"id": "x"}, "")).execute
    assert not p.take("t", ToolCall("delete_note", {"id": "x"}, "call_0")).execute
    assert p.take("t", ToolCall("delete_note", {"id": "x"}, "")) is None


NAMES = st.sampled_from(["read_note", "delete_note", "write_file"])
CALLS = st.builds(lambda n, a, i: ToolCall(n, {"id": a}, i), NAMES, st.sampled_from(["x", "y"]),
                  st.sampled_from(["", "c1", "c1", "dup"]))


@settings(max_examples=150, deadline=None)
@given(turn=st.lists(CALLS, min_size=1, max_size=6), order=st.randoms(use_true_random=False))
def test_property_a_refused_call_is_never_executed(turn: list[ToolCall], order: Any) -> None:
    p = Pipeline(GuardStack([Rule()]))
    p.decide_turn("run", turn)
    reported = list(turn)
    order.shuffle(reported)  # the framework may run them in any order, with whatever ids
    ran = []
    for c in reported:
        out = p.take("run", ToolCall(c.name, dict(c.arguments), "whatever"))
        assert out is not None
        if out.execute:
            ran.append(out.call)
    assert all(not c.name.startswith("delete_") for c in ran)
    assert sorted((c.name, c.arguments["id"]) for c in ran) == sorted(
        (c.name, c.arguments["id"]) for c in turn if not c.name.startswith("delete_"))


def test_halt_latches_and_the_guard_is_not_asked_again() -> None:
    g = Rule()
    p = Pipeline(GuardStack([g]))
    assert p.decide("r", ToolCall("halt_now")).stop
    n = g.calls
    again = p.decide("r", ToolCall("read_note"))
    assert again.verdict.decision is Decision.HALT and not again.execute and g.calls == n
    assert p.halted("r") is not None
    p.finish("r")
    assert p.decide("r", ToolCall("read_note")).execute  # finished on purpose: a new run


def test_the_first_halt_is_the_runs_reason_however_many_calls_follow() -> None:
    """Each call on a halted run is refused with the FIRST halt's reason; it is not re-wrapped per call
    (stored reasons grew by "run halted earlier: " on every further call)."""
    p = Pipeline(GuardStack([Rule()]))
    p.decide("r", ToolCall("halt_now"))
    first = p.halted("r")
    reasons = [p.decide("r", ToolCall("read_note", {"i": i})).verdict.reason for i in range(5)]
    assert p.halted("r") is first
    assert len(set(reasons)) == 1 and reasons[0].count("halted earlier") <= 1


def test_evicted_run_is_halted_or_rebuilt_never_new() -> None:
    p = Pipeline(GuardStack([Rule()]), max_runs=2)
    p.decide("a", ToolCall("halt_now"))
    for r in ("b", "c", "d"):
        p.decide(r, ToolCall("read_note"))
    out = p.decide("a", ToolCall("read_note"))
    assert out.verdict.decision is Decision.HALT and not out.execute and "evicted" in out.verdict.reason

    rebuilt: list[str] = []

    def rebuild(run_id: Any) -> Any:
        rebuilt.append(run_id)
        return p2._new_run(str(run_id))

    p2 = Pipeline(GuardStack([Rule()]), max_runs=1, rebuild=rebuild)
    p2.decide("a", ToolCall("read_note"))
    p2.decide("b", ToolCall("read_note"))
    assert p2.decide("a", ToolCall("read_note")).execute and rebuilt == ["a"]


def test_run_memory_expiry_tombstones_and_end_run() -> None:
    now = [0.0]
    m: RunMemory[int] = RunMemory(lambda: 0, 10, ttl_s=5, clock=lambda: now[0])
    m.set("x", 3)
    now[0] = 10
    with pytest.raises(RunEvicted):
        m.get("x")
    m.end_run("x")
    assert m.get("x") == 0
    small: RunMemory[int] = RunMemory(lambda: 0, 1)
    small.set("a", 1)
    small.set("b", 2)
    assert small.evicted("a")
    with pytest.raises(RunEvicted):
        small.get("a")


def test_fail_closed_inputs_and_guards() -> None:
    assert Pipeline(GuardStack([Boom()])).decide("r", ToolCall("x")).verdict.decision is Decision.HALT
    p = Pipeline(GuardStack([Rule()]))
    for bad in (42, ["rm -rf /"], {"name": "x", "arguments": ["a"]}, None):
        out = p.decide(f"r{bad!r}", bad)
        assert not out.execute and out.verdict.decision is Decision.HALT
    sf = Pipeline(GuardStack([Rule()]), state_fn=lambda c, x: 1 / 0)
    assert not sf.decide("r", ToolCall("read_note")).execute


def test_strategy_from_the_pipeline_and_from_the_deciding_guard() -> None:
    calls = [ToolCall("delete_a"), ToolCall("delete_a"), ToolCall("read_note")]
    default = [Pipeline(GuardStack([Rule()])).decide("r", c) for c in calls]
    assert [o.execute for o in default] == [False, False, True] and not any(o.stop for o in default)
    teh = Pipeline(GuardStack([Rule(deny="delete_")]), strategy="TEH")
    teh.decide("r", ToolCall("delete_a"))
    # TEH: the tool is halted for the run; an allowed tool still runs
    assert teh.decide("r", ToolCall("read_note")).execute

    class Halting(Rule):
        strategy: Any = None

    from agentguard.core import strategy

    g = Halting(name="pol", deny="write_")
    g.strategy = strategy("CRP+TT", max_rounds=2)
    p = Pipeline(GuardStack([g]))
    outs = [p.decide("r", ToolCall("write_file", {"n": i})) for i in range(3)]
    assert [o.extra.get("replan") for o in outs[:2]] == [True, True] and outs[2].stop
    assert not p.decide("r", ToolCall("read_note")).execute  # TT stopped the run: latched


def test_facts_cannot_reset_strategy_state() -> None:
    p = Pipeline(GuardStack([Rule(deny="write_")]), strategy="TEH")
    p.decide("r", ToolCall("write_file"))
    p2 = Pipeline(GuardStack([Rule(deny="zzz")]), strategy="TEH")
    p2.decide("r", ToolCall("read_note"))
    st_ = p.run("r", halted_tools=set(), replan_rounds=0, halted=None)
    assert "write_file" in st_.context.metadata["halted_tools"]


def test_audit_record_per_decision_and_failing_sink_fails_closed() -> None:
    sink = MemoryAuditSink()
    p = Pipeline(GuardStack([Rule()]), audit=sink, adapter="t")
    p.decide("r", ToolCall("delete_a", {"k": 1}))
    rec = sink.records[-1]
    assert rec.decision == "REJECT" and rec.call["name"] == "delete_a" and rec.extra["verdicts"]

    class Broken:
        def write(self, record: Any) -> None:
            raise OSError("disk full")

    out = Pipeline(GuardStack([Rule()]), audit=Broken()).decide("r", ToolCall("read_note"))
    assert not out.execute and "audit_error" in out.extra


def test_resolve_runs_exactly_the_asked_call_and_confirms_with_settlers() -> None:
    p = Pipeline(GuardStack([Rule(ask=("pay",))]))
    asked = p.decide("r", ToolCall("pay", {"amount": 5}, "id1"))
    ok = p.resolve(asked, True, approver="alice")
    assert ok.execute and ok.call == ToolCall("pay", {"amount": 5}, "id1") and ok.extra["approver"] == "alice"
    no = p.resolve(p.decide("r", ToolCall("pay", {"amount": 6})), False)
    assert not no.execute
    truthy = p.resolve(p.decide("r", ToolCall("pay", {"amount": 7})), "yes")  # type: ignore[arg-type]
    assert not truthy.execute  # only True approves
    with pytest.raises(InputError):
        p.resolve(p.decide("r", ToolCall("read_note")), True)

    class Settler(Rule):
        def settle_approval(self, verdict: Verdict, call: Any, approved: bool, approver: str) -> Verdict:
            return Verdict.reject("the service did not record it", self.name)

    q = Pipeline(GuardStack([Settler(ask=("pay",))]))
    assert not q.resolve(q.decide("r", ToolCall("pay")), True).execute


def test_async_path_matches_sync() -> None:
    async def go() -> list[Any]:
        p = Pipeline(GuardStack([Rule(ask=("pay",))]))
        outs = await p.adecide_turn("r", [ToolCall("delete_a"), ToolCall("read_note"), ToolCall("pay")])
        res = await p.aresolve(outs[2], True)
        halted = await p.adecide("r", ToolCall("halt_x"))
        after = await p.adecide("r", ToolCall("read_note"))
        return [o.execute for o in outs] + [res.execute, halted.stop, after.execute]

    assert asyncio.run(go()) == [False, True, False, True, True, False]


def test_an_approval_answered_after_its_ttl_is_refused() -> None:
    """An ESCALATE stays answerable for ``approval_ttl_s`` (default one hour, as the service's); a later
    approval (a LangChain interrupt or an Agents SDK run state resumed the next day) runs nothing."""
    p = Pipeline(GuardStack([Rule(ask=("send_note",))]))
    asked = p.decide("r", ToolCall("send_note", {"to": "bob"}))
    assert asked.ask and isinstance(asked.extra["asked_at"], float)
    asked.extra["asked_at"] -= 3601.0
    out = p.resolve(asked, True, approver="alice")
    assert not out.execute and "approval expired" in out.verdict.reason
    fresh = p.decide("r", ToolCall("send_note", {"to": "carol"}))
    assert p.resolve(fresh, True, approver="alice").execute  # within the TTL: approved as before


def test_an_async_approval_after_its_ttl_is_refused_and_none_never_expires() -> None:
    p = Pipeline(GuardStack([Rule(ask=("send_note",))]))
    asked = asyncio.run(p.adecide("r", ToolCall("send_note")))
    asked.extra["asked_at"] -= 10_000.0
    assert not asyncio.run(p.aresolve(asked, True)).execute
    forever = Pipeline(GuardStack([Rule(ask=("send_note",))]), approval_ttl_s=None)
    old = forever.decide("r", ToolCall("send_note"))
    old.extra["asked_at"] -= 10_000.0
    assert forever.resolve(old, True).execute


def test_an_approval_runs_only_the_call_asked_about_not_one_changed_since() -> None:
    """TOCTOU: the arguments object of an asked call is edited between the ask and the approval (a shared
    dict, a framework that resumes with edited args): the approval must not run the edited call."""
    from agentguard.core import BaseGuard, Context, Decision, Pipeline, ToolCall, Verdict

    class Ask(BaseGuard):
        name = "ask"

        def check(self, context: Context, proposal: object) -> Verdict:
            return Verdict(Decision.ESCALATE, "a human decides")

    p = Pipeline(Ask())
    call = ToolCall("pay", {"to": "alice", "amount": {"value": 10}})
    asked = p.decide("r", call)
    assert asked.ask
    call.arguments["amount"]["value"] = 10_000  # nested edit after the ask
    out = p.resolve(asked, True, approver="bob")
    assert not out.execute and "changed after it was asked" in out.message + str(out.verdict)
    asked2 = p.decide("r2", ToolCall("pay", {"to": "alice"}))
    assert p.resolve(asked2, True, approver="bob").execute  # an unchanged call is approved as before
