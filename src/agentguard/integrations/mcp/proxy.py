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
  upstream is never called; ESCALATE asks ``approve(verdict, call)`` when one is given (may be async),
  else the human behind the client through MCP *elicitation* (a form with one boolean ``approve``, its
  message and ``_meta["agentguard/approval"]`` showing every guard's verdict; only ``accept`` with
  ``approve: true`` runs the call), else - a client without elicitation - refuses with a
  message naming the approval needed; HALT refuses and marks the session halted: every later call in
  that run is refused.
- ``prompts/list``, ``prompts/get``, ``resources/list``, ``resources/templates/list`` and
  ``resources/read`` are passed through (prompt names prefixed like tools; resource URIs kept, routed
  to the upstream that listed them). ``prompts/get`` and ``resources/read`` are guarded like calls:
  the guard sees ``ToolCall("prompts/get", {"name", "arguments"})`` and
  ``ToolCall("resources/read", {"uri"})``, so a policy naming those tools governs them (and a stack
  that refuses unknown tools refuses them: fail closed).
- Per-run facts: a client (the host application, not the model) may send
  ``_meta["agentguard/facts"]`` (an object) with a request; it is merged into the run's
  ``Context.metadata``, where a policy reads it with ``{from = "metadata", key = ...}``.
- Fail closed: a guard that raises or returns garbage yields ``on_error`` (HALT by default); an
  upstream that fails yields an error result, never a silent success.
- Every guarded request is decided by one :class:`~agentguard.core.pipeline.Pipeline` (``adapter="mcp"``,
  enforcement ``strategy`` as configured, see :mod:`.decide`), the same as on the stdio relay.

The run a request is decided in belongs to its connection, never to a field the client writes
(:func:`session_key`): a connection with its own channel (a handshake-era session over stdio, in
process or Streamable HTTP with ``Mcp-Session-Id``; a 2026-07-28 duplex stream such as stdio) is one
run, named by the proxy; a request without one (stateless Streamable HTTP, a 2026-07-28 in-process
client) is decided in the run of its authenticated principal when the HTTP app authenticates
(``mcp.server.auth``), else in one run the proxy's stateless requests share (nothing tells their
clients apart: a HALT stops them all). A run ends when its connection closes.

