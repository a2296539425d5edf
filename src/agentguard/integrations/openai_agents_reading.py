"""The arguments an Agents SDK function tool receives for a call (what :class:`~.openai_agents.AgentsGuard`
judges) and the tool the SDK runs for it; split from :mod:`agentguard.integrations.openai_agents`."""

from __future__ import annotations

import copy
import functools
from typing import Any

from ..core.enforcement import Outcome
from ..core.errors import InputError
from ..core.types import ToolCall
from .agents_tracing import _parse_args
from .common import Unreadable, plain, refusal_message

# the name the SDK's traces and approvals give a function tool (namespace.name; a deferred top-level tool by its name)
from agents._tool_identity import tool_trace_name as _sdk_name  # noqa: E402 - agents_tracing required the SDK

__all__ = ["BINDING", "HandoffRefused", "LISTING_ATTR", "McpListed", "UngatedToolCall", "_item_call", "_prepared",
           "_reading", "_refusal", "_tool_of", "agent_tool_reading", "call_name", "closure_adapter", "invoked_server",
           "mcp_listed"]


def call_name(name: str, namespace: str | None) -> str:
    """The name the guard judges for a call of ``name`` in ``namespace``: ``namespace.name`` (two tools named
    ``read`` in namespaces ``safe`` and ``danger`` are two tools; an allow list granting ``read`` grants neither),
    the bare name without a namespace or for the SDK's synthetic one (``name.name``, a deferred top-level tool)."""
    if not namespace:
        return name
    return str(_sdk_name(name, namespace) or name)


def _item_call(item: Any) -> ToolCall:
    """The ToolCall of an SDK ``ToolApprovalItem`` (an interruption)."""
    raw = getattr(item, "raw_item", None)
    get = raw.get if isinstance(raw, dict) else (lambda k, d=None: getattr(raw, k, d))
    name = getattr(item, "tool_name", None) or getattr(item, "name", None) or get("name") or ""
    ns = getattr(item, "tool_namespace", None) or get("namespace")
    return ToolCall(call_name(str(name), ns if isinstance(ns, str) else None), _parse_args(get("arguments")),
                    str(get("call_id") or ""))


def _reading(tool: Any, raw: str, call: ToolCall) -> ToolCall | Unreadable:  # the judged call of _prepared
    return call if isinstance(read := _prepared(tool, raw, call)[0], BaseException) else read


def _prepared(tool: Any, raw: str, call: ToolCall) -> tuple[ToolCall | Unreadable | BaseException, Any]:
    """``call`` with the arguments the SDK calls the function with: it validates the model's JSON with the
    tool's pydantic model (lax mode: ``" 5000 "`` or ``5000.0`` become the int ``5000``, a stripping
    constraint drops spaces, defaults are filled in) through the tool's own argument preparation
    (``FunctionTool.on_invoke_tool.prepare_arguments``, what the SDK's approval check uses), and the guard
    judges that, never the model's spelling. Arguments the SDK reads unchanged, a tool it does not build from
    a function, or arguments it refuses itself (the function never runs) are judged as given; a schema with
    validators is prepared as the invocation will prepare it; validated values that cannot be named
    (variadic parameters) are unreadable (refused). With the SDK's prepared arguments, which the guardrail hands
    to the invocation (``ToolContext._function_tool_arguments``, the SDK's slot for them): the function receives
    the values judged, never a second validation's (a validator answering otherwise on each call); a validation
    that raises is returned as the exception (refused: the next one might not raise). An agent run as a tool
    (``Agent.as_tool``, which offers no argument preparation) is judged as :func:`agent_tool_reading` reads it."""
    if isinstance(tool, McpListed):
        return tool.read(call), None
    prepare = getattr(getattr(tool, "on_invoke_tool", None), "prepare_arguments", None)
    if not callable(prepare):
        return call, None
    try:
        prepared = prepare(raw, call.name)
        if prepared is not None and not prepared.unchanged and not (prepared.args or prepared.kwargs) \
                and callable(prepared.owner):  # not inspected before approval (validators): as the call will
            prepared = prepared.owner(raw, call.name)
    except Exception as exc:  # noqa: BLE001 - the SDK refuses these arguments itself (ModelBehaviorError)
        return exc, None
    if prepared is None and getattr(tool, "_is_agent_tool", False) is True:
        return agent_tool_reading(tool, raw, call), None
    if prepared is None or prepared.unchanged:
        return call, prepared
    names = list((getattr(tool, "params_json_schema", None) or {}).get("properties") or {})
    args, kwargs = list(prepared.args), dict(prepared.kwargs)
    if len(args) > len(names) or any(k in names[:len(args)] or k not in names for k in kwargs):
        return Unreadable(call.name, raw, "the SDK's validated arguments cannot be named (variadic parameters)"), None
    return ToolCall(call.name, plain({**dict(zip(names, args)), **kwargs}), call.call_id), prepared


