import asyncio
import importlib

import pytest

import agentguard
from agentguard import (
    BaseGuard, Context, Decision, GuardStack, InputError, Step, ToolCall, Trace, Verdict, read_traces, write_traces,
)


def test_all_is_sorted_and_complete():
    assert agentguard.__all__ == sorted(agentguard.__all__)
    for name in agentguard.__all__:
        assert hasattr(agentguard, name), name
    core = importlib.import_module("agentguard.core")
    assert core.__all__ == sorted(core.__all__)
    public = {n for n in dir(core) if not n.startswith("_") and n[0].isupper()}
    assert public <= set(core.__all__) | {"Proposal", "Seq"}


def test_decision_order_and_parse():
    assert Decision.ALLOW < Decision.MODIFY < Decision.RECOVER < Decision.REJECT < Decision.ESCALATE < Decision.HALT
    assert Decision.parse("halt") is Decision.HALT
    with pytest.raises(InputError, match="unknown decision"):
        Decision.parse("maybe")


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


def test_toolcall_validation():
    with pytest.raises(InputError):
        ToolCall("")
    with pytest.raises(InputError):
        ToolCall("x", arguments=[1, 2])


def test_trace_roundtrip(tmp_path):
    t = Trace([Step(state={"a": 1}, action=ToolCall("f", {"x": 1})), Step(state={"a": 2})], {"unsafe": True})
    p = tmp_path / "t.jsonl"
    write_traces(str(p), [t])
    (back,) = read_traces(str(p))
    assert back.states == [{"a": 1}, {"a": 2}] and back.labels == {"unsafe": True}
    assert back.steps[0].action == ToolCall("f", {"x": 1})
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="empty"):
        read_traces(str(empty))
    bad = tmp_path / "b.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(InputError, match="b.jsonl:1"):
        read_traces(str(bad))


def test_strategies():
    from agentguard.core.strategies import Block, Fallback, HaltTool, HumanInTheLoop, Reflect, Replan, Stop

    call = ToolCall("rm", {"path": "/"})
    rej = Verdict(Decision.REJECT, "no deleting", "pol", {"probability": 0.2, "threshold": 0.5},
                  details={"state_text": "stove on", "property": "G !fire"})
    ok = Verdict.allow("pol")
    ctx = Context()
    assert Stop().apply(rej, ctx, call).stop
    assert Stop().apply(ok, ctx, call).execute
    b = Block().apply(rej, ctx, call)
    assert not b.execute and not b.stop and "no deleting" in b.message
    h = HaltTool()
    assert not h.apply(rej, ctx, call).execute
    assert not h.apply(ok, ctx, call).execute  # halted for the rest of the run
    ctx2 = Context()
    r = Replan(max_rounds=2)
    assert not r.apply(rej, ctx2, call).stop and not r.apply(rej, ctx2, call).stop
    assert r.apply(rej, ctx2, call).stop
    msg = Reflect().apply(rej, ctx, call).message
    assert "stove on" in msg and "G !fire" in msg and "0.200" in msg and "0.500" in msg
    assert HumanInTheLoop(lambda v, p: True).apply(rej, ctx, call).execute
    assert not HumanInTheLoop(lambda v, p: False).apply(rej, ctx, call).execute
    assert HumanInTheLoop(lambda v, p: ToolCall("ls")).apply(rej, ctx, call).action == ToolCall("ls")
    boom = HumanInTheLoop(lambda v, p: 1 / 0).apply(rej, ctx, call)
    assert not boom.execute
    pend = HumanInTheLoop().apply(rej, ctx, call)
    p = pend.extra["pending"]

    async def approve_later():
        asyncio.get_running_loop().call_later(0.01, p.resolve, True)
        return await p.wait(1)

    assert asyncio.run(approve_later()) is True
    rec = Verdict(Decision.RECOVER, "unsafe", "filter", action="B")
    assert Fallback().apply(rec, ctx, "A").action == "B"
    assert Fallback().apply(Verdict(Decision.RECOVER, "x"), ctx, "A").stop


def test_end_run_reaches_every_guard_with_per_run_memory_inside_stacks_and_wrappers():
    from agentguard.core import BaseGuard, GuardStack, RunMemory, Verdict
    from agentguard.core.runs import end_run

    class Counting(BaseGuard):
        def __init__(self, name):
            self.name = name
            self.runs = RunMemory(lambda: [0])

        def check(self, context, proposal):
            self.runs.get(context.run_id)[0] += 1
            return Verdict.allow(self.name)

        def end_run(self, run_id):
            self.runs.end_run(run_id)

    class Wrapper(BaseGuard):
        name = "wrapper"

        def __init__(self, guard):
            self.guard = guard

        def check(self, context, proposal):
            return self.guard.check(context, proposal)

    a, b = Counting("a"), Counting("b")
    stack = GuardStack([a, Wrapper(GuardStack([b]))])
    from agentguard.core import Context

    stack.check(Context(run_id="r1"), None)
    stack.check(Context(run_id="r2"), None)
    assert "r1" in a.runs and "r1" in b.runs
    end_run(stack, "r1")
    assert "r1" not in a.runs and "r1" not in b.runs and "r2" in b.runs
    stack.end_run("r2")
    assert len(a.runs) == len(b.runs) == 0


def test_one_audit_record_type():
    import agentguard.policies.audit as pa
    from agentguard.core import AuditRecord

    assert pa.AuditRecord is AuditRecord
    r = AuditRecord(time=1.0, run_id="r", decision="ALLOW", reason="ok", numbers={"p": 0.5})
    assert r.to_dict()["numbers"] == {"p": 0.5} and r.kind == "" and r.policy_id == ""
