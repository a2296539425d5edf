"""Red team (session 20): a LangChain tool receives values LangGraph's tool node injects after the gate.

Checked against the real ``create_agent`` (langchain 1.5, langgraph 1.2) before the fix: ``write_file(content, path:
Annotated[str, InjectedState("target")])`` with a rule forbidding ``^/etc`` on ``path``; the model called
``set_target(name="/etc/passwd")`` (a tool whose ``Command(update={"target": ...})`` sets the state field) and then
``write_file(content="root::0:0")``: the guard judged ``{"content": ...}`` (no ``path``) and the tool wrote
``/etc/passwd``. Now the judged call carries each named state field the tool node injects, under the tool's argument
name (``reading._state_args``), the tool that runs checks it received exactly that value, and a model-written value
for an injected argument (which the tool node strips) is not what is judged.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, NotRequired

import pytest

pytest.importorskip("langchain.agents.middleware")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from langchain.agents import AgentState, create_agent  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import InjectedToolArg, InjectedToolCallId, tool  # noqa: E402
from langgraph.prebuilt import InjectedState  # noqa: E402
from langgraph.types import Command  # noqa: E402

from agentguard.core import Context, Decision, ToolCall  # noqa: E402
from agentguard.integrations.langchain import AgentGuardMiddleware, AgentGuardToolGate, scripted_chat_model  # noqa: E402
from agentguard.integrations.langchain.reading import _pinned, _reading, _state_args  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

RULE = dict(name="r", arguments=[{"tool": "*", "arg": "path", "forbid": "^/etc"}])


class S(AgentState):
    target: NotRequired[str]


def make_tools(ran: list):
    @tool
    def set_target(name: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Choose the file to write."""
        return Command(update={"target": name, "messages": [ToolMessage("ok", tool_call_id=tool_call_id)]})

    @tool
    def write_file(content: str, path: Annotated[str, InjectedState("target")]) -> str:
        """Write content to the chosen file."""
        ran.append(("write_file", path, content))
        return "written"

    return [set_target, write_file]


def run(target: str, via: str = "tool", gate=AgentGuardMiddleware, model_path: str | None = None,
        use_async: bool = False) -> list:
    """``via="tool"``: the model sets the state field through ``set_target``; ``"input"``: the run's input holds it."""
    ran: list = []
    args = {"content": "x", **({"path": model_path} if model_path is not None else {})}
    turns = [AIMessage("", tool_calls=[{"name": "write_file", "args": args, "id": "c2"}]), AIMessage("done")]
    if via == "tool":
        turns.insert(0, AIMessage("", tool_calls=[{"name": "set_target", "args": {"name": target}, "id": "c1"}]))
    agent = create_agent(scripted_chat_model(turns), make_tools(ran), state_schema=S,
                         middleware=[gate(ToolRuleGuard(**RULE))])
    inp = {"messages": [("user", "go")], **({"target": target} if via == "input" else {})}
    if use_async:
        asyncio.run(agent.ainvoke(inp))
    else:
        agent.invoke(inp)
    return ran


def test_a_state_field_set_by_another_tool_is_judged_as_the_argument_it_fills():
    assert run("/etc/passwd") == []


def test_regression_an_allowed_state_field_still_runs():
    assert run("/srv/out") == [("write_file", "/srv/out", "x")]


def test_a_model_written_value_for_an_injected_argument_is_not_what_is_judged():
    """The tool node strips the model's ``path`` and injects the state's: judged is the state's value, either way."""
    assert run("/etc/passwd", via="input", model_path="/srv/ok") == []
    assert run("/srv/ok", via="input", model_path="/etc/passwd") == [("write_file", "/srv/ok", "x")]


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["/etc/passwd", "/srv/a", " /etc/shadow", "/tmp/x"]), st.sampled_from(["tool", "input"]),
       st.sampled_from([AgentGuardMiddleware, AgentGuardToolGate]), st.booleans())