def closure_adapter(f: Any, variable: str) -> Any:
    """The pydantic ``TypeAdapter`` an SDK function holds in its closure variable ``variable`` (the SDK validates a
    handoff's or an agent tool's input with it), or None (no such variable, or not a function)."""
    import inspect

    from pydantic import TypeAdapter

    f = f.args[0] if isinstance(f, functools.partial) and f.args else f
    try:
        found = inspect.getclosurevars(f).nonlocals.get(variable)
    except (TypeError, ValueError):
        return None
    return found if isinstance(found, TypeAdapter) else None


def agent_tool_reading(tool: Any, raw: str, call: ToolCall) -> ToolCall | Unreadable | BaseException:
    """The input an agent run as a tool (``Agent.as_tool``) receives for ``call``: the SDK (0.24) validates the model's
    JSON with the tool's ``parameters`` type (lax mode: ``" EVE "`` through a field validator as ``"eve"``, ``"5000"``
    as ``5000``, defaults filled in) and hands the nested agent its JSON dump (``params_adapter.dump_python(...,
    mode="json")``, built into its input), so the guard judges that dump, never the model's spelling (session 26:
    ``{"to": "EVE"}`` passed a rule forbidding ``eve`` and the nested agent was asked to pay ``eve``). A validation
    that raises is returned as the exception (refused; the SDK refuses it too); a tool whose validation cannot be
    read (the SDK's invocation closure, ``params_adapter``, is private: another SDK) is unreadable (refused). The
    nested agent's own validation runs again when it runs: a validator answering otherwise on each call is not
    pinned here (the SDK offers agent tools no slot for prepared arguments)."""
    impl = getattr(getattr(tool, "on_invoke_tool", None), "_invoke_tool_impl", None)
    adapter = closure_adapter(impl, "params_adapter")
    if adapter is None:
        return Unreadable(call.name, raw, "cannot read how the SDK validates this agent tool's input (another SDK)")
    try:
        value = adapter.dump_python(adapter.validate_python(copy.deepcopy(dict(call.arguments))), mode="json")
    except Exception as exc:  # noqa: BLE001 - the SDK refuses these arguments itself (ModelBehaviorError)
        return exc
    if not isinstance(value, dict):
        return Unreadable(call.name, raw, f"the agent tool's validated input is a {type(value).__name__}, not an object")
    return ToolCall(call.name, plain(value), call.call_id)


#: the attribute of an agent's MCP server holding its listed tools' ``inputSchema`` by name (what its calls are read
#: by), kept by :func:`.openai_agents_mcp.remember_listing`
LISTING_ATTR = "_agentguard_listing"


def _tool_of(data: Any, name: str) -> Any:
    """The function tool the SDK runs for ``name``: of the agent's tools with that name, the one in the call's
    namespace (``tool_namespace``), the last of them as in the SDK's own lookup (last wins; one the SDK converted from
    an MCP tool as its server runs it, :func:`~.openai_agents_mcp.mcp_listed`); else a tool of one of the agent's MCP
    servers listed under that very name (:class:`McpListed`; a tool the SDK renamed reaches the guard bound to its
    server's tool, :func:`~.openai_agents_mcp.wrap_mcp_tools`), or None."""
    tools = [t for t in getattr(data.agent, "tools", None) or [] if getattr(t, "name", None) == name]
    ns = getattr(data.context, "tool_namespace", None) or None
    same = [t for t in tools if (getattr(t, "_tool_namespace", None) or None) == ns]
    if same or tools:
        found = (same or tools)[-1]
        if getattr(found, BINDING, None) is not None:  # an MCP tool the caller converted itself
            return mcp_listed(found, getattr(data.agent, "mcp_servers", None))
        return found
    for server in getattr(data.agent, "mcp_servers", None) or []:
        listing = getattr(server, LISTING_ATTR, None)
        if isinstance(listing, dict) and name in listing:
            return McpListed(name, listing[name], name, _log_name(server))
    return None


class McpListed:
    """A tool of an agent's MCP server, as its server listed it: the SDK sends the model's JSON to the server as it
    is, and the server reads it by the listed ``inputSchema`` (an ``MCPServer`` turns ``"5000"`` into ``5000``, a
    JSON string into the list it holds, fills the defaults of what is left out). The guard judges that reading: the
    MCP proxy's (:func:`~.mcp.decide.schema_refusal`: only arguments of the declared types, no JSON text the server
    parses otherwise, no integer beyond 2**53; :func:`~.declared.judged_call`: the listed defaults)."""

    def __init__(self, name: str, schema: Any, listed: str | None = None, server: str | None = None) -> None:
        self.name, self.schema = name, schema
        self.listed, self.server = listed, server  # the name the SDK sends the server, the server's (log) name

    def read(self, call: ToolCall) -> ToolCall | InputError:
        """The call as the server runs it, or why it would run another (refused like a failed validation)."""
        from .declared import judged_call
        from .mcp.decide import schema_refusal

        why = schema_refusal(self.schema, dict(call.arguments)) if isinstance(self.schema, dict) else \
            "the server listed it without an inputSchema object"
        if why is not None:
            return InputError(f"the MCP server would not read these arguments as given: {why}")
        return judged_call({call.name: self.schema}, call)


