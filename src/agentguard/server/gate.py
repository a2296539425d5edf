"""The service's front door and response helpers: a pure-ASGI gate (bearer token, body limit,
request metrics, the lean ``/v1/check`` path) and the JSON response class every route uses."""

from __future__ import annotations

import asyncio
import hmac
import time
from typing import Any, Awaitable, Callable

from starlette.responses import Response

from .jsonutil import dumps
from .metrics import Metrics

__all__ = ["CSP", "Gate", "JSONResponse", "PUBLIC_PATHS", "PUBLIC_PREFIXES", "SECURITY_HEADERS", "error",
           "route_label"]

PUBLIC_PATHS = frozenset({"/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/dashboard", "/",
                          "/favicon.ico"})
PUBLIC_PREFIXES = ("/static/",)

#: Content-Security-Policy of every response but the Swagger page: same-origin scripts, styles and
#: fetches only, no inline code, never framed (the dashboard is plain HTML + one script + one sheet).
CSP = (b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       b"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
#: The Swagger UI at ``/docs`` loads its script from a CDN and runs an inline one: it keeps its own
#: sources but may not be framed either.
DOCS_CSP = b"frame-ancestors 'none'; object-src 'none'; base-uri 'none'"
#: Sent with every response (API, dashboard, errors): no framing, no MIME sniffing, no referrer.
SECURITY_HEADERS = ((b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"), (b"cross-origin-opener-policy", b"same-origin"))


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)


def error(status: int, message: str, detail: Any = None, headers: dict[str, str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"error": message}
    if detail is not None:
        body["detail"] = detail
    return JSONResponse(body, status_code=status, headers=headers)


def route_label(path: str) -> str:
    if path.startswith("/v1/runs/"):
        tail = path.rsplit("/", 1)[-1]
        if tail in ("steps", "signals"):
            return f"/v1/runs/{{run_id}}/{tail}"
        return "/v1/runs/{run_id}"
    if path.startswith("/static/"):
        return "/static"
    return path if len(path) < 64 else "other"


class Gate:
    """Pure-ASGI front door: bearer-token check, body-size limit, request metrics.

    The body is read here (at most ``max_body`` bytes) and replayed to the app, so an oversized body
    is refused with 413 before any parsing, whether or not it declared a Content-Length.
    """

    def __init__(self, app: Any, *, token: str | None, max_body: int, metrics: Metrics,
                 fast: dict[str, Callable[[bytes], Awaitable[Response]]] | None = None,
                 max_concurrency: int = 512, body_timeout_s: float = 30.0) -> None:
        self.app = app
        self.fast = fast or {}
        self.expected = ("Bearer " + token).encode() if token else None
        self.max_body = max_body
        self.metrics = metrics
        self.max_concurrency = max_concurrency
        self.body_timeout_s = body_timeout_s
        self.in_flight = 0

    async def _send_error(self, send: Callable, status: int, message: str, extra: list | None = None) -> None:
        body = dumps({"error": message})
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
        await send({"type": "http.response.body", "body": body})

    async def _read_body(self, receive: Callable, send: Callable) -> bytes | None:
        """The request body, or None once an error was answered (413 over the limit, 408 when it does
        not arrive within ``body_timeout_s``) or the client left."""
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.body_timeout_s):
                while True:
                    msg = await receive()
                    if msg["type"] == "http.disconnect":
                        return None
                    chunk = msg.get("body", b"")
                    size += len(chunk)
                    if size > self.max_body:
                        await self._send_error(send, 413, f"request body exceeds the limit of {self.max_body} bytes")
                        return None
                    chunks.append(chunk)
                    if not msg.get("more_body", False):
                        break
        except TimeoutError:
            await self._send_error(send, 408, f"request body not received within {self.body_timeout_s:g} s",
                                   [(b"connection", b"close")])
            return None
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        path = scope["path"]
        status_box = [500]

        async def send_wrapped(message: dict) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
                csp = DOCS_CSP if path.startswith("/docs") else CSP
                message["headers"] = [*message.get("headers", ()), *SECURITY_HEADERS,
                                      (b"content-security-policy", csp)]
            await send(message)

        if path != "/health" and self.in_flight >= self.max_concurrency:
            self.metrics.request(route_label(path), 503, time.perf_counter() - t0)
            await self._send_error(send_wrapped, 503, f"over the limit of {self.max_concurrency} requests in "
                                   "flight; retry", [(b"retry-after", b"1")])
            return
        self.in_flight += 1
        try:
            public = path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)
            headers = scope["headers"]
            if not public and self.expected is not None:
                auth = b""
                for k, v in headers:
                    if k == b"authorization":
                        auth = v
                        break
                if not hmac.compare_digest(auth, self.expected):
                    msg = "missing bearer token" if not auth else "invalid bearer token"
                    await self._send_error(send_wrapped, 401, msg, [(b"www-authenticate", b'Bearer realm="agentguard"')])
                    return
            if scope["method"] in ("POST", "PUT", "PATCH"):
                declared = None
                for k, v in headers:
                    if k == b"content-length":
                        try:
                            declared = int(v)
                        except ValueError:
                            declared = -1
                        if declared < 0:
                            await self._send_error(send_wrapped, 400, "invalid Content-Length header")
                            return
                        break
                if declared is not None and declared > self.max_body:
                    await self._send_error(send_wrapped, 413,
                                           f"request body of {declared} bytes exceeds the limit of {self.max_body} bytes")
                    return
                body = await self._read_body(receive, send_wrapped)
                if body is None:
                    return
                handler = self.fast.get(path) if scope["method"] == "POST" else None
                if handler is not None:  # lean hot path: same handler as the routed endpoint
                    try:
                        resp = await handler(body)
                    except Exception as exc:  # never a verdict without its audit record
                        resp = error(500, f"internal error, no verdict given: {type(exc).__name__}")
                    await resp(scope, receive, send_wrapped)
                    return
                sent = False

                async def replay() -> dict:
                    nonlocal sent
                    if not sent:
                        sent = True
                        return {"type": "http.request", "body": body, "more_body": False}
                    return await receive()

                await self.app(scope, replay, send_wrapped)
            else:
                await self.app(scope, receive, send_wrapped)
        finally:
            self.in_flight -= 1
            self.metrics.request(route_label(path), status_box[0], time.perf_counter() - t0)
