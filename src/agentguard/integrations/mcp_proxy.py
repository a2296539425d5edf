"""MCP guard proxy: an MCP server that sits between an MCP client and upstream MCP servers.

::

    client (Claude Desktop, an agent, mcp.Client)  <->  GuardProxy  <->  upstream server(s)

The proxy connects to each upstream (a command run over stdio, or a Streamable HTTP URL) with the
``mcp`` SDK's ``Client``, and serves a low-level ``mcp.server.Server`` (mcp 2.x API):

- ``tools/list`` is forwarded (all pages of every upstream). With more than one upstream, tool names
  are prefixed ``<upstream>__<tool>`` so they stay unique (``prefix=False`` keeps bare names and
  refuses duplicates).
- ``tools/call`` is gated: the guard sees ``ToolCall(name, arguments, request id)`` with the name the
  client used. ALLOW forwards unchanged; MODIFY (and a same-tool RECOVER) forwards the verdict's
  arguments; REJECT/RECOVER answer with a ``CallToolResult(is_error=True)`` the model can read, and the
  upstream is never called; ESCALATE asks ``approve(verdict, call)`` (may be async; refused without
  one); HALT refuses and marks the session halted: every later call in that session is refused.
- Fail closed: a guard that raises or returns garbage yields ``on_error`` (HALT by default); an
  upstream that fails yields an error result, never a silent success.

Per-session guard state: one :class:`~agentguard.core.Context` (and one recorded trace) per MCP
session. The key is, in order: the client's ``_meta["agentguard/session"]`` if it sends one; the
transport session id (Streamable HTTP ``Mcp-Session-Id``, handshake-era clients); the connection
object of a handshake-era stdio/in-process connection; otherwise ``"stdio"`` - a stdio proxy serves
exactly one client - or, for a *stateless* (2026-07-28 protocol) HTTP request, ``"http-shared"``: such
requests carry nothing that tells clients apart, so they share one context (conservative: a HALT
stops them all) unless each client sends ``_meta["agentguard/session"]``.

What it can see: tool names, arguments and results of ``tools/call``. It forwards only tools; it does
not proxy resources, prompts, sampling or elicitation (a client needing those should talk to the
upstream directly for them). It is asynchronous throughout (the guard's ``acheck`` is used);
streamed progress notifications of upstream tools are not relayed.
"""

from __future__ import annotations

import inspect
import os
import shlex
import sys
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from ..core.errors import InputError, require
from ..core.guard import Guard
from ..core.types import Context, Decision, ToolCall, Verdict
from .recording import TraceRecorder
from .runtime import GuardRuntime, refusal_message

require("mcp", "integrations")

import mcp_types as types  # noqa: E402
from mcp import Client, StdioServerParameters, stdio_client  # noqa: E402
from mcp.server import Server  # noqa: E402

__all__ = ["GuardProxy", "Upstream", "parse_upstream", "session_key"]

SESSION_META_KEY = "agentguard/session"
Approve = Callable[[Verdict, ToolCall], "bool | Awaitable[bool]"]


@dataclass
class Upstream:
    """An upstream MCP server: ``command`` + ``args`` (stdio) or ``url`` (Streamable HTTP)."""

    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    url: str | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None

    def __post_init__(self) -> None:
        if not self.name or "__" in self.name:
            raise InputError(f"upstream name {self.name!r} must be non-empty and contain no '__'")
        if (self.command is None) == (self.url is None):
            raise InputError(f"upstream {self.name}: give exactly one of a command or a url")

    def target(self) -> Any:
        """What ``mcp.Client`` connects to: the URL, or a stdio transport whose stderr goes to ours."""
        if self.url is not None:
            return self.url
        params = StdioServerParameters(command=self.command, args=list(self.args), env=self.env, cwd=self.cwd)
        return stdio_client(params, errlog=_errlog())