#: the attribute of an SDK function tool naming the MCP tool it runs: (server name, listed name, server index)
BINDING = "_mcp_tool_binding"


def _log_name(server: Any) -> str | None:
    try:
        from agents.mcp._logging import get_mcp_server_log_name  # what the SDK puts in the binding

        return str(get_mcp_server_log_name(server.name))
    except Exception:  # noqa: BLE001 - a server without a readable name: it cannot be matched
        return None


def mcp_listed(tool: Any, servers: Any = None) -> McpListed | None:
    """The MCP tool ``tool`` runs, as its server runs it (None for a tool that is not an MCP server's): named as
    the server names it (the listed name; ``<server>__<listed name>`` when the SDK renamed it), read by the
    ``inputSchema`` that server listed (its tool listing, remembered by the guard, when ``servers[index]`` is that
    server; else the schema the SDK built the tool with, the server's own unless converted to strict mode). A
    binding that is not a (str, str, ...) triple is refused (an :class:`McpListed` without a schema)."""
    binding = getattr(tool, BINDING, None)
    if binding is None:
        return None
    if not (isinstance(binding, tuple) and len(binding) >= 2 and all(isinstance(x, str) for x in binding[:2])):
        return McpListed(str(getattr(tool, "name", "mcp_tool")), None)
    server_name, listed = binding[0], binding[1]
    name = listed if getattr(tool, "name", None) == listed else f"{server_name}__{listed}"
    index = binding[2] if len(binding) > 2 else None
    schema: Any = None
    found = False
    if isinstance(index, int) and isinstance(servers, (list, tuple)) and 0 <= index < len(servers):
        server = servers[index]
        listing = getattr(server, LISTING_ATTR, None)
        if _log_name(server) == server_name and isinstance(listing, dict) and listed in listing:
            schema, found = listing[listed], True
    sent = invoked_server(tool)  # a tool the caller converted (MCPUtil.to_function_tool): the server it calls
    if not found and sent is not None and _log_name(sent[0]) == server_name \
            and getattr(sent[1], "name", None) == listed:
        got = getattr(sent[1], "input_schema", None) or getattr(sent[1], "inputSchema", None)  # mcp 2.x / 1.x
        schema, found = (got if isinstance(got, dict) else None), True  # the listed inputSchema itself
    if not found and getattr(tool, "strict_json_schema", True) is False:
        schema = getattr(tool, "params_json_schema", None)  # the listed inputSchema as the SDK copied it
    return McpListed(name, schema, listed, server_name)


def invoked_server(tool: Any) -> tuple[Any, Any] | None:
    """The MCP server and its listed tool (an ``mcp`` ``Tool``) that an SDK function tool built by
    ``MCPUtil.to_function_tool`` sends its calls to (its invocation: ``partial(MCPUtil.invoke_mcp_tool, server, tool)``
    inside the SDK's failure-handling invoker), or None for any other tool."""
    impl = getattr(getattr(tool, "on_invoke_tool", None), "_invoke_tool_impl", None)
    if isinstance(impl, functools.partial) and len(impl.args) >= 2 \
            and callable(getattr(impl.args[0], "call_tool", None)):
        return impl.args[0], impl.args[1]
    return None


class UngatedToolCall(InputError):
    """A tool was about to run that the guard cannot gate, or whose late decision stops the run (the tool never
    runs). (Here, the adapter's leaf module, so that every part of it raises the same class.)"""


class HandoffRefused(InputError):
    """The guard stopped the run at a handoff (HALT), or refused one whose running agent is unknown."""


def _refusal(out: Outcome, call: ToolCall) -> str:
    """What the model reads for a call that did not run: the refusal (guard, decision, reason) and what
    the strategy adds (a CRP round's instruction, a halted tool, a human's answer)."""
    v = out.verdict
    if v is None:
        return f"agentguard refused tool call {call.name}: {out.message or 'no verdict'}"
    if not v.blocks:  # refused by the strategy, not the verdict (a tool halted earlier in the run)
        return f"agentguard refused tool call {call.name}: {out.message or v.reason}"
    base = refusal_message(v, call)
    bare = ("", v.reason, f"action refused by {v.guard or 'guard'}: {v.reason}")
    return base if out.message in bare else f"{base}. {out.message}"
