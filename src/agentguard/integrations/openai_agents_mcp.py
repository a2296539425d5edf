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

The server object itself is gated too (:func:`gate_server`, for each server :meth:`~.openai_agents.AgentsGuard.
guard_agent` reaches): its ``call_tool`` is wrapped, so that a call the guard did not let through is decided there
before the server sees it. Before session 24 only the agent's tool path was decided: application code holding the
server (a function tool that forwards to ``server.call_tool("purge", ...)``, a script sharing the server) ran any
tool of it. The SDK's own call of a tool whose input guardrail this guard passed is sent once, as passed
(:func:`let_through`: same server, listed name and arguments), never decided twice; any other ``call_tool`` is judged
like the SDK's (the server's name for the tool, the arguments as the server reads them by its listed
``inputSchema``; a tool the guard has not seen listed is looked up with the server's ``list_tools`` first, and one it
cannot read is refused). Refused, the server is not called and the caller receives MCP's own tool error, a
``CallToolResult(is_error=True)`` with the refusal text (what the SDK hands the model for a failed MCP tool); a stop
(HALT) raises :class:`~.openai_agents_reading.UngatedToolCall`. Such a call has no SDK run to ask a human in: an
ESCALATE is answered by the ``approve`` callback, else refused.
"""

from __future__ import annotations

import copy
import json
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from ..core.pipeline import call_key
from ..core.types import Decision, ToolCall, Verdict
from .common import tool_call_of
from .openai_agents_reading import (
    BINDING, LISTING_ATTR, McpListed, UngatedToolCall, _log_name, invoked_server, mcp_listed)

if TYPE_CHECKING:
    from .openai_agents import AgentsGuard

__all__ = ["BINDING", "built_mcp_tool", "gate_converted", "gate_server", "let_through", "mcp_listed", "remember_listing",
           "wrap_mcp_tools"]

_WRAPPED = "_agentguard_mcp_tools"
#: the guards whose decision a server's ``call_tool`` is wrapped in (:func:`gate_server`)
_GATED = "_agentguard_call_tool"


class _Let:
    """The SDK's next call of an MCP tool in this task that guards' input guardrails let through: (server name,
    listed name, the model's JSON parsed as the SDK parses it), and the guards that passed and have sent it."""

    def __init__(self, key: tuple[Any, ...]) -> None:
        self.key, self.passed, self.sent = key, set(), set()  # type: tuple[Any, ...], set[int], set[int]


_LET: ContextVar[_Let | None] = ContextVar("agentguard_mcp_let", default=None)


def _key(server: str | None, name: str, arguments: Any) -> tuple[Any, ...]:
    return server, name, json.dumps(arguments, sort_keys=True, default=repr)


def let_through(ag: "AgentsGuard", tool: Any, raw: str) -> None:
    """``ag``'s input guardrail let the SDK's call of the MCP tool ``tool`` (:class:`McpListed`; anything else is
    ignored) run with the model's JSON ``raw``: the server's gated ``call_tool`` sends exactly that call once
    without deciding it again (the SDK calls it in a task of this one: the context is copied)."""
    if not isinstance(tool, McpListed) or tool.listed is None:
        return
    try:
        args = json.loads(raw) if raw else {}
    except ValueError:  # the SDK refuses it itself (ModelBehaviorError); the server's call_tool would decide it
        return
    key = _key(tool.server, tool.listed, args)
    let = _LET.get()
    if let is None or let.key != key or let.sent:
        let = _Let(key)
        _LET.set(let)
    let.passed.add(id(ag))


def gate_server(ag: "AgentsGuard", server: Any) -> None:
    """Wrap ``server.call_tool`` (once per server and guard) so that every call of it is decided by ``ag`` (see the
    module doc); a server that takes no attributes raises InputError (its calls could not be gated)."""
    gated = getattr(server, _GATED, ())
    if any(g is ag for g in gated):
        return
    original = server.call_tool

    async def call_tool(tool_name: str, arguments: Any = None, *args: Any, **kwargs: Any) -> Any:
        sent = copy.deepcopy(arguments)  # what is judged is what is sent, whatever the caller's dict becomes
        let = _LET.get()
        if let is not None and id(ag) in let.passed and id(ag) not in let.sent \
                and let.key == _key(_log_name(server), tool_name, arguments):
            let.sent.add(id(ag))
            return await original(tool_name, sent, *args, **kwargs)
        refused = await _decide(ag, server, str(tool_name), sent)
        return refused if refused is not None else await original(tool_name, sent, *args, **kwargs)

    try:
        object.__setattr__(server, "call_tool", call_tool)
        object.__setattr__(server, _GATED, (*gated, ag))
    except (AttributeError, TypeError) as exc:
        raise InputError(f"MCP server {getattr(server, 'name', '?')!r}: its call_tool cannot be gated (the server "
                         "takes no attributes)") from exc


async def _decide(ag: "AgentsGuard", server: Any, name: str, arguments: Any) -> Any:
    """Decide a ``call_tool`` the SDK's tool path did not let through: None when it runs as sent, else MCP's tool
    error with the refusal (a stop raises :class:`UngatedToolCall`)."""
    listing = getattr(server, LISTING_ATTR, None)
    if isinstance(listing, dict) and name not in listing:
        try:
            await server.list_tools()  # the guard's listing learns it (remember_listing)
        except Exception:  # noqa: BLE001 - no listing: read without a schema, i.e. refused
            pass
    schema = listing.get(name) if isinstance(listing, dict) else None
    proposal: Any = tool_call_of(name, json.dumps(arguments) if arguments is not None else "{}")
    refuse = None
    if isinstance(proposal, ToolCall):
        read = McpListed(name, schema).read(proposal)
        if isinstance(read, BaseException):
            refuse = Verdict(Decision.REJECT, str(read)[:500], "agentguard")
        else:
            proposal = read
    call = proposal if isinstance(proposal, ToolCall) else ToolCall(name, {}, "")
    run, facts = ag._run(None)
    out = await ag.pipeline.adecide(run, proposal, refuse=refuse, **facts)
    if out.ask:
        out = await ag._answer(None, run, call, out, False) or out  # no SDK run to ask in: the callback, else no
    if isinstance(proposal, ToolCall) and out.execute and out.call is not None and call_key(out.call) == call_key(call):
        ag.pipeline.record(out, observation="sent to the MCP server's call_tool")
        return None
    answer = ag._refuse(out, call)  # recorded with the refusal
    message = (answer.behavior or {}).get("message")
    if out.stop or not isinstance(message, str):
        raise UngatedToolCall(f"agentguard refused MCP tool call {name}: {out.message or 'refused'}")
    from mcp.types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


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


def remember_listing(server: Any) -> None:
    """Keep each tool the server lists with its ``inputSchema`` (:data:`LISTING_ATTR`), learnt from the listings the
    SDK makes every turn: the server reads a call's arguments by that schema (an ``MCPServer`` coerces, parses a JSON
    string, fills defaults), so the guard judges the call as the server will (:func:`.openai_agents_reading._tool_of`); moved from
    :mod:`.openai_agents_reach`."""
    if isinstance(getattr(server, LISTING_ATTR, None), dict):
        return
    listing: dict[str, Any] = {}
    original = server.list_tools

    async def list_tools(*args: Any, **kwargs: Any) -> Any:
        tools = await original(*args, **kwargs)
        for t in tools or ():
            name = getattr(t, "name", None)
            schema = getattr(t, "input_schema", None) or getattr(t, "inputSchema", None)  # mcp 2.x / 1.x
            if isinstance(name, str):
                listing[name] = schema if isinstance(schema, dict) else None
        return tools

    try:
        object.__setattr__(server, "list_tools", list_tools)
        object.__setattr__(server, LISTING_ATTR, listing)
    except (AttributeError, TypeError):  # a server object that takes no attributes: its calls are judged as given
        return


def gate_converted(ag: "AgentsGuard", tool: Any) -> None:
    """An MCP tool the caller converted itself (``MCPUtil.to_function_tool`` / ``get_function_tools``) and passed to
    :meth:`~.openai_agents.AgentsGuard.guard_tools`: the server its invocation calls is gated as
    :meth:`~.openai_agents.AgentsGuard.guard_agent` gates an agent's servers (:func:`gate_server`: application code
    holding that server is decided too; :func:`remember_listing`, seeded with this tool's listed ``inputSchema``),
    and the tool's calls are read by that schema (:func:`mcp_listed`). Before session 25 only ``guard_agent`` did
    this: a converted tool's server ran any ``call_tool`` undecided. A tool whose invocation names no server
    (:func:`~.openai_agents_reading.invoked_server`) is judged by its input guardrail alone."""
    found = invoked_server(tool)
    if found is None:
        return
    server, listed = found
    remember_listing(server)
    listing = getattr(server, LISTING_ATTR, None)
    name = getattr(listed, "name", None)
    schema = getattr(listed, "input_schema", None) or getattr(listed, "inputSchema", None)  # mcp 2.x / 1.x
    if isinstance(listing, dict) and isinstance(name, str) and name not in listing:
        listing[name] = schema if isinstance(schema, dict) else None
    gate_server(ag, server)
