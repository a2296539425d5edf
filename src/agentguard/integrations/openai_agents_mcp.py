"""An Agents SDK tool of an MCP server is judged as the server runs it (split from
:mod:`agentguard.integrations.openai_agents_reach`).

The SDK builds a function tool for each tool an agent's MCP server lists, every turn (``Agent.get_mcp_tools``), and
its invocation sends the model's JSON to ``server.call_tool(<the listed name>, <that JSON, parsed>)``. The name the
model calls and the guardrail sees (``ToolContext.tool_name``) is the SDK's *public* name, which is not always the
server's: with ``mcp_config={"include_server_in_tool_names": True}`` it is ``mcp_<server>__<tool>``, shortened to 64
characters and suffixed with a hash when two servers' names sanitise alike (``a.b`` and ``a_b``), when the name is
taken or too long (``mcp_a_b__purge_4bdc81d0``: no namespace form of it is ``purge``). Judged under that name, a rule
denying ``purge`` let the server's ``purge`` run, and the arguments were judged as given (the server's reading by its
listed ``inputSchema`` looked the public name up in no listing: ``{"paths": "[\\"/etc/shadow\\"]"}`` ran as the list).

What the SDK runs is on the tool it built: ``FunctionTool._mcp_tool_binding = (server name, listed name, index of the
server in the agent's mcp_servers)``. :func:`wrap_mcp_tools` wraps an agent's ``get_mcp_tools`` so that each tool built
carries this guard's guardrails bound to :func:`mcp_listed` of that tool: the call is judged under the server's own
tool name (the listed name when the SDK kept it, ``<server>__<listed name>`` when it renamed it, as agentguard's MCP
proxy names an upstream's tools: a refusing rule meets the listed name as a namespace form, an allow list names the
whole) with the arguments as that server reads them (its listing's ``inputSchema``:
:class:`~.openai_agents_reading.McpListed`). ``convert_schemas_to_strict`` changes only what the model is shown: the
server still reads the model's JSON by the schema it listed, which is what is judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from .openai_agents_reading import BINDING, McpListed, mcp_listed

if TYPE_CHECKING:
    from .openai_agents import AgentsGuard

__all__ = ["BINDING", "built_mcp_tool", "mcp_listed", "wrap_mcp_tools"]

_WRAPPED = "_agentguard_mcp_tools"


def wrap_mcp_tools(ag: "AgentsGuard", agent: Any) -> None:
    """Wrap ``agent.get_mcp_tools`` (once per agent object and guard) so that each MCP tool it builds carries this
    guard's input and output guardrail bound to :func:`mcp_listed` of that tool (the server's tool and its reading),
    in place of the unbound ones the server lends every tool. An agent whose method cannot be wrapped raises
    InputError (its MCP tools could not be judged as their server runs them)."""
    if getattr(agent, _WRAPPED, None) is ag:
        return
    original = agent.get_mcp_tools

    async def get_mcp_tools(run_context: Any) -> Any:
        tools = await original(run_context)
        for tool in tools or ():
            listed = mcp_listed(tool, getattr(agent, "mcp_servers", None))
            if listed is not None:
                _bind(ag, tool, listed)
        return tools

    try:
        object.__setattr__(agent, "get_mcp_tools", get_mcp_tools)
        object.__setattr__(agent, _WRAPPED, ag)
    except (AttributeError, TypeError) as exc:
        raise InputError(f"agent {getattr(agent, 'name', '?')!r}: its MCP tools cannot be bound to the tools their "
                         "servers run (the agent takes no attributes)") from exc


def _bind(ag: "AgentsGuard", tool: Any, listed: McpListed) -> None:
    from agents import ToolInputGuardrail, ToolOutputGuardrail

    async def judge_input(data: Any) -> Any:
        return await ag._input(data, listed)

    async def judge_output(data: Any) -> Any:
        return await ag._output(data, listed)

    inputs = list(getattr(tool, "tool_input_guardrails", None) or [])
    outputs = list(getattr(tool, "tool_output_guardrails", None) or [])
    tool.tool_input_guardrails = [ToolInputGuardrail(judge_input, "agentguard") if g is ag.input_guardrail else g
                                  for g in inputs]
    tool.tool_output_guardrails = [ToolOutputGuardrail(judge_output, "agentguard_output")
                                   if g is ag.output_guardrail else g for g in outputs]


async def built_mcp_tool(agent: Any, run_context: Any, name: str) -> McpListed | None:
    """The MCP tool the SDK runs for ``name`` in ``agent`` when the guard's guardrail reached the call through a server
    it gates but not through that agent (a server shared with an agent never passed to ``guard_agent``, whose tools
    the SDK may rename: ``mcp_fs__purge``): the agent's tools built the SDK's own way (``get_mcp_tools``, its naming
    and binding), as :func:`mcp_listed` of the one named ``name``; None when there is none (judged as given)."""
    servers = getattr(agent, "mcp_servers", None)
    if not servers or not callable(getattr(agent, "get_mcp_tools", None)):
        return None
    try:
        tools = await agent.get_mcp_tools(run_context)
    except Exception:  # noqa: BLE001 - no listing now: the call is judged as given (a name no allow list grants)
        return None
    found = [t for t in tools or () if getattr(t, "name", None) == name]
    return mcp_listed(found[-1], servers) if found else None
