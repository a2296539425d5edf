"""Red team (session 22): LangChain's own ``HumanInTheLoopMiddleware`` listed after the gate edits a call inside it.

That middleware applies a reviewer's ``edit`` in its ``wrap_tool_call`` (batch mode: kept in the state under
``hitl_edited_tool_calls``; per-call mode: the interrupt is raised there), which sits inside the gate when it is
listed after it. The gate judged the model's call; then an edit to another tool ran unjudged
(``read_path("/etc/shadow")`` past a rule forbidding it), and an edit of the same tool was dropped by the gate's
pinned reading, so the model's original call ran though the reviewer had replaced it. Now a batch edit is judged as
that middleware will run it (:func:`~agentguard.integrations.langchain.hitl.as_reviewed`, its own reading), and a call
whose arguments are replaced after the decision (the per-call edit) runs neither way: it is refused. Oracle: the real
``create_agent`` with the real middleware, without the gate; side-effect tools record what ran."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langchain.agents.middleware")

from hypothesis import given, settings, strategies as st  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import HumanInTheLoopMiddleware  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.types import Command  # noqa: E402

from agentguard.integrations.langchain import AgentGuardMiddleware, AgentGuardToolGate, scripted_chat_model  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

RULES = ToolRuleGuard(allow=["delete_path", "read_path"], arguments=[
    {"tool": "delete_path", "arg": "path", "forbid": "^/etc"},
    {"tool": "read_path", "arg": "path", "forbid": "^/etc"},
], name="rules")


def reviewed(decision: dict, *, mode: str = "batch", gate: type | None = AgentGuardMiddleware, gate_first: bool = True,
             use_async: bool = False) -> list:
    """The model proposes ``delete_path("/tmp/x")``; the reviewer answers ``decision``; what the tools ran."""
    ran: list = []

    @tool
    def delete_path(path: str) -> str:
        """Delete a path."""
        ran.append(("delete_path", path))
        return "ok"

    @tool
    def read_path(path: str) -> str:
        """Read a path."""
        ran.append(("read_path", path))
        return "ok"

    model = scripted_chat_model([AIMessage("", tool_calls=[{"name": "delete_path", "args": {"path": "/tmp/x"},
                                                            "id": "c1"}]), AIMessage("done"), AIMessage("done")])
    hitl = HumanInTheLoopMiddleware(interrupt_on={"delete_path": True}, **({"interrupt_mode": mode}
                                                                           if mode == "per_call" else {}))
    middleware = [hitl] if gate is None else ([gate(RULES), hitl] if gate_first else [hitl, gate(RULES)])
    agent = create_agent(model, [delete_path, read_path], middleware=middleware, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    resume = Command(resume=decision if mode == "per_call" else {"decisions": [decision]})

    async def arun() -> None:
        await agent.ainvoke({"messages": [{"role": "user", "content": "go"}]}, cfg)
        await agent.ainvoke(resume, cfg)

    try:
        if use_async:
            asyncio.run(arun())
        else:
            agent.invoke({"messages": [{"role": "user", "content": "go"}]}, cfg)
            agent.invoke(resume, cfg)
    except Exception:  # noqa: BLE001 - what ran is what the test reads
        pass
    return ran


def edit(name: str, path: str) -> dict:
    return {"type": "edit", "edited_action": {"name": name, "args": {"path": path}}}


def test_the_oracle_the_middleware_runs_the_reviewers_edit():
    assert reviewed(edit("read_path", "/etc/shadow"), gate=None) == [("read_path", "/etc/shadow")]
    assert reviewed(edit("delete_path", "/tmp/y"), gate=None) == [("delete_path", "/tmp/y")]
    assert reviewed(edit("delete_path", "/tmp/y"), mode="per_call", gate=None) == [("delete_path", "/tmp/y")]


@pytest.mark.parametrize("gate", [AgentGuardMiddleware, AgentGuardToolGate])
@pytest.mark.parametrize("use_async", [False, True])
def test_an_edit_inside_the_gate_is_judged_as_it_will_run(gate, use_async):
    assert reviewed(edit("read_path", "/etc/shadow"), gate=gate, use_async=use_async) == []
    assert reviewed(edit("delete_path", "/etc/shadow"), gate=gate, use_async=use_async) == []
    assert reviewed(edit("delete_path", "/tmp/y"), gate=gate, use_async=use_async) == [("delete_path", "/tmp/y")]


def test_a_per_call_edit_inside_the_gate_runs_neither_the_edit_nor_the_original():
    assert reviewed(edit("delete_path", "/etc/shadow"), mode="per_call") == []
    assert reviewed(edit("delete_path", "/tmp/y"), mode="per_call") == []  # refused: the edit came after the decision
    assert reviewed({"type": "approve"}, mode="per_call") == [("delete_path", "/tmp/x")]


DECISIONS = st.sampled_from([{"type": "approve"}, {"type": "reject", "message": "no"},
                             edit("delete_path", "/tmp/y"), edit("delete_path", "/etc/passwd"),
                             edit("read_path", "/tmp/r"), edit("read_path", "/etc/shadow")])


@settings(max_examples=10, deadline=None)
@given(DECISIONS, st.sampled_from(["batch", "per_call"]), st.booleans())
def test_property_what_runs_is_the_reviewers_call_and_the_rules_allow_it(decision, mode, gate_first):
    """Whichever side of the gate the middleware sits, whatever the reviewer answers: at most the call the reviewer
    chose runs (never the model's call once replaced or rejected), and only when the rules allow it."""
    if mode == "per_call" and decision.get("edited_action", {}).get("name") == "read_path":
        return  # per-call edits keep the tool (LangChain's schema pins it)
    ran = reviewed(decision, mode=mode, gate_first=gate_first)
    action = decision.get("edited_action") or {"name": "delete_path", "args": {"path": "/tmp/x"}}
    chosen = [] if decision["type"] == "reject" else [(action["name"], action["args"]["path"])]
    assert ran in ([], chosen)
    assert not any(path.startswith("/etc") for _, path in ran)
