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
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402


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
    return GuardStack(
        [
            ToolRuleGuard(deny=["delete_*"], name="no-deletes"),
            ToolRuleGuard(
                arguments=[{"tool": "read_file", "arg": "path", "forbid": r"^/etc"}], name="no-etc"
            ),
        ]
    )


def run(agent, thread="t1", aio=False, payload=None):
    payload = payload or {"messages": [{"role": "user", "content": "go"}]}
    cfg = {"configurable": {"thread_id": thread}}
    if aio:
        return asyncio.run(agent.ainvoke(payload, cfg))
    return agent.invoke(payload, cfg)


@pytest.mark.parametrize("aio", [False, True])
def test_forbidden_call_never_executes_and_model_sees_refusal(aio, tmp_path):
    effects = []
    model = scripted_chat_model(
        [
            AIMessage("", tool_calls=[call("delete_file", {"path": "/tmp/a"}, "c1")]),
            AIMessage("ok, I will not delete it"),
        ]
    )
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
    model = scripted_chat_model(
        [
            AIMessage("", tool_calls=[call("read_file", {"path": "/tmp/notes.txt"}, "c1")]),
            AIMessage("done"),
        ]
    )
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(stack())])
    out = run(agent, aio=aio)
    assert effects == [("read", "/tmp/notes.txt")]
    tm = [m for m in out["messages"] if isinstance(m, ToolMessage)][0]
    assert tm.content == "contents of /tmp/notes.txt" and tm.status != "error"


def test_argument_rule_blocks_only_bad_argument():
    effects = []
    model = scripted_chat_model(
        [
            AIMessage(
                "",
                tool_calls=[
                    call("read_file", {"path": "/etc/shadow"}, "c1"),
                    call("read_file", {"path": "/tmp/x"}, "c2"),
                ],
            ),
            AIMessage("done"),
        ]
    )
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
    model = scripted_chat_model(
        [
            AIMessage(
                "",
                tool_calls=[
                    call("read_file", {"path": "/tmp/x"}, "c1"),
                    call("delete_file", {"path": "/tmp/x"}, "c2"),
                ],
            ),
            AIMessage("never reached"),
        ]
    )
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(guard)])
    out = run(agent)
    assert effects == []  # even the allowed sibling call did not run: the run was halted first
    assert out["agentguard_halt"] == "delete_file predicted unsafe"
    assert all(m.content != "never reached" for m in out["messages"])
    assert guard.asked == 2  # each proposal checked once


def test_halt_at_tool_time_ends_run():
    effects = []
    guard = CountingHalt("delete_file")
    model = scripted_chat_model(
        [
            AIMessage("", tool_calls=[call("read_file", {"path": "/tmp/x"}, "c1")]),
            AIMessage("", tool_calls=[call("delete_file", {"path": "/tmp/x"}, "c2")]),
            AIMessage("never reached"),
        ]
    )
    agent = create_agent(
        model, make_tools(effects), middleware=[AgentGuardMiddleware(guard, check_proposals=False)]
    )
    out = run(agent)
    assert effects == [("read", "/tmp/x")]
    assert out["agentguard_halt"] and out["messages"][-1].status == "error"
    # a new invocation on the same thread starts a new run (the halt is cleared)
    model2 = scripted_chat_model([AIMessage("fresh")])
    agent2 = create_agent(model2, make_tools(effects), middleware=[AgentGuardMiddleware(guard)])
    assert run(agent2, thread="t9")["messages"][-1].content == "fresh"


def test_on_reject_end_stops_the_run():
    effects = []
    model = scripted_chat_model(
        [
            AIMessage("", tool_calls=[call("delete_file", {"path": "/tmp/a"}, "c1")]),
            AIMessage("never reached"),
        ]
    )
    agent = create_agent(
        model, make_tools(effects), middleware=[AgentGuardMiddleware(stack(), on_reject="end")]
    )
    out = run(agent)
    assert effects == [] and all(m.content != "never reached" for m in out["messages"])


class Raises(BaseGuard):
    name = "broken"

    def check(self, context, proposal):
        raise RuntimeError("model file missing")


def test_guard_error_fails_closed():
    effects = []
    model = scripted_chat_model(
        [
            AIMessage("", tool_calls=[call("read_file", {"path": "/tmp/x"}, "c1")]),
            AIMessage("never reached"),
        ]
    )
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(Raises())])
    out = run(agent)
    assert effects == []
    assert "model file missing" in out["agentguard_halt"]


