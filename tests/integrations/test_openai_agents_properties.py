"""The one-path properties through the real Agents SDK (tests/integrations/drivers/openai_agents.py):

(a) random turns (duplicate, empty and unique call ids, parallel calls in one turn) against a stack that
    denies ``delete_*``: no refused call ever runs; every call the SDK delivers and the stack allows runs
    exactly once with exactly its arguments (the SDK's own call-id rule, written out in
    ``sdk_delivered``, is the oracle for which calls it delivers);
(b) a refusing guard + an escalating guard, approved: the refused call never runs, the approved one runs
    exactly once, and the approval request lists every guard's verdict;
(c) the enforcement strategy changes what runs (table-driven: None, TEH, AB, TT, CRP, CRP+TEH, CRP+AB).
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

pytest.importorskip("agents")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard.core import BaseGuard, Decision, GuardStack, ToolCall, Verdict  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402
from drivers import TOOLS  # noqa: E402
from drivers.openai_agents import OpenAIAgentsDriver, sdk_delivered  # noqa: E402

DRIVER = OpenAIAgentsDriver()


def call(name, target="t", amount=1, cid=""):
    return ToolCall(name, {"target": target, "amount": amount}, cid)


@st.composite
def turns(draw):
    out, n = [], 0
    for _ in range(draw(st.integers(1, 4))):
        turn = []
        for _ in range(draw(st.integers(0, 4))):
            n += 1
            cid = draw(st.sampled_from(["", "a", "b", f"u{n}", f"u{n}", f"u{n}"]))
            turn.append(call(draw(st.sampled_from(TOOLS)), draw(st.sampled_from(["x", "y"])),
                             draw(st.integers(0, 2)), cid))
        out.append(turn)
    return out


def as_run(calls):
    return Counter((c.name, tuple(sorted(c.arguments.items()))) for c in calls)


def ran(result):
    return Counter((n, tuple(sorted(a.items()))) for n, a in result.executed)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns())
def test_a_refused_never_runs_allowed_runs_once_with_its_arguments(script):
    res = DRIVER.run(GuardStack([ToolRuleGuard(deny=["delete_*"], name="no-deletes")]), script)
    assert not any(name.startswith("delete_") for name, _ in res.executed)
    delivered, refused_by_sdk = sdk_delivered(script)
    allowed = [c for turn in delivered for c in turn if not c.name.startswith("delete_")]
    assert ran(res) == as_run(allowed)
    assert res.stopped == refused_by_sdk and (res.sdk_error is not None) == refused_by_sdk
    assert res.asked == []


def refusing_and_escalating():
    return GuardStack([ToolRuleGuard(deny=["delete_*"], name="policy"),
                       ToolRuleGuard(escalate=["delete_*", "transfer_*"], name="ask-human")])


def test_b_refused_call_is_never_offered_and_approval_shows_every_verdict():
    script = [[call("delete_note", "x", 800, "c1"), call("transfer_funds", "y", 5, "c2")],
              [call("read_note", "x", 1, "c3")]]
    res = DRIVER.run(refusing_and_escalating(), script, approve=True)
    assert res.executed == [("transfer_funds", {"target": "y", "amount": 5}),
                            ("read_note", {"target": "x", "amount": 1})]
    [asked] = res.asked
    assert asked["call"]["name"] == "transfer_funds"
    assert {v["guard"]: v["decision"] for v in asked["verdicts"]} == {"policy": "ALLOW", "ask-human": "ESCALATE"}
    assert "policy: ALLOW" in asked["text"] and "ask-human: ESCALATE" in asked["text"]
    refused = DRIVER.run(refusing_and_escalating(), script, approve=False)
    assert refused.executed == [("read_note", {"target": "x", "amount": 1})] and len(refused.asked) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns(), st.booleans())
def test_b_random_turns_with_approvals(script, approve):
    res = DRIVER.run(refusing_and_escalating(), script, approve=approve)
    assert not any(name.startswith("delete_") for name, _ in res.executed)
    delivered, _ = sdk_delivered(script)
    flat = [c for turn in delivered for c in turn]
    expect = [c for c in flat
              if not c.name.startswith("delete_") and (approve or not c.name.startswith("transfer_"))]
    assert ran(res) == as_run(expect)  # an approved call runs exactly once, with exactly its arguments
    assert len(res.asked) == sum(c.name.startswith("transfer_") for c in flat)
    for a in res.asked:
        assert a["call"]["name"] == "transfer_funds" and len(a["verdicts"]) == 2


class Limit(BaseGuard):
    """Refuses transfer_funds over 100."""

    name = "limit"

    def check(self, context, proposal):
        if proposal.name == "transfer_funds" and proposal.arguments["amount"] > 100:
            return Verdict(Decision.REJECT, "over the limit of 100", self.name)
        return Verdict.allow(self.name)


BIG = [[call("transfer_funds", "x", 200 + i, f"b{i}")] for i in range(4)]
SMALL = [[call("transfer_funds", "x", 50, "s1")]]
READ = [[call("read_note", "x", 1, "r1")]]
SMALL_RUN = [("transfer_funds", {"target": "x", "amount": 50})]
READ_RUN = [("read_note", {"target": "x", "amount": 1})]

# (strategy, script, what runs, stopped): one refusal then allowed calls; four refusals in a row (CRP's
# max_rounds is 3, so the fourth applies `then`) then allowed calls
TABLE = [
    (None, BIG[:1] + SMALL + READ, SMALL_RUN + READ_RUN, False),       # default: refused, the run goes on
    ("AB", BIG[:1] + SMALL + READ, SMALL_RUN + READ_RUN, False),
    ("TEH", BIG[:1] + SMALL + READ, READ_RUN, False),                   # the tool is halted for the run
    ("TT", BIG[:1] + SMALL + READ, [], True),                           # the run ends
    ("CRP", BIG[:3] + SMALL + READ, SMALL_RUN + READ_RUN, False),       # three rounds: the run goes on
    ("CRP", BIG + SMALL + READ, [], True),                              # the fourth: then = stop
    ("CRP+AB", BIG + SMALL + READ, SMALL_RUN + READ_RUN, False),
    ("CRP+TEH", BIG[:3] + SMALL + READ, SMALL_RUN + READ_RUN, False),
    ("CRP+TEH", BIG + SMALL + READ, READ_RUN, False),       # the fourth halts the tool
]


@pytest.mark.parametrize("strategy,script,runs,stopped", TABLE,
                         ids=["default", "AB", "TEH", "TT", "CRP-3", "CRP-4", "CRP+AB-4", "CRP+TEH-3", "CRP+TEH-4"])
def test_c_strategy_changes_what_runs(strategy, script, runs, stopped):
    res = DRIVER.run(Limit(), script, strategy=strategy)
    assert res.executed == runs and res.stopped == stopped


def test_c_policy_strategy_applies_without_adapter_strategy():
    """A guard's own ``strategy`` (what a policy table's ``strategy = "TEH"`` sets) takes effect here."""
    from agentguard.core.strategies import strategy

    g = Limit()
    g.strategy = strategy("TEH")
    res = DRIVER.run(g, BIG[:1] + SMALL + READ)
    assert res.executed == READ_RUN


def test_c_crp_gives_the_violation_back_to_the_model():
    from agents import Agent, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from agentguard.integrations.openai_agents import AgentsGuard

    @function_tool
    def transfer_funds(target: str, amount: int) -> str:
        """Transfer."""
        return "sent"

    ag = AgentsGuard(Limit(), strategy="CRP")
    script = [[function_call("transfer_funds", {"target": "x", "amount": 500}, call_id="c1")],
              [assistant_message("retry later")]]
    agent = Agent(name="a", model=ScriptedModel(script), tools=ag.guard_tools([transfer_funds]))
    from agents import RunConfig

    out = asyncio.run(Runner.run(agent, "pay", run_config=RunConfig(tracing_disabled=True)))
    [msg] = [i.output for i in out.new_items if type(i).__name__ == "ToolCallOutputItem"]
    assert "over the limit of 100" in msg and "Propose a different action" in msg and "attempt 1 of 3" in msg
    assert out.final_output == "retry later"
