"""ESCALATE through the Agents SDK's own approval flow (needs_approval -> interruptions -> RunState.approve
/ reject -> resume), and per-run facts from the run context reaching a verified policy. Real `agents`
package, its scripted model; no network."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, function_tool, set_trace_processors  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from agentguard import BaseGuard, Decision, Verdict  # noqa: E402
from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402

POLICY = Path(__file__).resolve().parents[2] / "examples" / "integrations" / "policies" / "transfer_limit.py"


class Escalating(BaseGuard):
    """ESCALATE deletes under /tmp, REJECT other deletes, ALLOW the rest; counts checks."""

    name = "deletes"

    def __init__(self):
        self.checks = []

    def check(self, context, proposal):
        self.checks.append(proposal.name)
        if proposal.name != "delete_file":
            return Verdict.allow(self.name)
        if str(proposal.arguments.get("path", "")).startswith("/tmp/"):
            return Verdict(Decision.ESCALATE, "deleting needs a human", self.name)
        return Verdict(Decision.REJECT, "only /tmp may be deleted", self.name)


def build(guard, effects, steps):
    set_trace_processors([])

    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        effects.append(path)
        return f"deleted {path}"

    ag = AgentsGuard(guard)
    agent = Agent(name="a", instructions="x", model=ScriptedModel(steps), tools=ag.guard_tools([delete_file]))
    return agent


@pytest.mark.parametrize("approve", [True, False])
def test_escalate_is_an_sdk_interruption_and_the_sdk_approval_is_the_approval(approve):
    effects, guard = [], Escalating()
    agent = build(guard, effects, [
        [function_call("delete_file", {"path": "/tmp/a"}, call_id="c1")],
        [assistant_message("done")],
    ])

    async def go():
        first = await Runner.run(agent, "clean")
        assert effects == [] and len(first.interruptions) == 1
        [item] = first.interruptions
        assert item.name == "delete_file"
        state = first.to_state()
        state.approve(item) if approve else state.reject(item)
        return await Runner.run(agent, state)

    out = asyncio.run(go())
    assert effects == (["/tmp/a"] if approve else [])
    assert out.final_output == "done"
    assert guard.checks == ["delete_file"]  # one guard check for the call, across the interruption


def test_reject_still_refuses_without_asking_and_run_continues():
    effects, guard = [], Escalating()
    agent = build(guard, effects, [
        [function_call("delete_file", {"path": "/srv/db"}, call_id="c1")],
        [assistant_message("could not")],
    ])
    out = asyncio.run(Runner.run(agent, "clean"))
    assert effects == [] and not out.interruptions and out.final_output == "could not"
    assert any("only /tmp may be deleted" in str(getattr(i, "output", "")) for i in out.new_items)


def test_only_the_approved_call_runs():
    """Two escalated calls in one turn; the human approves one and rejects the other."""
    effects, guard = [], Escalating()
    agent = build(guard, effects, [
        [function_call("delete_file", {"path": "/tmp/a"}, call_id="c1"),
         function_call("delete_file", {"path": "/tmp/b"}, call_id="c2")],
        [assistant_message("done")],
    ])

    async def go():
        first = await Runner.run(agent, "clean")
        items = {i.raw_item.call_id: i for i in first.interruptions}
        assert set(items) == {"c1", "c2"}
        state = first.to_state()
        state.approve(items["c2"])
        state.reject(items["c1"])
        return await Runner.run(agent, state)

    asyncio.run(go())
    assert effects == ["/tmp/b"]


@dataclass
class Facts:
    user_info: dict
    run_id: str = "r"


@pytest.mark.parametrize("limit,ran", [(5000, True), (500, False), (None, False)])
def test_run_context_facts_reach_a_verified_policy(limit, ran):
    from agentguard.policies import ToolCallGuard

    guard = ToolCallGuard.from_config({
        "policy": str(POLICY), "tools": ["transfer_funds"],
        "fields": {"amount": {"from": "argument", "key": "amount"},
                   "limit": {"from": "metadata", "key": "user_info.transfer_limit"}},
    })
    set_trace_processors([])
    effects = []

    @function_tool
    def transfer_funds(amount: int) -> str:
        """Transfer money."""
        effects.append(amount)
        return "sent"

    ag = AgentsGuard(guard)
    agent = Agent(name="a", instructions="x", tools=ag.guard_tools([transfer_funds]), model=ScriptedModel([
        [function_call("transfer_funds", {"amount": 1200}, call_id="t1")], [assistant_message("ok")]]))
    info = {} if limit is None else {"transfer_limit": limit}
    out = asyncio.run(Runner.run(agent, "pay", context=Facts(info, run_id=f"run-{limit}")))
    assert effects == ([1200] if ran else [])
    assert out.final_output == "ok"  # the run goes on after a refusal
    if limit == 500:
        assert any("exceeds the transfer limit" in str(getattr(i, "output", "")) for i in out.new_items)


def test_sdk_approval_is_resolved_through_the_pipeline_and_audited():
    """The SDK's answer is the human's answer to Pipeline.resolve: an audit record of kind "approval" with
    the approver; a rejection (for which the SDK runs no guardrail) is settled, through the strategy, at
    the run's next call: under TEH the rejected tool is halted for the run."""
    from agents import RunConfig

    from agentguard.core.audit import MemoryAuditSink
    from agentguard.integrations.openai_agents import APPROVER

    for approve in (True, False):
        effects, sink = [], MemoryAuditSink()
        set_trace_processors([])

        @function_tool
        def delete_file(path: str) -> str:
            """Delete a file."""
            effects.append(path)
            return f"deleted {path}"

        ag = AgentsGuard(Escalating(), audit=sink, strategy="TEH")
        agent = Agent(name="a", instructions="x", tools=ag.guard_tools([delete_file]), model=ScriptedModel([
            [function_call("delete_file", {"path": "/tmp/a"}, call_id="c1")],
            [function_call("delete_file", {"path": "/tmp/b"}, call_id="c2")],
            [assistant_message("done")]]))

        async def go():
            cfg = RunConfig(tracing_disabled=True)
            first = await Runner.run(agent, "clean", run_config=cfg, context={"run_id": f"r-{approve}"})
            [item] = first.interruptions
            shown = ag.approval_request(item)
            assert shown["verdicts"][0]["decision"] == "ESCALATE" and "deleting needs a human" in shown["text"]
            state = first.to_state()
            state.approve(item) if approve else state.reject(item)
            return await Runner.run(agent, state, run_config=cfg)

        out = asyncio.run(go())
        approvals = [r for r in sink.records if r.kind == "approval"]
        if approve:  # approved once: runs once; the second call is asked about again
            assert effects == ["/tmp/a"] and len(out.interruptions) == 1
            assert [(r.decision, r.extra["approver"]) for r in approvals] == [("ALLOW", APPROVER)]
        else:  # rejected: settled (audited, through the strategy) before the run's next decision
            assert effects == []
            assert [(r.decision, r.extra["approver"]) for r in approvals] == [("REJECT", APPROVER)]
            kinds = [(r.kind, r.call.get("arguments", {}).get("path")) for r in sink.records]
            assert kinds.index(("approval", "/tmp/a")) < kinds.index(("check", "/tmp/b"))
            assert ag.pipeline.run(f"r-{approve}").context.metadata["halted_tools"] == {"delete_file"}


def test_a_halted_tool_is_not_offered_for_approval_again():
    from agents import RunConfig

    set_trace_processors([])
    effects = []

    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        effects.append(path)
        return "deleted"

    ag = AgentsGuard(Escalating(), strategy="TEH")
    agent = Agent(name="a", instructions="x", tools=ag.guard_tools([delete_file]), model=ScriptedModel([
        [function_call("delete_file", {"path": "/tmp/a"}, call_id="c1")],
        [function_call("delete_file", {"path": "/tmp/b"}, call_id="c2")],
        [assistant_message("done")]]))

    async def go():
        cfg = RunConfig(tracing_disabled=True)
        first = await Runner.run(agent, "clean", run_config=cfg, context={"run_id": "teh"})
        state = first.to_state()
        state.reject(first.interruptions[0])
        return await Runner.run(agent, state, run_config=cfg)

    out = asyncio.run(go())
    assert effects == [] and not out.interruptions
