"""The MCP driver: a real ``mcp.Client`` in front of the agentguard MCP proxy, in front of a real
upstream MCP server (an in-process ``MCPServer`` whose tools record what ran).

Two variants (``McpDriver("relay")`` and ``McpDriver("sdk")``):

- ``relay``: the stdio line relay (:class:`agentguard.integrations.mcp.relay.StdioRelay`, what
  ``agentguard mcp-proxy`` runs for one stdio upstream) between newline-delimited JSON-RPC pipes: the
  client speaks through a line transport (the SDK's own message serialisation), the upstream is served
  by the SDK's ``stdio_server`` over in-memory pipes, so every byte crosses the relay as on stdio;
- ``sdk``: :class:`agentguard.integrations.mcp.proxy.GuardProxy` (the SDK server) with the upstream as
  an in-process ``Upstream(server=...)``; the client connects to ``proxy.server`` in process.

A "turn" is a list of ``tools/call`` requests sent concurrently (a model's parallel calls); turns go in
order. MCP has no model call ids (the JSON-RPC id is the client SDK's own), so a call's ``call_id`` is
not sent. An ESCALATE is answered through the proxy's own approval flow: the client's elicitation
callback is the human (``approve``), and what each request showed (``_meta["agentguard/approval"]``:
the call and every guard's verdict) is collected in ``RunResult.asked``. The client keeps sending after
a HALT (an MCP client is not told the run ended; every later call is refused): ``stopped`` is the
proxy's latched HALT for the connection's run. ``texts`` keeps what each call answered (for tests that
check what the agent was told, e.g. a CRP re-planning request).
"""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from agentguard.core import Guard, ToolCall

from . import TOOLS, RunResult

APPROVAL_META_KEY = "agentguard/approval"


