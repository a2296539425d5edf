"""LangChain v1 middleware against the real langchain/langgraph packages with a scripted model."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langchain.agents.middleware")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.types import Command  # noqa: E402

from agentguard import BaseGuard, Decision, GuardStack, ToolCall, Verdict, read_traces  # noqa: E402
from agentguard.integrations.langchain import AgentGuardMiddleware, scripted_chat_model  # noqa: E402
from agentguard.integrations.recording import TraceRecorder  # noqa: E402
from agentguard.integrations.rules import ToolRuleGuard  # noqa: E402


def call(name, args, cid):
    return {"name": name, "args": args, "id": cid, "type": "tool_call"}


def make_tools(effects):
    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        effects.append(("delete", path))
        return f"deleted {path}"

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        effects.append(("read", path))
        return f"contents of {path}"

    return [delete_file, read_file]


def stack():
    return GuardStack([ToolRuleGuard(deny=["delete_*"], name="no-deletes"),
                       ToolRuleGuard(arguments=[{"tool": "read_file", "arg": "path", "forbid": r"^/etc"}],
                                     name="no-etc")])


def run(agent, thread="t1", aio=False, payload=None):
    payload = payload or {"messages": [{"role": "user", "content": "go"}]}
    cfg = {"configurable": {"thread_id": thread}}
    if aio:
        return asyncio.run(agent.ainvoke(payload, cfg))
    return agent.invoke(payload, cfg)


@pytest.mark.parametrize("aio", [False, True])
def test_forbidden_call_never_executes_and_model_sees_refusal(aio, tmp_path):
    effects = []
    model = scripted_chat_model([
        AIMessage("", tool_calls=[call("delete_file", {"path": "/tmp/a"}, "c1")]),
        AIMessage("ok, I will not delete it"),
    ])
    rec = TraceRecorder(tmp_path / "t.jsonl")
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(stack(), recorder=rec)])
    out = run(agent, aio=aio)
    assert effects == []  # the tool body never ran
    tms = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(tms) == 1 and tms[0].status == "error"
    assert "no-deletes" in tms[0].content and "REJECT" in tms[0].content
    assert out["messages"][-1].content == "ok, I will not delete it"  # the model saw it and went on
    [trace] = read_traces(str(tmp_path / "t.jsonl"))
    assert trace.steps[0].action == ToolCall("delete_file", {"path": "/tmp/a"}, "c1")
    assert trace.steps[0].signals["decision"] == Decision.REJECT
    assert trace.labels["blocked"] == 1 and trace.labels["adapter"] == "langchain"


@pytest.mark.parametrize("aio", [False, True])
def test_allowed_call_executes_unchanged(aio):
    effects = []
    model = scripted_chat_model([
        AIMessage("", tool_calls=[call("read_file", {"path": "/tmp/notes.txt"}, "c1")]),
        AIMessage("done"),
    ])
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(stack())])
    out = run(agent, aio=aio)
    assert effects == [("read", "/tmp/notes.txt")]
    tm = [m for m in out["messages"] if isinstance(m, ToolMessage)][0]
    assert tm.content == "contents of /tmp/notes.txt" and tm.status != "error"


def test_argument_rule_blocks_only_bad_argument():
    effects = []
    model = scripted_chat_model([
        AIMessage("", tool_calls=[call("read_file", {"path": "/etc/shadow"}, "c1"),
                                  call("read_file", {"path": "/tmp/x"}, "c2")]),
        AIMessage("done"),
    ])
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(stack())])
    run(agent)
    assert effects == [("read", "/tmp/x")]


class CountingHalt(BaseGuard):
    """Halts on a given tool; counts how often it was asked (one check per call)."""

    name = "halter"

    def __init__(self, tool):
        self.tool, self.asked = tool, 0

    def check(self, context, proposal):
        self.asked += 1
        if proposal.name == self.tool:
            return Verdict.halt(f"{self.tool} predicted unsafe", probability=0.2, threshold=0.5)
        return Verdict.allow()


def test_after_model_halt_ends_run_before_any_tool_runs():
    effects = []
    guard = CountingHalt("delete_file")
    model = scripted_chat_model([
        AIMessage("", tool_calls=[call("read_file", {"path": "/tmp/x"}, "c1"),
                                  call("delete_file", {"path": "/tmp/x"}, "c2")]),
        AIMessage("never reached"),
    ])
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(guard)])
    out = run(agent)
    assert effects == []  # even the allowed sibling call did not run: the run was halted first
    assert out["agentguard_halt"] == "delete_file predicted unsafe"
    assert all(m.content != "never reached" for m in out["messages"])
    assert guard.asked == 2  # each proposal checked once


def test_halt_at_tool_time_ends_run():
    effects = []
    guard = CountingHalt("delete_file")
    model = scripted_chat_model([
        AIMessage("", tool_calls=[call("read_file", {"path": "/tmp/x"}, "c1")]),
        AIMessage("", tool_calls=[call("delete_file", {"path": "/tmp/x"}, "c2")]),
        AIMessage("never reached"),
    ])
    agent = create_agent(model, make_tools(effects),
                         middleware=[AgentGuardMiddleware(guard, check_proposals=False)])
    out = run(agent)
    assert effects == [("read", "/tmp/x")]
    assert out["agentguard_halt"] and out["messages"][-1].status == "error"
    # a new invocation on the same thread starts a new run (the halt is cleared)
    model2 = scripted_chat_model([AIMessage("fresh")])
    agent2 = create_agent(model2, make_tools(effects), middleware=[AgentGuardMiddleware(guard)])
    assert run(agent2, thread="t9")["messages"][-1].content == "fresh"


def test_on_reject_end_stops_the_run():
    effects = []
    model = scripted_chat_model([
        AIMessage("", tool_calls=[call("delete_file", {"path": "/tmp/a"}, "c1")]),
        AIMessage("never reached"),
    ])
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(stack(), on_reject="end")])
    out = run(agent)
    assert effects == [] and all(m.content != "never reached" for m in out["messages"])


class Raises(BaseGuard):
    name = "broken"

    def check(self, context, proposal):
        raise RuntimeError("model file missing")


def test_guard_error_fails_closed():
    effects = []
    model = scripted_chat_model([
        AIMessage("", tool_calls=[call("read_file", {"path": "/tmp/x"}, "c1")]),
        AIMessage("never reached"),
    ])
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(Raises())])
    out = run(agent)
    assert effects == []
    assert "model file missing" in out["agentguard_halt"]


def test_modify_runs_with_changed_arguments():
    class Redirect(BaseGuard):
        name = "redirect"

        def check(self, context, proposal):
            if proposal.arguments.get("path", "").startswith("/home"):
                return Verdict(Decision.MODIFY, "sandboxed", action=ToolCall(proposal.name, {"path": "/sandbox/x"}))
            return Verdict.allow()

    effects = []
    model = scripted_chat_model([
        AIMessage("", tool_calls=[call("read_file", {"path": "/home/u/x"}, "c1")]),
        AIMessage("done"),
    ])
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(Redirect())])
    run(agent)
    assert effects == [("read", "/sandbox/x")]


@pytest.mark.parametrize("approve", [True, False])
def test_escalate_uses_langgraph_interrupt(approve):
    effects = []
    guard = ToolRuleGuard(escalate=["delete_*"])
    model = scripted_chat_model([
        AIMessage("", tool_calls=[call("delete_file", {"path": "/tmp/a"}, "c1")]),
        AIMessage("finished"),
    ])
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(guard)],
                         checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "h1"}}
    out = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, cfg)
    assert effects == []  # paused before running
    [intr] = out["__interrupt__"]
    assert intr.value["type"] == "agentguard_approval"
    assert intr.value["tool_call"]["name"] == "delete_file"
    assert intr.value["verdict"]["decision"] == "ESCALATE"
    out = agent.invoke(Command(resume={"approved": approve}), cfg)
    assert effects == ([("delete", "/tmp/a")] if approve else [])
    assert out["messages"][-1].content == "finished"
