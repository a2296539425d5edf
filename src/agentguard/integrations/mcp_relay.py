"""The MCP guard proxy's fast path: a line relay between one stdio client and one stdio upstream.

``agentguard mcp-proxy`` with a single stdio upstream served over stdio (the common case: Claude
Desktop, an IDE, the Inspector in front of one server) runs this relay instead of the SDK server of
:class:`~agentguard.integrations.mcp_proxy.GuardProxy`. MCP's stdio transport is newline-delimited
JSON-RPC (spec "Transports"), so the relay works on lines:

- every client line is read once by :func:`agentguard.core.strict_json.loads_strict` (duplicate keys,
  NaN, deep nesting refused: a refused request is answered with a JSON-RPC error, a refused notification
  dropped; a batch (a JSON array) is refused: MCP has none, and it would carry calls past the guard);
- ``tools/call``, ``prompts/get`` and ``resources/read`` are guarded exactly as in ``GuardProxy``
  (:mod:`agentguard.integrations.mcp_decide`: same calls, same refusals, same ESCALATE handling, the
  session halted by a HALT). An allowed request is forwarded as the very bytes the guard read; a MODIFY
  forwards the re-serialised message with the verdict's arguments;
- the other client requests of the MCP method set (initialize, server/discover, ping, listings,
  subscriptions, completion, logging level, tasks) and all notifications are forwarded unchanged; a
  request for any other method is answered "Method not found" (an unknown method could act past the
  guard: fail closed). Responses the client sends (to the upstream's sampling, elicitation and roots
  requests) go to the upstream;
- every upstream line (responses, logging and ``list_changed`` notifications, progress, the upstream's
  own requests) goes to the client unchanged, before anything else is done with it; a guarded call's
  answer is then parsed once to record its result in the session's trace.

A guard known to be fast and pure (:func:`~agentguard.integrations.mcp_decide.inline_safe`) is
evaluated on the event loop under :func:`agentguard.core.guard.run_guard` (an error, a non-Verdict or a
verdict after the deadline never allows); any other guard goes through ``acheck`` in a task, as do
escalations: approval by ``approve`` or by the human behind the client through MCP elicitation (an
``elicitation/create`` request for handshake-era clients that declared elicitation at ``initialize``;
an ``input_required`` result for 2026-07-28 clients that declare it in ``_meta``), else a refusal naming
the approval needed. Session key and per-run facts: ``_meta["agentguard/session"]`` and
``_meta["agentguard/facts"]``, as in ``GuardProxy``; otherwise one session (``"stdio"``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import secrets
import threading
from typing import Any, Callable

from ..core.strict_json import StrictJSONError, loads_strict
from ..core.types import Context, Decision, ToolCall, Verdict
from .mcp_decide import (APPROVAL_KEY, FACTS_META_KEY, SESSION_META_KEY, ApprovalRounds, Approve, applied_arguments,
                         inline_safe, resolve)
from .mcp_strict import refusal_for
from .runtime import GuardRuntime, refusal_message

__all__ = ["CLIENT_NOTIFICATIONS", "FORWARDED_METHODS", "GUARDED_METHODS", "StdioRelay", "pipe_reader", "serve_stdio_relay"]

GUARDED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
#: client requests relayed unguarded (they read, list, subscribe or configure; none acts)
FORWARDED_METHODS = frozenset({
    "completion/complete", "initialize", "logging/setLevel", "ping", "prompts/list", "resources/list",
    "resources/subscribe", "resources/templates/list", "resources/unsubscribe", "server/discover",
    "subscriptions/listen", "tasks/cancel", "tasks/get", "tasks/list", "tasks/result", "tools/list",
})
#: client notifications relayed (the MCP set); any other is dropped
CLIENT_NOTIFICATIONS = frozenset({
    "notifications/cancelled", "notifications/initialized", "notifications/progress",
    "notifications/roots/list_changed",
})
VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
MODERN_VERSIONS = ("2026-07-28",)
LINE_LIMIT = 1 << 26

Sink = Callable[[bytes], None]


def _key(rid: Any) -> str:
    """A request id as a dict key (1 and "1" are different ids)."""
    return f"{type(rid).__name__}:{rid}"


def _dump(msg: Any) -> bytes:
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _result_text(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    parts = []
    for c in result.get("content") or []:
        t = c.get("text") if isinstance(c, dict) else None
        parts.append(t if isinstance(t, str) else f"<{c.get('type', 'content') if isinstance(c, dict) else 'content'}>")
    return "\n".join(parts)


def _meta(msg: dict) -> dict:
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else {}


def _modern(msg: dict) -> bool:
    """A request of the 2026-07-28 (stateless) protocol: its version rides in ``_meta``."""
    return _meta(msg).get(VERSION_META_KEY) in MODERN_VERSIONS


def _as_call(method: str, params: dict, rid: Any) -> ToolCall | None:
    """The guarded request as the call the guard sees (as GuardProxy builds it), or None if malformed."""
    if method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(args, dict):
            return None
        return ToolCall(name, dict(args), str(rid))
    if method == "prompts/get":
        name, args = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(args, dict):
            return None
        return ToolCall("prompts/get", {"name": name, "arguments": dict(args)})
    uri = params.get("uri")
    return ToolCall("resources/read", {"uri": uri}) if isinstance(uri, str) else None


class StdioRelay:
    """Relay one client and one upstream (see the module doc). ``to_client`` / ``to_upstream`` write
    bytes (whole lines); feed lines with :meth:`client_line` and :meth:`upstream_line`, or run both
    directions with :meth:`run`."""

    def __init__(self, runtime: GuardRuntime, to_client: Sink, to_upstream: Sink, *,
                 approve: Approve | None = None) -> None:
        self.runtime = runtime
        self.approve = approve
        self.inline = inline_safe(runtime)
        self._to_client = to_client
        self._to_upstream = to_upstream
        self._pending: dict[str, tuple[Context, ToolCall, Verdict]] = {}   # forwarded calls, by request id
        self._asks: dict[str, asyncio.Future] = {}                          # our elicitations, by id
        self._tasks: set[asyncio.Task] = set()
        self._client_caps: Any = None        # the capabilities of a handshake-era client's initialize
        self._rounds = ApprovalRounds()     # approval rounds of the 2026-07-28 protocol

    # -- client -> upstream ------------------------------------------------------------------------
    def client_line(self, line: bytes) -> None:
        """One line from the client."""
        if not line.strip():
            return
        try:
            msg = loads_strict(line)
        except StrictJSONError as exc:
            error = refusal_for(line, str(exc))
            if error is not None:
                self._to_client(_dump(error))
            return
        if not isinstance(msg, dict):
            self._error(None, -32600, "agentguard refused the message: not a single JSON-RPC message")
            return
        method, rid = msg.get("method"), msg.get("id")
        if method is None:  # a response: to one of our elicitations, else to the upstream's own request
            fut = self._asks.pop(_key(rid), None)
            if fut is not None:
                if not fut.done():
                    fut.set_result(msg)
            else:
                self._to_upstream(line)
            return
        if "id" not in msg:
            if method in CLIENT_NOTIFICATIONS:  # any other notification is dropped (fail closed)
                self._to_upstream(line)
            return
        if not isinstance(rid, (str, int)) or isinstance(rid, bool):
            self._error(None, -32600, "agentguard refused the message: a request id must be a string or an integer")
        elif method in GUARDED_METHODS:
            self._guarded(msg, line)
        elif method in FORWARDED_METHODS:
            if method == "initialize":
                params = msg.get("params")
                self._client_caps = params.get("capabilities") if isinstance(params, dict) else None
            self._to_upstream(line)
        else:
            self._error(rid, -32601, f"Method not found: the agentguard proxy does not relay {str(method)[:80]!r}")

    def _error(self, rid: Any, code: int, message: str) -> None:
        self._to_client(_dump({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}))

    def _context(self, meta: Any) -> Context:
        meta = meta if isinstance(meta, dict) else {}
        explicit = meta.get(SESSION_META_KEY)
        key = f"client:{explicit}" if explicit else "stdio"
        gctx = self.runtime.context(key, mcp_session=key)
        facts = meta.get(FACTS_META_KEY)
        if isinstance(facts, dict):
            gctx.metadata.update({str(k): v for k, v in facts.items() if k not in ("halted", "adapter")})
        return gctx

    def _guarded(self, msg: dict, line: bytes) -> None:
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        call = _as_call(msg["method"], params, msg["id"])
        if call is None:
            self._error(msg["id"], -32602, f"agentguard refused the message: invalid params for {msg['method']}")
            return
        gctx = self._context(params.get("_meta"))
        halted = gctx.metadata.get("halted")
        if halted:
            v = Verdict(Decision.HALT, f"session halted earlier: {halted}", self.runtime.guard.name)
        elif self.inline:
            v = self.runtime.check(gctx, call)
        else:
            self._spawn(self._decide_later(msg, line, gctx, call, None))
            return
        if v.decision is Decision.ESCALATE:
            self._spawn(self._decide_later(msg, line, gctx, call, v))
        else:
            self._apply(msg, line, gctx, call, v)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _decide_later(self, msg: dict, line: bytes, gctx: Context, call: ToolCall, v: Verdict | None) -> None:
        try:
            if v is None:
                v = await self.runtime.acheck(gctx, call)
            answer = await resolve(v, call, approve=self.approve, runtime=self.runtime,
                                   ask=lambda vv, cc: self._ask(vv, cc, msg, gctx))
        except Exception as exc:  # noqa: BLE001 - fail closed
            answer = Verdict(Decision.REJECT, f"approval failed ({type(exc).__name__})", self.runtime.guard.name)
        if isinstance(answer, Verdict):
            self._apply(msg, line, gctx, call, answer)
        else:  # the input_required result asking the client (2026-07-28 protocol)
            self._to_client(_dump({"jsonrpc": "2.0", "id": msg["id"], "result": answer}))

    def _apply(self, msg: dict, line: bytes, gctx: Context, call: ToolCall, v: Verdict) -> None:
        rid, method = msg["id"], msg["method"]
        if method == "tools/call":
            v, args = applied_arguments(v, call)
        if v.decision is Decision.HALT:
            gctx.metadata.setdefault("halted", v.reason)
        if method != "tools/call":  # prompts/get, resources/read: only ALLOW forwards them
            self.runtime.record(gctx, call, v, observation=refusal_message(v, call) if v.blocks else None)
            if v.decision is Decision.ALLOW:
                self._to_upstream(line)
            else:
                self._error(rid, -32003, refusal_message(v, call))
            return
        if v.blocks:
            text = refusal_message(v, call)
            self.runtime.record(gctx, call, v, observation=text)
            result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
            if _modern(msg):
                result["resultType"] = "complete"
            self._to_client(_dump({"jsonrpc": "2.0", "id": rid, "result": result}))
            return
        params = msg["params"]
        if params.get("requestState") and self._rounds.ours(params["requestState"], gctx.run_id, call):  # our approval round: not the upstream's
            answers = {k: a for k, a in (params.get("inputResponses") or {}).items() if k != APPROVAL_KEY}
            params = {k: p for k, p in params.items() if k not in ("requestState", "inputResponses")}
            if answers:
                params["inputResponses"] = answers
        if args != call.arguments or params is not msg["params"]:
            msg = {**msg, "params": {**params, "arguments": args}}
            line = _dump(msg)
        self._pending[_key(rid)] = (gctx, call, v)
        self._to_upstream(line)

    async def _ask(self, v: Verdict, call: ToolCall, msg: dict, gctx: Context) -> Any:
        """The human's answer through MCP elicitation (see the module doc): True / False, None when the
        client cannot be asked, or the ``input_required`` result to answer with."""
        params = msg.get("params") or {}
        modern = _modern(msg)
        caps = _meta(msg).get(CAPABILITIES_META_KEY) if modern else self._client_caps
        if not isinstance(caps, dict) or not isinstance(caps.get("elicitation"), dict):
            return None
        ask = {"mode": "form", "message": (
            f"agentguard asks before running {call.name}("
            f"{json.dumps(dict(call.arguments), default=str)[:500]}): {v.reason}"),
            "requestedSchema": {"type": "object", "required": ["approve"], "properties": {
                "approve": {"type": "boolean", "title": f"Run {call.name}?"}}}}
        if modern:
            state, answers = params.get("requestState"), params.get("inputResponses")
            if not (isinstance(answers, dict) and APPROVAL_KEY in answers
                    and self._rounds.redeem(state, gctx.run_id, call)):
                return {"resultType": "input_required", "requestState": self._rounds.issue(gctx.run_id, call),
                        "inputRequests": {APPROVAL_KEY: {"method": "elicitation/create", "params": ask}}}
            res = answers[APPROVAL_KEY]
        else:
            rid = "agentguard-" + secrets.token_hex(12)
            fut = asyncio.get_running_loop().create_future()
            self._asks[_key(rid)] = fut
            self._to_client(_dump({"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": ask}))
            reply = await fut
            res = reply.get("result")
        content = res.get("content") if isinstance(res, dict) else None
        return isinstance(res, dict) and res.get("action") == "accept" and isinstance(content, dict) \
            and content.get("approve") is True

    # -- upstream -> client ------------------------------------------------------------------------
    def upstream_line(self, line: bytes) -> None:
        """One line from the upstream: relayed first, then a guarded call's answer is recorded."""
        if not line.endswith(b"\n"):
            line += b"\n"
        self._to_client(line)
        if not self._pending:
            return
        try:
            msg = json.loads(line)
        except ValueError:
            return
        if not isinstance(msg, dict) or "method" in msg or not isinstance(msg.get("id"), (str, int)):
            return
        entry = self._pending.pop(_key(msg["id"]), None)
        if entry is None:
            return
        gctx, call, v = entry
        if "result" in msg:
            observation = _result_text(msg["result"])
        else:
            error = msg.get("error")
            observation = f"upstream error: {error.get('message') if isinstance(error, dict) else error}"
        self.runtime.record(gctx, call, v, observation=observation)

    # -- running -----------------------------------------------------------------------------------
    async def run(self, client: asyncio.StreamReader, upstream: asyncio.StreamReader,
                  close_upstream: Callable[[], None] = lambda: None) -> None:
        """Relay until the upstream closes; when the client closes first, ``close_upstream()`` (its stdin)
        and relay what the upstream still says (5 s at most). Decisions still pending are then dropped."""

        async def pump(reader: asyncio.StreamReader, handle: Callable[[bytes], None]) -> None:
            while line := await reader.readline():
                handle(line)

        up = asyncio.ensure_future(pump(upstream, self.upstream_line))
        cl = asyncio.ensure_future(pump(client, self.client_line))
        try:
            await asyncio.wait({up, cl}, return_when=asyncio.FIRST_COMPLETED)
            if cl.done() and not up.done():
                close_upstream()
                await asyncio.wait({up}, timeout=5.0)
            for t in (up, cl):
                if t.done() and not t.cancelled() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
        finally:
            for t in [up, cl, *self._tasks]:
                t.cancel()
            for fut in self._asks.values():
                fut.cancel()


