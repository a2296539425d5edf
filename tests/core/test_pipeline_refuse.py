"""Pipeline.decide/adecide ``refuse=``: a refusal an adapter reaches before the guard (arguments its framework
would read otherwise, a cancelled request) is one decision of the one path: enforced, audited, remembered."""

from __future__ import annotations

import asyncio

from agentguard.core import BaseGuard, Decision, ToolCall, Verdict
from agentguard.core.pipeline import Pipeline


class Sink:
    def __init__(self) -> None:
        self.records: list = []

    def write(self, rec) -> None:
        self.records.append(rec)


class Counting(BaseGuard):
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def check(self, context, proposal):
        self.calls += 1
        return Verdict.allow(self.name)


def test_a_refusal_before_the_guard_is_audited_and_the_guard_is_not_asked():
    guard, sink = Counting(), Sink()
    pipe = Pipeline(guard, audit=sink, adapter="t")
    out = pipe.decide("r", ToolCall("x", {}), refuse=Verdict(Decision.REJECT, "bad params", "mcp-proxy"))
    assert not out.execute and out.call is None and guard.calls == 0
    [rec] = sink.records
    assert (rec.decision, rec.reason, rec.guard, rec.call["name"]) == ("REJECT", "bad params", "mcp-proxy", "x")
    out = asyncio.run(pipe.adecide("r", ToolCall("x", {}), refuse=Verdict(Decision.HALT, "stop", "t")))
    assert out.stop and pipe.halted("r") is not None and guard.calls == 0
    assert pipe.decide("r", ToolCall("y", {})).verdict.decision is Decision.HALT  # the latch holds


def test_a_refuse_that_allows_is_never_an_allowance():
    for v in (Verdict.allow("x"), Verdict(Decision.MODIFY, "m", "x"), "REJECT", {"decision": "ALLOW"}):
        out = Pipeline(Counting()).decide("r", ToolCall("x", {}), refuse=v)  # type: ignore[arg-type]
        assert not out.execute and out.verdict.decision is Decision.HALT


def test_a_halted_run_answers_halt_before_a_refusal():
    pipe = Pipeline(Counting())
    pipe.decide("r", ToolCall("x", {}), refuse=Verdict(Decision.HALT, "first", "t"))
    out = pipe.decide("r", ToolCall("x", {}), refuse=Verdict(Decision.REJECT, "second", "t"))
    assert out.verdict.decision is Decision.HALT and "first" in out.verdict.reason
