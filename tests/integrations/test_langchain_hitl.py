"""LangChain's own human-in-the-loop shapes on an ESCALATE (real create_agent + InMemorySaver), and
per-run facts reaching a policy through LangGraph's runtime context."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("langchain.agents.middleware")

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware.human_in_the_loop import HITLRequest  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.types import Command  # noqa: E402

from agentguard import BaseGuard, Decision, Verdict  # noqa: E402
from agentguard.integrations.langchain import (  # noqa: E402
    AgentGuardMiddleware,
    hitl_decision,
    scripted_chat_model,
)
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402


class CountingEscalate(BaseGuard):
    """ESCALATE deletes under /tmp, REJECT any other delete; counts checks."""

    name = "deletes"

    def __init__(self):
        self.checks = []

    def check(self, context, proposal):
        self.checks.append((proposal.name, dict(proposal.arguments)))
        if proposal.name != "delete_file":
            return Verdict.allow(self.name)
        if str(proposal.arguments.get("path", "")).startswith("/tmp/"):
            return Verdict(Decision.ESCALATE, "deleting needs a human", self.name)
        return Verdict(Decision.REJECT, "only /tmp may be deleted", self.name)


def agent_for(guard, effects, paths=("/tmp/a",)):
    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        effects.append(path)
        return f"deleted {path}"

    msgs = [AIMessage("", tool_calls=[{"name": "delete_file", "args": {"path": p}, "id": f"c{i}"}])
            for i, p in enumerate(paths)]
    model = scripted_chat_model([*msgs, AIMessage("finished")])
    return create_agent(model, [delete_file], middleware=[AgentGuardMiddleware(guard)],
                        checkpointer=InMemorySaver())


def start(agent, thread):
    cfg = {"configurable": {"thread_id": thread}}
    out = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, cfg)
    return cfg, out


def test_interrupt_is_langchains_hitl_request():
    effects, guard = [], CountingEscalate()
    agent = agent_for(guard, effects)
    _, out = start(agent, "shape")
    [intr] = out["__interrupt__"]
    v = intr.value
    assert set(HITLRequest.__annotations__) <= set(v)
    assert v["action_requests"] == [{"name": "delete_file", "args": {"path": "/tmp/a"},
                                     "description": "agentguard asks a human about delete_file: deleting needs a "
                                                    "human\n- deletes: ESCALATE (deleting needs a human)"}]
    assert [(t["guard"], t["decision"]) for t in v["agentguard"]["verdicts"]] == [("deletes", "ESCALATE")]
    assert v["review_configs"] == [{"action_name": "delete_file",
                                    "allowed_decisions": ["approve", "edit", "reject", "respond"]}]
    assert effects == []


def test_approve_runs_exactly_the_approved_call_and_checks_once():
    effects, guard = [], CountingEscalate()
    agent = agent_for(guard, effects)
    cfg, _ = start(agent, "approve")
    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg)
    assert effects == ["/tmp/a"]
    assert out["messages"][-1].content == "finished"
    assert guard.checks == [("delete_file", {"path": "/tmp/a"})]  # once, not again on resume


@pytest.mark.parametrize("decision,expect_effects,expect_text,status", [
    ({"type": "reject", "message": "not today"}, [], "refused by a human: not today", "error"),
    ({"type": "respond", "message": "pretend it is gone"}, [], "pretend it is gone", "success"),
    ({"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "/tmp/b"}}}, ["/tmp/b"],
     "deleted /tmp/b", "success"),
    ({"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "/etc/passwd"}}}, [],
     "the human's edit was refused: only /tmp may be deleted", "error"),
    ({"type": "edit", "edited_action": {"name": "send_email", "args": {}}}, [], "same tool", "error"),
    ({"type": "accept"}, [], "no valid decision", "error"),
    ({"decisions": [{"type": "approve"}, {"type": "approve"}]}, [], "no valid decision", "error"),
    ("yes please", [], "no valid decision", "error"),
])
def test_each_decision(decision, expect_effects, expect_text, status):
    effects, guard = [], CountingEscalate()
    agent = agent_for(guard, effects)
    cfg, _ = start(agent, "d")
    resume = decision if isinstance(decision, dict) and "decisions" in decision else {"decisions": [decision]}
    if isinstance(decision, str):
        resume = decision
    out = agent.invoke(Command(resume=resume), cfg)
    assert effects == expect_effects
    [tm] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert expect_text in tm.content and tm.status == status
    assert out["messages"][-1].content == "finished"  # the run goes on


def test_hitl_decision_parsing_fails_closed():
    assert hitl_decision({"decisions": [{"type": "approve"}]}) == {"type": "approve"}
    assert hitl_decision(True) == {"type": "approve"}
    for bad in (None, False, {"approved": "yes"}, {"decisions": []}, [], 1, {"type": "APPROVE"}):
        assert hitl_decision(bad)["type"] == "reject"
    # red team: a contradictory answer approved (either field sufficed); now both must approve
    for contradiction in ({"type": "reject", "approved": True}, {"type": "approve", "approved": False},
                          {"decisions": [{"type": "edit", "approved": True}]}, {"type": "respond", "approved": True}):
        assert hitl_decision(contradiction)["type"] != "approve", contradiction
    assert hitl_decision({"type": "approve", "approved": True}) == {"type": "approve"}


@dataclass
class Facts:
    user_info: dict


POLICY = Path(__file__).resolve().parents[2] / "examples" / "integrations" / "policies" / "transfer_limit.py"


def limit_guard():
    """The example's verified transfer-limit policy; its ``limit`` is a per-run fact (metadata)."""
    from agentguard.policies import ToolCallGuard

    return ToolCallGuard.from_config({
        "policy": str(POLICY), "tools": ["transfer_funds"],
        "fields": {"amount": {"from": "argument", "key": "amount"},
                   "limit": {"from": "metadata", "key": "user_info.transfer_limit"}},
    })