def parse_upstream(spec: str) -> Upstream:
    """``NAME=COMMAND ARGS...`` or ``NAME=http(s)://...`` (the CLI's ``--upstream`` syntax)."""
    name, sep, rest = spec.partition("=")
    if not sep or not name.strip() or not rest.strip():
        raise InputError(f"bad upstream {spec!r}: expected NAME=COMMAND [ARGS...] or NAME=URL")
    rest = rest.strip()
    if rest.startswith(("http://", "https://")):
        return Upstream(name.strip(), url=rest)
    try:
        parts = shlex.split(rest)
    except ValueError as exc:
        raise InputError(f"bad upstream {spec!r}: {exc}") from None
    cmd = sys.executable if parts[0] in ("python", "python3") else parts[0]
    return Upstream(name.strip(), command=cmd, args=parts[1:])


def session_key(ctx: Any) -> str:
    """The guard-state key of the MCP session a request belongs to (see the module doc)."""
    meta = getattr(ctx, "meta", None)
    if meta:
        try:
            explicit = (
                meta.get(SESSION_META_KEY) if hasattr(meta, "get") else getattr(meta, SESSION_META_KEY, None)
            )
        except Exception:
            explicit = None
        if explicit:
            return f"client:{explicit}"
    conn = getattr(getattr(ctx, "session", None), "_connection", None)
    sid = getattr(conn, "session_id", None)
    if sid:
        return f"mcp-session:{sid}"
    if conn is not None:
        try:
            from mcp_types.version import MODERN_PROTOCOL_VERSIONS

            if getattr(conn, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS:
                return f"connection:{id(conn)}"
        except ImportError:  # pragma: no cover
            return f"connection:{id(conn)}"
    if getattr(getattr(ctx, "request", None), "headers", None) is not None:
        return "http-shared"  # stateless HTTP request without a session: nothing tells clients apart
    return "stdio"


def _errlog() -> Any:
    """The upstream's stderr sink: our current stderr if it is a real file, else the process's original
    one (``stdio_client``'s default is bound when ``mcp`` is imported and may be closed by now)."""
    for f in (sys.stderr, sys.__stderr__):
        try:
            if f is not None:
                f.fileno()
                return f
        except (OSError, ValueError, AttributeError):
            continue
    return open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _result_text(result: Any) -> str:
    parts = []
    for c in getattr(result, "content", None) or []:
        t = getattr(c, "text", None)
        parts.append(t if isinstance(t, str) else f"<{getattr(c, 'type', 'content')}>")
    return "\n".join(parts)


class GuardProxy:
    """The guard proxy. Use ``async with GuardProxy(guard, upstreams) as proxy:`` then serve ``proxy.server``
    (``await proxy.serve_stdio()``, ``proxy.server.streamable_http_app()``, or
    ``mcp.Client(proxy.server)`` in tests).
    """

    def __init__(
        self,
        guard: Guard,
        upstreams: list[Upstream],
        *,
        recorder: TraceRecorder | None = None,
        prefix: bool | None = None,
        approve: Approve | None = None,
        on_error: Decision | str = Decision.HALT,
        state_fn: Callable[[Context, Any], Any] | None = None,
        name: str = "agentguard-proxy",
    ) -> None:
        if not upstreams:
            raise InputError("the MCP proxy needs at least one upstream server")
        names = [u.name for u in upstreams]
        if len(set(names)) != len(names):
            raise InputError(f"upstream names must be unique: {names}")
        self.upstreams = list(upstreams)
        self.prefix = len(upstreams) > 1 if prefix is None else bool(prefix)
        self.runtime = GuardRuntime(
            guard, recorder=recorder, adapter="mcp", on_error=on_error, state_fn=state_fn
        )
        self.approve = approve
        self.clients: dict[str, Any] = {}
        self._routes: dict[str, tuple[str, str]] = {}
        self._stack: AsyncExitStack | None = None
        self.server = Server(name, on_list_tools=self._on_list_tools, on_call_tool=self._on_call_tool)

    def __repr__(self) -> str:
        return f"GuardProxy({self.runtime.guard!r}, upstreams={[u.name for u in self.upstreams]})"

    async def __aenter__(self) -> "GuardProxy":
        self._stack = AsyncExitStack()
        await self._stack.__aenter__()
        try:
            for u in self.upstreams:
                self.clients[u.name] = await self._stack.enter_async_context(Client(u.target()))
            await self._collect_tools()
        except BaseException:
            await self._stack.__aexit__(*sys.exc_info())
            raise
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self.runtime.recorder is not None:
            self.runtime.recorder.finish_all()
        if self._stack is not None:
            await self._stack.__aexit__(*exc)
            self._stack = None

    async def serve_stdio(self) -> None:
        """Serve the proxy over this process's stdin/stdout (one client)."""
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    # -- tools/list -------------------------------------------------------------------------------
    async def _upstream_tools(self, name: str) -> list[types.Tool]:
        client, tools, cursor = self.clients[name], [], None
        for _ in range(1000):
            res = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
            tools.extend(res.tools)
            cursor = getattr(res, "next_cursor", None)
            if not cursor:
                break
        return tools

    async def _collect_tools(self) -> list[types.Tool]:
        out, routes = [], {}
        for u in self.upstreams:
            for t in await self._upstream_tools(u.name):
                exposed = f"{u.name}__{t.name}" if self.prefix else t.name
                if exposed in routes:
                    raise InputError(
                        f"tool {exposed!r} is offered by upstreams {routes[exposed][0]} and {u.name}; "
                        "use prefixed names"
                    )
                routes[exposed] = (u.name, t.name)
                out.append(t.model_copy(update={"name": exposed}) if exposed != t.name else t)
        self._routes = routes
        return out

    async def _on_list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await self._collect_tools())

    # -- tools/call -------------------------------------------------------------------------------
    async def _decide(self, gctx: Context, call: ToolCall) -> Verdict:
        halted = gctx.metadata.get("halted")
        if halted:
            return Verdict(Decision.HALT, f"session halted earlier: {halted}", self.runtime.guard.name)
        v = await self.runtime.acheck(gctx, call)
        if v.decision is Decision.ESCALATE:
            ok = False
            if self.approve is not None:
                try:
                    ok = self.approve(v, call)
                    if inspect.isawaitable(ok):
                        ok = await ok
                except Exception as exc:
                    return Verdict(
                        Decision.REJECT, f"approval failed ({exc}): {v.reason}", v.guard, v.numbers
                    )
            v = Verdict(
                Decision.ALLOW if ok is True else Decision.REJECT,
                f"{'approved' if ok is True else 'not approved'} by a human: {v.reason}",
                v.guard,
                v.numbers,
            )
        return v

    async def _on_call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        key = session_key(ctx)
        gctx = self.runtime.context(key, mcp_session=key)
        call = ToolCall(params.name, dict(params.arguments or {}), str(getattr(ctx, "request_id", "") or ""))
        v = await self._decide(gctx, call)
        args = call.arguments
        if v.decision in (Decision.MODIFY, Decision.RECOVER):
            act = v.action
            if isinstance(act, ToolCall) and act.name == call.name:
                args = dict(act.arguments)
            elif v.decision is Decision.MODIFY and isinstance(act, dict):
                args = dict(act)
            else:
                v = Verdict(
                    Decision.REJECT, f"{v.reason} (no applicable replacement call)", v.guard, v.numbers
                )
        if v.blocks:
            text = refusal_message(v, call)
            if v.decision is Decision.HALT:
                gctx.metadata.setdefault("halted", v.reason)
            self.runtime.record(gctx, call, v, observation=text)
            return _error_result(text)
        route = self._routes.get(call.name)
        if route is None:
            await self._collect_tools()
            route = self._routes.get(call.name)
        if route is None:
            self.runtime.record(gctx, call, v, observation="unknown tool")
            return _error_result(f"unknown tool {call.name!r}")
        upstream, tool = route
        try:
            result = await self.clients[upstream].call_tool(tool, args)
        except Exception as exc:
            text = f"upstream {upstream} failed on {tool}: {type(exc).__name__}: {exc}"
            self.runtime.record(gctx, call, v, observation=text)
            return _error_result(text)
        self.runtime.record(gctx, call, v, observation=_result_text(result))
        if not isinstance(result, types.CallToolResult):  # e.g. an input-required round: not proxied
            return _error_result(
                f"upstream {upstream} answered {type(result).__name__}, which the proxy does not relay"
            )
        return result
