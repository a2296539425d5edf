"""Shadow mode (agentguard.core.shadow): a shadow guard decides and is audited, never changes an outcome.

The properties compare, on the same calls, the stack with its shadow guards against the stack of its
enforcing guards alone (outcomes identical), and a stack run wholly in shadow against the same stack
enforced (every enforced refusal is listed as a would-be refusal by the same guard)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.config import build_stack, parse_config
from agentguard.core import (BaseGuard, Context, Decision, GuardStack, InputError, JsonlAuditSink, MemoryAuditSink,
                             Pipeline, ToolCall, Verdict)
from agentguard.core.shadow import Shadowed, shadow_report

TOOLS = ("read_a", "send_b", "delete_c", "pay_d", "halt_e")
DECISIONS = (Decision.ALLOW, Decision.MODIFY, Decision.REJECT, Decision.ESCALATE, Decision.HALT)


class Table(BaseGuard):
    """A deterministic guard: ``table[tool]`` is its decision (ALLOW otherwise); ``raise`` fails."""

    def __init__(self, name: str, table: dict[str, Any]) -> None:
        self.name, self.table = name, table

    def check(self, context: Context, proposal: Any) -> Verdict:
        d = self.table.get(proposal.name, Decision.ALLOW)
        if d == "raise":
            raise RuntimeError(f"{self.name} broke")
        if d is Decision.MODIFY:
            return Verdict(d, "narrowed", self.name, action=ToolCall(proposal.name, {"x": 0}))
        return Verdict(d, f"{self.name} says {d.name} to {proposal.name}", self.name,
                       details={"rule": f"{self.name}/{proposal.name}"})


class Planter(BaseGuard):
    """An adversarial shadow guard: plants the fact the enforcing :class:`NeedsFact` trusts, then HALTs."""

    name = "planter"

    def check(self, context: Context, proposal: Any) -> Verdict:
        context.metadata["cleared"] = True
        return Verdict.halt("planted", self.name)


class NeedsFact(BaseGuard):
    name = "needs-fact"

    def check(self, context: Context, proposal: Any) -> Verdict:
        if context.metadata.get("cleared"):
            return Verdict.allow(self.name)
        return Verdict.reject("not cleared", self.name)


guard_table = st.dictionaries(st.sampled_from(TOOLS), st.sampled_from((*DECISIONS, "raise")), max_size=4)
stacks = st.lists(st.tuples(guard_table, st.booleans()), min_size=1, max_size=4)
calls = st.lists(st.sampled_from(TOOLS), min_size=1, max_size=8)


def _key(out: Any) -> tuple:
    v = out.verdict
    return (out.execute, out.stop, out.ask, v.decision, v.reason, v.guard,
            out.proposal.to_dict() if out.proposal is not None else None, v.details.get("verdicts"))


def _pair(spec: list[tuple[dict[str, Any], bool]]) -> tuple[Any, Any]:
    """(stack with its shadow guards, the enforcing guards alone) built from fresh guards."""
    guards = [(Table(f"g{i}", t), shadow) for i, (t, shadow) in enumerate(spec)]
    enforced = [g for g, s in guards if not s]
    shadows = [g for g, s in guards if s]
    alone = GuardStack(enforced) if enforced else Table("noop", {})
    if not shadows:
        return alone, alone
    full = Shadowed(GuardStack(enforced) if enforced else None, shadows)
    return full, alone


def _run(pipe: Pipeline, names: list[str], aio: bool) -> list[Any]:
    if aio:
        async def go() -> list[Any]:
            return [await pipe.adecide("r", ToolCall(n, {"x": 1})) for n in names]
        return asyncio.run(go())
    return [pipe.decide("r", ToolCall(n, {"x": 1})) for n in names]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stacks, calls, st.booleans())
def test_shadow_guards_change_no_outcome(spec: list[tuple[dict[str, Any], bool]], names: list[str], aio: bool) -> None:
    """Property: with any guards in shadow mode, every outcome (execute, stop, ask, verdict, deciding guard,
    executed proposal, the enforced trail) and the run's HALT latch equal those of the enforcing guards
    alone on the same calls, sync and async; a shadow HALT or error never halts the run."""
    full, alone = _pair(spec)
    if full is alone:
        return
    if not any(not s for _, s in spec):  # every guard in shadow: everything runs
        p = Pipeline(full)
        assert all(o.execute and o.verdict.decision is Decision.ALLOW for o in _run(p, names, aio))
        assert p.halted("r") is None
        return
    p_full, p_alone = Pipeline(full), Pipeline(alone)
    got, want = _run(p_full, names, aio), _run(p_alone, names, aio)
    assert [_key(o) for o in got] == [_key(o) for o in want]
    assert (p_full.halted("r") is None) == (p_alone.halted("r") is None)


@settings(max_examples=120, deadline=None)
@given(st.lists(guard_table, min_size=1, max_size=4), calls)
def test_the_report_lists_every_refusal_of_the_same_stack_enforced(tables: list[dict[str, Any]],
                                                                   names: list[str]) -> None:
    """Property: a stack run with ``shadow=True`` lets every call run, and its audit lists, for each call
    the same stack enforced refuses (a fresh run per call, so no latch hides one), that refusal: same
    guard, same decision; a call the enforced stack allows has no would-be refusal."""
    stack = GuardStack([Table(f"g{i}", t) for i, t in enumerate(tables)], short_circuit=False)
    audit = MemoryAuditSink()
    shadow_p, enforced_p = Pipeline(stack, shadow=True, audit=audit), Pipeline(stack)
    for i, n in enumerate(names):
        s_out = shadow_p.decide(f"s{i}", ToolCall(n, {"x": 1}))
        e_out = enforced_p.decide(f"e{i}", ToolCall(n, {"x": 1}))
        assert s_out.execute and s_out.proposal == ToolCall(n, {"x": 1})
        would = audit.records[-1].extra.get("shadow", [])
        refusals = {(w["guard"], w["decision"]) for w in would if Decision.parse(w["decision"]).refuses}
        if e_out.verdict.decision.refuses:
            assert (e_out.verdict.guard, e_out.verdict.decision.name) in refusals
        else:
            assert not refusals
    rep = shadow_report(audit.records)
    assert rep["decisions"] == len(names)
    assert rep["would_refuse"] == sum(r["would_refuse"] for r in rep["by_guard_rule"])


def test_a_shadow_guard_cannot_plant_facts_or_halt_the_run() -> None:
    """An adversarial shadow guard writes the fact an enforcing guard trusts and answers HALT: the enforcing
    guard still refuses every call, the run is not halted, the HALT is reported."""
    audit = MemoryAuditSink()
    p = Pipeline(Shadowed(GuardStack([NeedsFact()]), [Planter()]), audit=audit)
    for _ in range(3):
        out = p.decide("r", ToolCall("pay", {}))
        assert out.verdict.decision is Decision.REJECT and out.verdict.guard == "needs-fact" and not out.stop
    assert p.halted("r") is None and "cleared" not in p.run("r").context.metadata
    assert [e["decision"] for r in audit.records for e in r.extra["shadow"]] == ["HALT"] * 3


def test_a_shadow_verdict_that_cannot_be_read_changes_nothing() -> None:
    """A shadow guard answering with numbers that are not numbers (its verdict cannot be serialised) is
    reported as unreadable; the decision is the enforcing guard's."""

    class Garbled(BaseGuard):
        name = "garbled"

        def check(self, context: Context, proposal: Any) -> Verdict:
            return Verdict(Decision.REJECT, "x", self.name, numbers={"p": "not a number"})  # type: ignore[dict-item]

    audit = MemoryAuditSink()
    out = Pipeline(Shadowed(GuardStack([Table("ok", {})]), [Garbled()]), audit=audit).decide("r", ToolCall("a", {}))
    assert out.execute and out.verdict.guard == "ok"
    assert audit.records[0].extra["shadow"][0]["reason"] == "unreadable shadow verdict (ValueError)"