What it can see: tool names, arguments and results of ``tools/call``, prompt gets and resource reads.
Progress notifications of a forwarded call are relayed to the client when it asked for them. This SDK
path does not relay the upstreams' own server-to-client requests (sampling, elicitation) or their other
notifications (logging, list-changed); ``tools/list`` is re-read on every listing, so a changed tool
list is seen at the client's next listing. It is asynchronous throughout (:meth:`Pipeline.adecide`).
``agentguard mcp-proxy`` with one stdio upstream served over stdio uses the line relay of
:mod:`agentguard.integrations.mcp.relay` instead (same decisions, everything else relayed as is).
"""

from __future__ import annotations

import secrets
import sys
import weakref
from contextlib import AsyncExitStack
from typing import Any, Awaitable, Callable

from ...core.enforcement import Enforcement, Outcome
from ...core.errors import InputError, require, sole_exception
from ...core.guard import Guard
from ...core.telemetry import parent_from
from ...core.types import Context, Decision, ToolCall
from ..recording import TraceRecorder
from .decide import (APPROVAL_KEY, APPROVAL_META_KEY, ApprovalRounds, Approve, approval_message, approval_meta,
                     call_refusal, facts_of, gate, judged_call, listing_changed, make_pipeline, refusal_text,
                     refused_before, schema_text)
from .passthrough import PassThrough
from .upstream import Upstream, parse_upstream

require("mcp", "integrations")

import mcp_types as types  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.server import Server  # noqa: E402

__all__ = ["GuardProxy", "Upstream", "parse_upstream", "session_key"]


def _modern_versions() -> Any:
    try:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        return MODERN_PROTOCOL_VERSIONS
    except ImportError:  # pragma: no cover
        return ()


def _progress_relay(ctx: Any) -> Callable[..., Awaitable[None]] | None:
    """Relay the upstream's progress notifications of a call to the client (``report_progress`` is a no-op
    when the client did not ask for progress; the in-process transport carries no token to test for)."""
    session: Any = getattr(ctx, "session", None)

    async def relay(progress: float, total: float | None = None, message: str | None = None) -> None:
        try:
            await session.report_progress(progress, total, message)
        except Exception:  # a lost progress note never fails the call
            return

    return relay if session is not None else None


#: the run of each connection channel (weakly held: a closed connection's entry goes with it)
_CHANNEL_RUNS: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()
_CHANNEL_RUNS_BY_ID: dict[int, str] = {}  # channels that cannot be weakly referenced (never seen so far)
SHARED_RUN = "mcp-stateless"


def _connection(ctx: Any) -> Any:
    return getattr(getattr(ctx, "session", None), "_connection", None)


def _principal() -> str | None:
    try:
        from mcp.server.auth.middleware.auth_context import get_access_token
    except ImportError:  # pragma: no cover
        return None
    token = get_access_token()
    if token is None:
        return None
    return f"{token.client_id}:{token.subject or ''}"


def session_key(ctx: Any) -> str:
    """The run a request is decided in (see the module doc): the run of its connection's channel,
    else of its authenticated principal, else the proxy's shared stateless run. Never chosen by the client."""
    conn = _connection(ctx)
    channel = getattr(conn, "outbound", None) if conn is not None and getattr(conn, "has_standalone_channel", False) \
        else None
    if channel is not None:
        try:
            run = _CHANNEL_RUNS.get(channel)
            if run is None:
                sid = getattr(conn, "session_id", None)
                run = _CHANNEL_RUNS[channel] = f"mcp-{'session-' + str(sid) if sid else 'connection'}-" \
                                               f"{secrets.token_hex(8)}"
        except TypeError:  # not weakly referenceable: keyed by identity
            run = _CHANNEL_RUNS_BY_ID.setdefault(id(channel), f"mcp-connection-{secrets.token_hex(8)}")
        return run
    principal = _principal()
    if principal is not None:
        return f"mcp-auth:{principal}"
    return SHARED_RUN


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _result_text(result: Any) -> str:
    parts = []
    for c in getattr(result, "content", None) or []:
        t = getattr(c, "text", None)
        parts.append(t if isinstance(t, str) else f"<{getattr(c, 'type', 'content')}>")
    return "\n".join(parts)