def test_modify_runs_with_changed_arguments():
    class Redirect(BaseGuard):
        name = "redirect"

        def check(self, context, proposal):
            if proposal.arguments.get("path", "").startswith("/home"):
                return Verdict(
                    Decision.MODIFY, "sandboxed", action=ToolCall(proposal.name, {"path": "/sandbox/x"})
                )
            return Verdict.allow()

    effects = []
    model = scripted_chat_model(
        [
            AIMessage("", tool_calls=[call("read_file", {"path": "/home/u/x"}, "c1")]),
            AIMessage("done"),
        ]
    )
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(Redirect())])
    run(agent)
    assert effects == [("read", "/sandbox/x")]


@pytest.mark.parametrize("approve", [True, False])
def test_escalate_uses_langgraph_interrupt(approve):
    effects = []
    guard = ToolRuleGuard(escalate=["delete_*"])
    model = scripted_chat_model(
        [
            AIMessage("", tool_calls=[call("delete_file", {"path": "/tmp/a"}, "c1")]),
            AIMessage("finished"),
        ]
    )
    agent = create_agent(
        model, make_tools(effects), middleware=[AgentGuardMiddleware(guard)], checkpointer=InMemorySaver()
    )
    cfg = {"configurable": {"thread_id": "h1"}}
    out = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, cfg)
    assert effects == []  # paused before running
    [intr] = out["__interrupt__"]
    assert intr.value["action_requests"][0]["name"] == "delete_file"
    assert intr.value["agentguard"]["verdict"]["decision"] == "ESCALATE"
    out = agent.invoke(Command(resume={"approved": approve}), cfg)  # the legacy resume value still works
    assert effects == ([("delete", "/tmp/a")] if approve else [])
    assert out["messages"][-1].content == "finished"


def test_tool_gate_variant_has_no_after_model_node_and_still_gates():
    from agentguard.integrations.langchain import AgentGuardToolGate

    effects = []
    model = scripted_chat_model(
        [
            AIMessage(
                "",
                tool_calls=[
                    call("delete_file", {"path": "/tmp/a"}, "c1"),
                    call("read_file", {"path": "/x"}, "c2"),
                ],
            ),
            AIMessage("done"),
        ]
    )
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardToolGate(stack())])
    assert not any("after_model" in n for n in agent.get_graph().nodes)
    run(agent)
    assert effects == [("read", "/x")]


def test_after_model_with_real_proactive_guard():
    """Pro2Guard's ProactiveGuard on a small DTMC, asked at proposal time (after_model): the state a
    proposed call leads to is predicted unsafe with probability 0.8 (P_safe 0.2 < 0.5): the run halts
    before the tool runs; a call leading to a safe state runs."""
    pg = pytest.importorskip("agentguard.predictive.guard")
    import numpy as np
    import scipy.sparse as sp

    from agentguard.predictive.dtmc import DTMC

    names = ["idle", "reading", "wiping", "unsafe"]
    P = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0.2, 0, 0, 0.8], [0, 0, 0, 1]], dtype=float)
    model = DTMC(sp.csr_matrix(P), 0, {"unsafe": np.array([False, False, False, True])}, state_names=names)
    guard = pg.ProactiveGuard(model, "G !unsafe", 0.5, decision="HALT")
    leads_to = {"read_file": "reading", "delete_file": "wiping"}
    mw = AgentGuardMiddleware(guard, state_fn=lambda ctx, call: leads_to[call.name])

    effects = []
    model_ = scripted_chat_model(
        [
            AIMessage("", tool_calls=[call("read_file", {"path": "/x"}, "c1")]),
            AIMessage("", tool_calls=[call("delete_file", {"path": "/x"}, "c2")]),
            AIMessage("never reached"),
        ]
    )
    out = run(create_agent(model_, make_tools(effects), middleware=[mw]))
    assert effects == [("read", "/x")]
    assert "0.200" in out["agentguard_halt"]
    tm = out["messages"][-1]
    assert isinstance(tm, ToolMessage) and "HALT by proactive" in tm.content


def test_stream_mode_is_gated_the_same():
    effects = []
    model = scripted_chat_model(
        [
            AIMessage("", tool_calls=[call("delete_file", {"path": "/tmp/a"}, "c1")]),
            AIMessage("", tool_calls=[call("read_file", {"path": "/tmp/b"}, "c2")]),
            AIMessage("done"),
        ]
    )
    agent = create_agent(model, make_tools(effects), middleware=[AgentGuardMiddleware(stack())])
    chunks = list(
        agent.stream(
            {"messages": [{"role": "user", "content": "go"}]},
            {"configurable": {"thread_id": "s"}},
            stream_mode="updates",
        )
    )
    assert effects == [("read", "/tmp/b")] and len(chunks) > 3