def test_property_the_tool_runs_iff_the_guard_allows_what_it_receives(target, via, gate, use_async):
    ran = run(target, via, gate, use_async=use_async)
    for _, path, content in ran:
        got = ToolRuleGuard(**RULE).check(Context(run_id="x"), ToolCall("write_file", {"content": content,
                                                                                        "path": path}))
        assert got.decision == Decision.ALLOW, path
    allowed = ToolRuleGuard(**RULE).check(Context(run_id="x"), ToolCall("write_file", {"content": "x", "path": target}))
    assert (ran != []) == (allowed.decision == Decision.ALLOW)


def test_the_tool_that_runs_refuses_a_state_value_changed_after_the_decision():
    """The pinned tool compares what the tool node injects with the value judged (TOCTOU between gate and inject)."""
    [_, write_file] = make_tools([])
    judged = _reading(write_file, ToolCall("write_file", {"content": "x"}, "c2"), {"target": "/srv/ok"})
    assert judged.arguments == {"content": "x", "path": "/srv/ok"}
    assert _state_args(write_file, {"target": "/srv/ok", "messages": []}) == {"path": "/srv/ok"}
    pinned = _pinned(write_file, {"content": "x"}, judged, {"target": "/srv/ok"})
    assert pinned is not None
    with pytest.raises(ValueError, match="injected state value"):
        pinned._parse_input({"content": "x", "path": "/etc/passwd"}, "c2")
    assert pinned._parse_input({"content": "x", "path": "/srv/ok"}, "c2")["path"] == "/srv/ok"
    assert _pinned(write_file, {"content": "x"}, judged, {"target": "/etc/passwd"}) is None  # read otherwise now


def test_a_model_forged_injected_argument_never_reaches_the_tool_differential():
    """LangGraph's tool node strips a model-written value for an injected argument (anti-forgery). Before: the gate's
    pinned reading handed the model's value back to the tool (``scope="admin"`` reached a tool whose scope is the
    application's, ``path`` the model wrote over the state's). Oracle: the same agent without agentguard."""
    def agent_run(with_guard: bool, args: dict) -> list:
        ran: list = []

        @tool
        def fetch_doc(doc: str, scope: Annotated[str, InjectedToolArg] = "public",
                      path: Annotated[str, InjectedState("target")] = "") -> str:
            """Fetch a document."""
            ran.append((doc, scope, path))
            return "ok"

        model = scripted_chat_model([AIMessage("", tool_calls=[{"name": "fetch_doc", "args": args, "id": "c1"}]),
                                     AIMessage("done")])
        mw = [AgentGuardMiddleware(ToolRuleGuard(name="r", deny=["nothing"]))] if with_guard else []
        create_agent(model, [fetch_doc], state_schema=S, middleware=mw).invoke(
            {"messages": [("user", "go")], "target": "/srv/state"})
        return ran

    for args in ({"doc": "a", "scope": "admin"}, {"doc": "a", "path": "/etc/passwd"}, {"doc": "a"}):
        assert agent_run(True, args) == agent_run(False, args) == [("a", "public", "/srv/state")], args


def test_an_unreadable_injection_spec_refuses_the_tool_that_declares_one(monkeypatch) -> None:
    """The spec of what LangGraph injects is read from a private function; if another LangGraph moves it, a tool
    that declares injected state is refused unread instead of running with values nobody judged."""
    import langgraph.prebuilt.tool_node as tn

    from agentguard.core.errors import AgentGuardError
    from agentguard.integrations.langchain.reading import _state_args

    class Declares:
        name = "write_file"
        _injected_args_keys = frozenset({"path"})

    class Plain:
        name = "read_file"
        _injected_args_keys = frozenset()

    def moved(_tool):
        raise AttributeError("moved")

    monkeypatch.setattr(tn, "_get_all_injected_args", moved)
    with pytest.raises(AgentGuardError, match="refused unread"):
        _state_args(Declares(), {"target": "/etc/passwd"})
    assert _state_args(Plain(), {"target": "/etc/passwd"}) == {}
