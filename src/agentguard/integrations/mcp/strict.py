"""Strict JSON at the MCP proxy's front door (stdio and Streamable HTTP).

The MCP SDK parses each message with pydantic, which keeps the last of two equal keys, so
``{"arguments": {"path": "/etc/shadow", "path": "notes.txt"}}`` would reach the guard as ``notes.txt``
while the upstream server's own parser may keep the first. Every message is first read by
:func:`agentguard.core.strict_json.loads_strict` (the one strict reader: it also refuses numbers that
overflow, so ``1e999``, which pydantic reads as ``inf`` and writes upstream as ``null``, is refused too, and
lone surrogates); a refused message never reaches the SDK:

- over stdio, a refused request reaches the SDK as a request for the method
  ``agentguard/refused`` with the same ``id`` (the reason in its params), which the server answers with
  a JSON-RPC error (``Method not found``); the SDK keeps its own hold on stdout, so nothing else writes
  to the wire. A refused notification is dropped;
- over HTTP, a refused POST body is answered ``400`` with a JSON-RPC error, before the SDK sees it.
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Callable

from ...core.strict_json import StrictJSONError, loads_strict

__all__ = ["REFUSED_METHOD", "StrictLines", "hardened_http_app", "refusal_for", "refused_request", "strict_http_app"]

PARSE_ERROR = -32700
#: the method a refused stdio request is turned into (no server implements it: the answer is an error)
REFUSED_METHOD = "agentguard/refused"


def refusal_for(raw: str | bytes, reason: str) -> dict[str, Any] | None:
    """The JSON-RPC error answering a refused message, or None when it has no id (a notification or
    unreadable text): those get no answer."""
    try:
        msg = json.loads(raw)
    except (ValueError, RecursionError, TypeError):
        return None
    if not isinstance(msg, dict) or "id" not in msg or not isinstance(msg["id"], (str, int)):
        return None
    return {"jsonrpc": "2.0", "id": msg["id"],
            "error": {"code": PARSE_ERROR, "message": f"agentguard refused the message: {reason}"}}


class StrictLines:
    """The stdin lines of a stdio MCP server, each checked by ``loads_strict`` first: a line that passes
    is yielded unchanged; a refused request is replaced by :func:`refused_request` (same id); a refused
    message without an id is dropped."""

    def __init__(self, source: Any) -> None:
        self._source = source

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._source:
            if not line.strip():
                yield line
                continue
            try:
                loads_strict(line)
            except StrictJSONError as exc:
                replacement = refused_request(line, str(exc))
                if replacement is not None:
                    yield replacement
                continue
            yield line


def refused_request(raw: str | bytes, reason: str) -> str | None:
    """A request for ``agentguard/refused`` with the refused message's id (None without an id)."""
    error = refusal_for(raw, reason)
    if error is None:
        return None
    return json.dumps({"jsonrpc": "2.0", "id": error["id"], "method": REFUSED_METHOD,
                       "params": {"reason": reason}}) + "\n"


def strict_http_app(app: Any) -> Any:
    """Wrap a Streamable HTTP ASGI app: POST bodies that ``loads_strict`` refuses get 400 here."""

    async def strict_app(scope: dict, receive: Callable, send: Callable) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            event = await receive()
            if event["type"] == "http.disconnect":
                return
            chunks.append(event.get("body", b""))
            more = event.get("more_body", False)
        body = b"".join(chunks)
        try:
            loads_strict(body)
        except StrictJSONError as exc:
            error = refusal_for(body, str(exc)) or {
                "jsonrpc": "2.0", "id": None,
                "error": {"code": PARSE_ERROR, "message": f"agentguard refused the message: {exc}"}}
            payload = json.dumps(error).encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})
            return
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return strict_app


def hardened_http_app(app: Any, *, token: str | None = None, max_body: int = 1 << 20) -> Any:
    """The Streamable HTTP front door: the project's one hardening middleware
    (:class:`agentguard.asgi.Hardening`: bearer token when ``token`` is set, body-size limit and slow-body
    timeout, concurrency cap, security headers) around :func:`strict_http_app`, the same as the service's
    and the LiteLLM endpoint's."""
    from ...asgi import Hardening

    return Hardening(strict_http_app(app), token=token, max_body=max_body, realm="agentguard-mcp")