def upstream_server(executed: list[tuple[str, dict[str, Any]]]) -> Any:
    """A real MCP server offering :data:`TOOLS`; each tool body appends ``(name, arguments)`` to ``executed``."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("driver-upstream")

    def make(name: str) -> None:
        def body(target: str, amount: int) -> str:
            executed.append((name, {"target": target, "amount": amount}))
            return "ok"

        body.__name__ = name
        server.tool(name=name, description=f"{name} (records that it ran)")(body)

    for t in TOOLS:
        make(t)
    return server


def shown(params: Any) -> dict[str, Any]:
    """What an approval request showed the human: ``_meta["agentguard/approval"]`` (the call, the reason,
    every guard's verdict), else the same read from the message (the SDK server's 2026-07-28 result
    sieve drops ``_meta`` inside an ``input_required`` round; the message lists every verdict as
    ``- guard: DECISION (reason)`` after the call ``name({arguments})``)."""
    meta = getattr(params, "meta", None) or {}
    asked = meta.get(APPROVAL_META_KEY) if isinstance(meta, dict) else None
    if isinstance(asked, dict):
        return asked
    text = str(getattr(params, "message", ""))
    head = re.match(r"agentguard asks before running ([^(]+)\((.*)\)\.\n", text)
    verdicts = [{"guard": m.group(1), "decision": m.group(2), "reason": m.group(3)}
                for m in re.finditer(r"^- (.+?): ([A-Z]+) \((.*)\)$", text, re.M)]
    call = {"name": head.group(1), "arguments": json.loads(head.group(2))} if head else {}
    return {"call": call, "verdicts": verdicts, "text": text}


class _Lines:
    """An async iterator of text lines over an asyncio StreamReader (the SDK's stdio_server reads these)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> "_Lines":
        return self

    async def __anext__(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode()


class _Out:
    """The stdout the SDK's stdio_server writes to: each line goes into ``feed``."""

    def __init__(self, feed: Any) -> None:
        self.feed = feed

    async def write(self, text: str) -> None:
        self.feed(text.encode())

    async def flush(self) -> None:
        return None


@asynccontextmanager
async def line_transport(send: Any, reader: asyncio.StreamReader) -> AsyncIterator[tuple[Any, Any]]:
    """An MCP client transport over newline-delimited JSON-RPC: what the client sends is serialised as
    the SDK's stdio client does and given to ``send`` (bytes); lines read from ``reader`` are parsed."""
    import anyio
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[Any](0)

    async def pump_in() -> None:
        async with read_send:
            while line := await reader.readline():
                try:
                    item: Any = SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
                except ValueError as exc:
                    item = exc
                try:
                    await read_send.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async def pump_out() -> None:
        async with write_recv:
            async for msg in write_recv:
                send(msg.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump_in)
        tg.start_soon(pump_out)
        try:
            yield read_recv, write_send
        finally:
            tg.cancel_scope.cancel()


class McpDriver:
    """See the module doc. ``variant``: ``"relay"`` or ``"sdk"``; ``mode``: the ``mcp.Client`` mode
    (``"auto"``: the 2026-07-28 protocol, approval by ``input_required`` rounds; ``"legacy"``: the
    initialize handshake, approval by ``elicitation/create``)."""

    def __init__(self, variant: str = "relay", mode: str = "legacy") -> None:
        if variant not in ("relay", "sdk"):
            raise ValueError(f"unknown variant {variant!r}")
        self.variant, self.mode = variant, mode
        self.name = f"mcp-{variant}-{mode}"
        self.texts: list[str] = []

    def run(self, guard: Guard, turns: list[list[ToolCall]], *, approve: bool = False,
            strategy: str | None = None) -> RunResult:
        self.texts = []
        return asyncio.run(self._run(guard, turns, approve, strategy))

    async def _run(self, guard: Guard, turns: list[list[ToolCall]], approve: bool,
                   strategy: str | None) -> RunResult:
        import mcp_types as types

        result = RunResult()

        async def human(context: Any, params: Any) -> Any:
            result.asked.append(shown(params))
            return types.ElicitResult(action="accept", content={"approve": approve})

        runner = self._relay if self.variant == "relay" else self._sdk
        await runner(guard, turns, strategy, human, result)
        return result

    async def _turns(self, client: Any, turns: list[list[ToolCall]]) -> None:
        for turn in turns:
            answers = await asyncio.gather(*(client.call_tool(c.name, dict(c.arguments)) for c in turn))
            for a in answers:
                self.texts.append("\n".join(getattr(x, "text", "") for x in a.content))

    async def _sdk(self, guard: Guard, turns: list[list[ToolCall]], strategy: str | None, human: Any,
                   result: RunResult) -> None:
        from mcp import Client

        from agentguard.integrations.mcp import GuardProxy, Upstream

        up = Upstream("tools", server=upstream_server(result.executed))
        async with GuardProxy(guard, [up], strategy=strategy) as proxy:
            async with Client(proxy.server, elicitation_callback=human, mode=self.mode) as client:
                await self._turns(client, turns)
                result.stopped = any(proxy.pipeline.halted(r) is not None for r in proxy.pipeline.runs)

    async def _relay(self, guard: Guard, turns: list[list[ToolCall]], strategy: str | None, human: Any,
                     result: RunResult) -> None:
        from mcp import Client
        from mcp.server.stdio import stdio_server

        from agentguard.integrations.mcp import StdioRelay

        server = upstream_server(result.executed)
        up_in, up_out = asyncio.StreamReader(), asyncio.StreamReader()       # the upstream's stdin / stdout
        client_in, client_out = asyncio.StreamReader(), asyncio.StreamReader()  # the proxy's stdin / stdout
        relay = StdioRelay(guard, client_out.feed_data, up_in.feed_data, strategy=strategy)

        async def serve_upstream() -> None:
            async with stdio_server(stdin=_Lines(up_in), stdout=_Out(up_out.feed_data)) as (read, write):  # type: ignore[arg-type]
                low = server._lowlevel_server
                await low.run(read, write, low.create_initialization_options())
            up_out.feed_eof()

        upstream = asyncio.ensure_future(serve_upstream())
        relaying = asyncio.ensure_future(relay.run(client_in, up_out, close_upstream=up_in.feed_eof))
        try:
            transport = line_transport(client_in.feed_data, client_out)
            async with Client(transport, elicitation_callback=human, mode=self.mode) as client:
                await self._turns(client, turns)
            result.stopped = relay.pipeline.halted(relay.run_id) is not None
        finally:
            client_in.feed_eof()
            up_in.feed_eof()
            await asyncio.wait({relaying, upstream}, timeout=5)
            for t in (relaying, upstream):
                t.cancel()


def drivers() -> list[McpDriver]:
    """Every MCP variant (both proxy paths, both protocol eras)."""
    return [McpDriver(v, m) for v in ("relay", "sdk") for m in ("legacy", "auto")]


def dump(result: RunResult) -> str:  # pragma: no cover - debugging aid
    return json.dumps({"executed": result.executed, "stopped": result.stopped, "asked": result.asked}, default=str)


#: the variants the one-path tests drive (tests/integrations/test_one_path.py)
DRIVERS = drivers()


def listed(relay, msg) -> None:
    """As if the client had listed the tool it calls (an object schema, no constraints): the relay forwards
    only listed tools (the listing round itself is tested in tests/integrations/mcp/test_relay_redteam.py)."""
    if isinstance(msg, bytes):
        try:
            msg = json.loads(msg)
        except ValueError:
            return
    params = msg.get("params") if isinstance(msg, dict) and msg.get("method") == "tools/call" else None
    name = params.get("name") if isinstance(params, dict) else None
    if isinstance(name, str):
        relay.tools.learn({"tools": [{"name": name, "inputSchema": {"type": "object"}}]})