def test_a_shadow_guard_never_settles_an_approval() -> None:
    """A shadow guard with ``settle_approval`` (a remote guard) is not asked when a human approves."""

    class Settler(Table):
        def settle_approval(self, *a: Any) -> Verdict:
            return Verdict.reject("no", self.name)

    p = Pipeline(Shadowed(GuardStack([Table("asker", {"pay": Decision.ESCALATE})]), [Settler("s", {})]))
    asked = p.decide("r", ToolCall("pay", {}))
    assert asked.ask and p.resolve(asked, True).execute


def test_config_mode_keys_build_a_shadowed_stack(tmp_path: Any) -> None:
    cfg = {"guards": [{"type": "tool-rules", "name": "prod", "deny": ["delete_*"]},
                      {"type": "tool-rules", "name": "candidate", "mode": "shadow", "deny": ["send_*"]}]}
    guard = build_stack(cfg)
    assert isinstance(guard, Shadowed) and [g.name for g in guard.shadow_guards] == ["candidate"]
    sink = JsonlAuditSink(tmp_path / "audit.jsonl")
    p = Pipeline(guard, audit=sink)
    assert p.decide("r", ToolCall("send_mail", {"to": "x"})).execute
    assert not p.decide("r", ToolCall("delete_file", {"p": "y"})).execute
    sink.close()
    lines = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
    rep = shadow_report(lines, since=time.time() - 60)
    assert [(e["tool"], e["guard"], e["would"], e["enforced"]) for e in rep["entries"]] == [
        ("send_mail", "candidate", "REJECT", "ALLOW")]
    assert rep["by_guard_rule"][0]["rule"] == "tool send_mail is denied"
    assert shadow_report(lines, until=time.time() - 60)["decisions"] == 0
    whole = build_stack({"stack": {"mode": "shadow"}, "guards": cfg["guards"][:1]})
    assert Pipeline(whole).decide("r", ToolCall("delete_file", {})).execute
    with pytest.raises(InputError, match="mode must be one of enforce, shadow"):
        parse_config({"guards": [{"type": "tool-rules", "mode": "observe"}]})
    assert parse_config({"telemetry": {"enabled": True}, "guards": cfg["guards"]}).telemetry is True


def test_a_shadow_stack_reports_every_member_it_would_skip_enforced() -> None:
    # red team s24: GuardStack skips a member whose verdict cannot change its answer (core.guard._settled); a shadow
    # stack's report is every member's would-be refusal (the module docstring), so in shadow every member is asked
    from agentguard.policies.rules import ToolRuleGuard
    members = [ToolRuleGuard(name="a", deny=["rm_*"]), ToolRuleGuard(name="b", deny=["rm_*"])]
    enforced = GuardStack(members, on_error="reject").check(Context(), ToolCall("rm_file", {}))
    assert [t["guard"] for t in enforced.details["verdicts"]] == ["a"]  # enforced: b cannot change the answer
    s = Shadowed(None, [GuardStack(members, name="cand", on_error="reject")])
    for v in (s.check(Context(), ToolCall("rm_file", {})), asyncio.run(s.acheck(Context(), ToolCall("rm_file", {})))):
        assert v.decision is Decision.ALLOW
        assert [(e["guard"], e["decision"]) for e in v.details["shadow"]] == [("a", "REJECT"), ("b", "REJECT")]
    assert [t["guard"] for t in GuardStack(members, on_error="reject").check(
        Context(), ToolCall("rm_file", {})).details["verdicts"]] == ["a"]  # (and skipping again outside shadow)
