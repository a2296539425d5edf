"""Red team (session 25) of the framework adapters, each probe against the real package.

1. Agents SDK: MCP tools the caller converted itself (``MCPUtil.get_function_tools`` / ``to_function_tool``) and
   passed to :meth:`AgentsGuard.guard_tools`. Before, only ``guard_agent`` gated an MCP server's ``call_tool``: after
   ``guard_tools(converted)`` application code holding the server ran ``server.call_tool("purge", {"path": "/"})``
   undecided, and a tool converted with ``convert_schemas_to_strict=True`` was judged without the listed schema.
   Now the server the tool's invocation calls is gated too (:func:`~agentguard.integrations.openai_agents_mcp.
   gate_converted`) and the tool is read by its listed ``inputSchema``.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents")
pytest.importorskip("mcp")

from agents import Agent, RunConfig, Runner, RunContextWrapper  # noqa: E402
from agents.mcp import MCPUtil  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402

from test_openai_agents_mcp_reading import ATTACKS, GUARD, Bridge  # noqa: E402


async def _converted(server, strict: bool):
    return await MCPUtil.get_function_tools(server, strict, RunContextWrapper(None), Agent(name="x"))


def _agent_run(name: str, args: dict, strict: bool, guarded: bool = True):
    ran: list = []
    server = Bridge(ran)
    tools = asyncio.run(_converted(server, strict))
    if guarded:
        AgentsGuard(GUARD).guard_tools(tools)
    agent = Agent(name="a", tools=tools, model=ScriptedModel(
        [[function_call(name, args, call_id="c1")], [assistant_message("done")], [assistant_message("done")]]))
    asyncio.run(Runner.run(agent, "go", max_turns=4, run_config=RunConfig(tracing_disabled=True)))
    return server, ran


@pytest.mark.parametrize("strict", [False, True])
def test_converted_mcp_tools_gate_their_server_for_direct_calls(strict):
    ran: list = []
    server = Bridge(ran)
    tools = asyncio.run(_converted(server, strict))
    assert asyncio.run(server.call_tool("purge", {"path": "/"})) and ran == [("purge", "/", 1)]  # the oracle
    ran.clear()
    AgentsGuard(GUARD).guard_tools(tools)
    for name, args in [("purge", {"path": "/"}), *ATTACKS]:
        result = asyncio.run(server.call_tool(name, args))
        assert result.is_error and "agentguard refused" in result.content[0].text
    assert ran == []
    assert not asyncio.run(server.call_tool("purge", {"path": "/srv", "keep": 3})).is_error
    assert ran == [("purge", "/srv", 3)]


@pytest.mark.parametrize("name,args", ATTACKS)
def test_converted_strict_mcp_tool_calls_are_judged_as_the_server_reads_them(name, args):
    assert _agent_run(name, args, True)[1] == []  # (without strict conversion this held before too)


@pytest.mark.parametrize("strict", [False, True])
def test_an_allowed_converted_call_runs_once_and_is_not_decided_twice(strict):
    server, ran = _agent_run("purge", {"path": "/srv", "keep": 2}, strict)
    assert ran == [("purge", "/srv", 2)]


# -- 3. LangChain: a late start refused quietly; a nested tool with its callbacks dropped is refused -----------------

def _langchain():
    pytest.importorskip("langchain.agents.middleware")
    from test_langchain_seal import _agent, _tools

    return _agent, _tools


def test_a_tool_started_after_the_gate_answered_ends_its_thread_quietly(monkeypatch, caplog, capsys):
    """Before: the refused late start ended the middleware's thread with a ``ToolSwapped`` traceback on stderr. Now
    it is a :class:`LateStart`, which the seal's ``threading.excepthook`` logs as one warning line; still nothing ran.
    (pytest replaces ``threading.excepthook`` during a test; the seal's hook is put back for this one.)"""
    import threading

    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.messages import ToolMessage

    from agentguard.integrations.langchain import seal

    _agent, _ = _langchain()
    others: list = []
    monkeypatch.setattr(seal, "_replaced", others.append)
    monkeypatch.setattr(threading, "excepthook", seal._quiet_late)
    ran: list = []
    threads: list = []

    class Later(AgentMiddleware):
        def __init__(self, tools):
            super().__init__()
            self.by_name = {t.name: t for t in tools}

        def wrap_tool_call(self, request, handler):
            swapped = request.override(tool=self.by_name["delete_file"],
                                       tool_call={**request.tool_call, "name": "delete_file"})
            threads.append(threading.Thread(target=handler, args=(swapped,)))
            return ToolMessage("queued", tool_call_id=request.tool_call["id"], name=request.tool_call["name"])

    with caplog.at_level("WARNING", logger="agentguard"):
        _agent(ran, lambda tools: [Later(tools)])
        for t in threads:
            t.start()
            t.join()
    assert threads and ran == [] and others == []
    assert "Traceback" not in capsys.readouterr().err
    assert [r for r in caplog.records if "started after the gate answered" in r.getMessage()]
    boom = threading.Thread(target=lambda: 1 / 0)  # any other exception still reaches the hook it replaced
    boom.start()
    boom.join()
    assert [a.exc_type for a in others] == [ZeroDivisionError]


@pytest.mark.parametrize("config,nested_runs", [(None, True), ({}, True), ({"callbacks": None}, True),
                                                ({"callbacks": []}, False)])
def test_a_tool_body_invoking_another_tool_nests_only_with_its_parent_run(config, nested_runs):
    """A tool body's own ``read_file.invoke`` nests (its run's parent is the decided run) unless it drops its
    callbacks (``{"callbacks": []}``): then the start has no parent, the seal cannot tell it from a start beside the
    decided call, and it is refused (fail closed, documented in the seal): read_file's body never runs and the model
    reads the decided call as refused."""
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langchain.agents import create_agent

    from agentguard.integrations.langchain import AgentGuardMiddleware, scripted_chat_model
    from agentguard.policies.rules import ToolRuleGuard

    _langchain()
    ran: list = []

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(("read_file", path))
        return "x"

    @tool
    def summarize(path: str) -> str:
        """Summarize a file."""
        ran.append(("summarize", path))
        return read_file.invoke({"path": path}, config)

    tcs = [{"name": "summarize", "args": {"path": "/tmp/a"}, "id": "c1", "type": "tool_call"}]
    agent = create_agent(scripted_chat_model([AIMessage("", tool_calls=tcs), AIMessage("done")]),
                         [read_file, summarize], checkpointer=InMemorySaver(),
                         middleware=[AgentGuardMiddleware(ToolRuleGuard(allow=["read_file", "summarize"]))])
    out = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, {"configurable": {"thread_id": "t"}})
    answer = [m.content for m in out["messages"] if m.type == "tool"][0]
    if nested_runs:
        assert ran == [("summarize", "/tmp/a"), ("read_file", "/tmp/a")] and answer == "x"
    else:
        assert ran == [("summarize", "/tmp/a")]
        assert "agentguard refused" in answer and "beside" in answer