@pytest.mark.parametrize("limit,ran", [(5000, True), (500, False), (None, False)])
def test_runtime_context_facts_reach_a_verified_policy(limit, ran):
    effects = []

    @tool
    def transfer_funds(amount: int) -> str:
        """Transfer money."""
        effects.append(amount)
        return "sent"

    model = scripted_chat_model([
        AIMessage("", tool_calls=[{"name": "transfer_funds", "args": {"amount": 1200}, "id": "t1"}]),
        AIMessage("ok"),
    ])
    agent = create_agent(model, [transfer_funds], middleware=[AgentGuardMiddleware(limit_guard())],
                         context_schema=Facts)
    info = {} if limit is None else {"transfer_limit": limit}
    out = agent.invoke({"messages": [{"role": "user", "content": "pay"}]},
                       {"configurable": {"thread_id": f"f{limit}"}}, context=Facts(user_info=info))
    assert effects == ([1200] if ran else [])
    [tm] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    if limit == 500:
        assert "exceeds the transfer limit" in tm.content
    if limit is None:
        assert "no value in the request (metadata user_info.transfer_limit)" in tm.content


def test_state_facts_reach_the_guard_and_runtime_context_wins():
    seen = []

    class Spy(BaseGuard):
        name = "spy"

        def check(self, context, proposal):
            seen.append(dict(context.metadata))
            return Verdict.allow(self.name)

    @tool
    def noop() -> str:
        """Nothing."""
        return "ok"

    model = scripted_chat_model([AIMessage("", tool_calls=[{"name": "noop", "args": {}, "id": "n"}]),
                                 AIMessage("ok")])
    agent = create_agent(model, [noop], middleware=[AgentGuardMiddleware(Spy())], context_schema=Facts)
    agent.invoke({"messages": [{"role": "user", "content": "x"}],
                  "agentguard_facts": {"task": "trip", "user_info": {"age": 1}}},
                 {"configurable": {"thread_id": "s"}}, context=Facts(user_info={"age": 40}))
    assert seen and all(m["task"] == "trip" and m["user_info"] == {"age": 40} for m in seen)


def test_rule_guard_escalate_then_approve_via_hitl():
    effects = []
    agent = agent_for(ToolRuleGuard(escalate=["delete_*"]), effects)
    cfg, _ = start(agent, "rules")
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg)
    assert effects == ["/tmp/a"]


@pytest.mark.parametrize("decision,expect_effects,checks", [
    ({"type": "approve"}, ["/tmp/a"], ["/tmp/a"]),
    ({"type": "reject"}, [], ["/tmp/a"]),
    ({"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "/tmp/b"}}}, ["/tmp/b"],
     ["/tmp/a", "/tmp/b"]),
])
def test_async_resume_asks_once_and_runs_exactly_the_answer(decision, expect_effects, checks):
    """ainvoke: the resumed tool node finds the asked outcome (the guard is asked once); an edit is decided
    again and, asking again, is the human's approval of exactly the edit."""
    import asyncio

    effects, guard = [], CountingEscalate()
    agent = agent_for(guard, effects)
    cfg = {"configurable": {"thread_id": "async"}}
    out = asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "go"}]}, cfg))
    assert out["__interrupt__"] and effects == []
    out = asyncio.run(agent.ainvoke(Command(resume={"decisions": [decision]}), cfg))
    assert effects == expect_effects
    assert [a["path"] for _, a in guard.checks] == checks
    assert out["messages"][-1].content == "finished"


def test_human_reject_under_tt_ends_the_run():
    """A human's refusal goes through the strategy like any refusal: under TT the run ends."""
    effects = []

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        effects.append(path)
        return "deleted"

    model = scripted_chat_model([AIMessage("", tool_calls=[{"name": "delete_file", "args": {"path": "/tmp/a"},
                                                            "id": "c"}]), AIMessage("never reached")])
    agent = create_agent(model, [delete_file], checkpointer=InMemorySaver(),
                         middleware=[AgentGuardMiddleware(CountingEscalate(), strategy="TT")])
    cfg, _ = start(agent, "tt")
    out = agent.invoke(Command(resume={"decisions": [{"type": "reject", "message": "no"}]}), cfg)
    assert effects == [] and out["agentguard_halt"]
    assert all(m.content != "never reached" for m in out["messages"])


def test_escalate_reject_refuses_without_asking():
    effects = []
    agent = create_agent(
        scripted_chat_model([AIMessage("", tool_calls=[{"name": "delete_file", "args": {"path": "/tmp/a"},
                                                        "id": "c"}]), AIMessage("finished")]),
        [_delete_tool(effects)], checkpointer=InMemorySaver(),
        middleware=[AgentGuardMiddleware(CountingEscalate(), escalate="reject")])
    _, out = start(agent, "no-ask")
    assert "__interrupt__" not in out and effects == []
    [tm] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert tm.status == "error" and "needs human approval (not asked)" in tm.content


def _delete_tool(effects):
    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        effects.append(path)
        return "deleted"

    return delete_file