async def serve_stdio_relay(runtime: GuardRuntime, process: Any, *, approve: Approve | None = None,
                            stdin: Any = None, stdout: Any = None) -> None:
    """Serve the relay on this process's stdin/stdout (or the given binary files) in front of the
    started upstream ``process`` (``subprocess.Popen`` with piped stdin/stdout); on exit the upstream's
    stdin is closed and it gets 2 s to exit, then SIGTERM, then SIGKILL."""
    import sys

    loop = asyncio.get_running_loop()
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout.buffer
    up_write, _ = await loop.connect_write_pipe(asyncio.Protocol, process.stdin)
    try:
        out_write, _ = await loop.connect_write_pipe(asyncio.Protocol, stdout)
        to_client: Sink = out_write.write
    except ValueError:  # a regular file

        def to_client(data: bytes) -> None:
            stdout.write(data)
            stdout.flush()

    def to_upstream(data: bytes) -> None:
        if not up_write.is_closing():
            up_write.write(data)

    relay = StdioRelay(runtime, to_client, to_upstream, approve=approve)
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # SIGTERM: clean up the upstream too
        loop.add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)  # type: ignore[union-attr]
    try:
        await relay.run(await pipe_reader(stdin), await pipe_reader(process.stdout), up_write.close)
    finally:
        up_write.close()
        for sig in (None, "terminate", "kill"):
            if sig is not None and process.poll() is None:
                getattr(process, sig)()
            for _ in range(200):
                if process.poll() is not None:
                    return
                await asyncio.sleep(0.01)


async def pipe_reader(file: Any) -> asyncio.StreamReader:
    """An asyncio reader over a pipe, a socket or a character device (``file``: a binary file object);
    a regular file is read in a thread."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT, loop=loop)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), file)
    except ValueError:  # a regular file

        def pump() -> None:
            for chunk in iter(lambda: file.read1(65536), b""):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
            loop.call_soon_threadsafe(reader.feed_eof)

        threading.Thread(target=pump, daemon=True, name="agentguard-stdin").start()
    return reader