class GuardProxy(PassThrough):
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
        strategy: Enforcement | str | None = None,
        timeout_s: float | None = None,
        shadow: bool = False,
    ) -> None:
        if not upstreams:
            raise InputError("the MCP proxy needs at least one upstream server")
        names = [u.name for u in upstreams]
        if len(set(names)) != len(names):
            raise InputError(f"upstream names must be unique: {names}")
        self.upstreams = list(upstreams)
        self.prefix = len(upstreams) > 1 if prefix is None else bool(prefix)
        self.pipeline = make_pipeline(guard, strategy=strategy, recorder=recorder, on_error=on_error,
                                      state_fn=state_fn, timeout_s=timeout_s, shadow=shadow)
        self.recorder = recorder
        self.approve = approve
        self.clients: dict[str, Any] = {}
        self._routes: dict[str, tuple[str, str]] = {}
        self._schemas: dict[str, Any] = {}  # each tool's inputSchema, as listed (calls are checked against it)
        self._stack: AsyncExitStack | None = None
        self._rounds = ApprovalRounds()  # approval rounds of the 2026-07-28 protocol
        self._prompt_routes: dict[str, tuple[str, str]] = {}
        self._resource_routes: dict[str, str] = {}
        self.server = Server(
            name,
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
            on_list_prompts=self._on_list_prompts,
            on_get_prompt=self._on_get_prompt,
            on_list_resources=self._on_list_resources,
            on_list_resource_templates=self._on_list_resource_templates,
            on_read_resource=self._on_read_resource,
        )

    def __repr__(self) -> str:
        return f"GuardProxy({self.pipeline.guard!r}, upstreams={[u.name for u in self.upstreams]})"

    async def __aenter__(self) -> "GuardProxy":
        self._stack = AsyncExitStack()
        await self._stack.__aenter__()
        try:
            for u in self.upstreams:
                try:
                    self.clients[u.name] = await self._stack.enter_async_context(Client(u.target()))
                except Exception as exc:  # it exited or does not speak MCP: the --upstream given is the input
                    why = sole_exception(exc)
                    raise InputError(f"upstream {u.name!r} did not answer as an MCP server "
                                     f"({type(why).__name__}: {why})") from exc
            await self._collect_tools()
        except BaseException:
            await self._stack.__aexit__(*sys.exc_info())
            raise
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self.recorder is not None:
            self.recorder.finish_all()
        if self._stack is not None:
            await self._stack.__aexit__(*exc)
            self._stack = None

    async def serve_stdio(self) -> None:
        """Serve the proxy over this process's stdin/stdout (one client)."""
        import sys
        from io import TextIOWrapper

        import anyio
        from mcp.server.stdio import stdio_server

        from .strict import StrictLines

        # every line is read strictly (duplicate keys refused) before the SDK parses it; stdout stays the SDK's
        stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
        async with stdio_server(stdin=StrictLines(stdin)) as (read, write):  # type: ignore[arg-type]
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
        out: list[types.Tool] = []
        routes: dict[str, tuple[str, str]] = {}
        schemas: dict[str, Any] = {}
        for u in self.upstreams:
            for t in await self._upstream_tools(u.name):
                exposed = f"{u.name}__{t.name}" if self.prefix else t.name
                if exposed in routes:
                    raise InputError(
                        f"tool {exposed!r} is offered by upstreams {routes[exposed][0]} and {u.name}; "
                        "use prefixed names"
                    )
                routes[exposed] = (u.name, t.name)
                schemas[exposed] = t.input_schema
                out.append(t.model_copy(update={"name": exposed}) if exposed != t.name else t)
        self._routes, self._schemas = routes, schemas  # a tool no longer listed is no longer forwarded
        return out

    async def _on_list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await self._collect_tools())

    # -- tools/call -------------------------------------------------------------------------------
    def _run(self, ctx: Any) -> str:
        """The run of the request's connection (:func:`session_key`); a handshake-era connection's run
        ends (its state and trace are finished) when the connection closes."""
        run = session_key(ctx)
        conn = _connection(ctx)
        state = getattr(conn, "state", None)
        if run != SHARED_RUN and isinstance(state, dict) and "agentguard/run" not in state:
            state["agentguard/run"] = run
            stack = getattr(conn, "exit_stack", None)
            if stack is not None and getattr(conn, "protocol_version", None) not in _modern_versions():
                stack.callback(self.pipeline.finish, run)
        return run

    def _can_elicit(self, ctx: Any) -> bool:
        session = getattr(ctx, "session", None)
        try:
            return session is not None and bool(session.check_client_capability(
                types.ClientCapabilities(elicitation=types.ElicitationCapability())))
        except Exception:
            return False

    async def _elicit(self, ctx: Any, out: Outcome, run: str, params: Any) -> Any:
        """Ask the human behind the client (MCP elicitation; the form shows every guard's verdict):
        True / False, None when the client cannot be asked, or (2026-07-28 protocol) the
        ``InputRequiredResult`` asking it; the client's retry carries the answer, accepted only with this
        proxy's ``request_state`` for this exact call in this run."""
        if not self._can_elicit(ctx):
            return None
        call = out.proposal
        schema = {"type": "object", "required": ["approve"],
                  "properties": {"approve": {"type": "boolean", "title": f"Run {call.name}?"}}}
        form = types.ElicitRequestFormParams.model_validate(
            {"message": approval_message(out), "requested_schema": schema,
             "_meta": {APPROVAL_META_KEY: approval_meta(out)}})
        session = ctx.session
        if getattr(ctx, "protocol_version", None) in _modern_versions():
            answers = getattr(params, "input_responses", None) or {}
            if APPROVAL_KEY in answers and self._rounds.redeem(getattr(params, "request_state", None), run, call):
                res = answers[APPROVAL_KEY]
            else:
                return types.InputRequiredResult(input_requests={APPROVAL_KEY: types.ElicitRequest(params=form)},
                                                 request_state=self._rounds.issue(run, call))
        elif session.can_send_request:
            from mcp.shared.message import ServerMessageMetadata

            res = await session.send_request(
                types.ElicitRequest(params=form), types.ElicitResult,
                metadata=ServerMessageMetadata(related_request_id=getattr(ctx, "request_id", None)))
        else:
            return None
        content = getattr(res, "content", None) or {}
        return getattr(res, "action", None) == "accept" and content.get("approve") is True

    async def _decide(self, ctx: Any, call: ToolCall, params: Any = None) -> tuple[str, Any]:
        """``(run, outcome)`` of a guarded request (or the protocol object asking the client)."""
        run = self._run(ctx)
        facts = facts_of(getattr(ctx, "meta", None))
        asked: list[Outcome] = []

        def ask(o: Outcome) -> Any:
            asked.append(o)
            return self._elicit(ctx, o, run, params)

        try:
            with parent_from(getattr(ctx, "meta", None)):  # the client's trace context (``_meta.traceparent``)
                out = await gate(self.pipeline, run, call, facts, approve=self.approve, ask=ask)
        except BaseException as exc:  # cancelled (the client's notifications/cancelled, a closed connection)
            if isinstance(exc, Exception):
                raise
            import anyio

            why = "the request was cancelled before it was decided"
            with anyio.CancelScope(shield=True):  # the refusal is still decided and audited
                refused = await (self.pipeline.aresolve(asked[-1], False, approver=f"nobody: {why}") if asked
                                 else self.pipeline.adecide(run, call, refuse=refused_before(why)))
                self.pipeline.record(refused, observation=refusal_text(refused, call))
            raise
        return run, out

    async def _refuse(self, ctx: Any, call: ToolCall, reason: str) -> types.CallToolResult:
        """A call refused before the guard, decided through the Pipeline (audited, recorded in the run)."""
        out = await self.pipeline.adecide(self._run(ctx), call, refuse=refused_before(reason))
        text = refusal_text(out, call)
        self.pipeline.record(out, observation=text)
        return _error_result(text)

    async def _on_call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        call = ToolCall(params.name, dict(params.arguments or {}), str(getattr(ctx, "request_id", "") or ""))
        if call.name not in self._schemas:  # not listed yet (or since): list again, then check (fail closed)
            try:
                await self._collect_tools()
            except Exception as exc:  # noqa: BLE001 - no listing, no call
                return await self._refuse(ctx, call, f"the upstreams' tools/list was not read ({type(exc).__name__})")
        why = call_refusal(self._schemas, call.name, dict(call.arguments))
        if why is not None:  # the upstream would run something the guard did not read (see call_refusal)
            return await self._refuse(ctx, call, f"the upstream would not read this call as the guard did: {why}")
        route, judged = self._routes.get(call.name), schema_text(self._schemas.get(call.name))
        sent, call = call, judged_call(self._schemas, call)  # judged with the listed defaults the tool runs with
        _, out = await self._decide(ctx, call, params)
        if not isinstance(out, Outcome):  # the input_required round asking the client
            return out
        fwd = out.call
        if fwd is call and ((stale := listing_changed(self._schemas, call, judged))
                            or self._routes.get(call.name) != route):  # listed again while it was decided
            return await self._refuse(ctx, call, stale or "the upstreams' tools/list changed while the call was "
                                                          "decided: another upstream now offers it")
        if fwd is not None and fwd is not call:  # a replacement is forwarded only as the upstream reads it too
            why = call_refusal(self._schemas, fwd.name, dict(fwd.arguments))
            if why is not None:
                return await self._refuse(ctx, call, f"its replacement {fwd.name} would not be read by the upstream "
                                                     f"as the guard decided it: {why}")
        if fwd is None:
            text = refusal_text(out, call)
            self.pipeline.record(out, observation=text)
            return _error_result(text)
        route = self._routes.get(fwd.name)
        if route is None:
            await self._collect_tools()
            route = self._routes.get(fwd.name)
        if route is None:
            self.pipeline.record(out, observation="unknown tool")
            return _error_result(f"unknown tool {fwd.name!r}")
        upstream, tool = route
        try:
            result = await self.clients[upstream].call_tool(tool, dict((sent if fwd is call else fwd).arguments),
                                                            progress_callback=_progress_relay(ctx))
        except Exception as exc:
            text = f"upstream {upstream} failed on {tool}: {type(exc).__name__}: {exc}"
            self.pipeline.record(out, observation=text)
            return _error_result(text)
        self.pipeline.record(out, observation=_result_text(result))
        if not isinstance(result, types.CallToolResult):  # e.g. an input-required round: not proxied
            return _error_result(
                f"upstream {upstream} answered {type(result).__name__}, which the proxy does not relay"
            )
        return result
