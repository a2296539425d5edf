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

