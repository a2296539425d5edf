"""The one HTTP hardening middleware of every agentguard endpoint: :class:`Hardening`.

The guard service (:mod:`agentguard.server`), the LiteLLM guardrail endpoint
(:mod:`agentguard.integrations.litellm`) and the MCP proxy over Streamable HTTP all sit behind it. One
request passes, in this order:

1. **concurrency**: at most ``max_concurrency`` requests in flight (``exempt`` paths such as ``/health``
   are not counted, so a load balancer's probe answers while the service is saturated); a request over
   the limit waits up to ``queue_timeout_s`` for a slot, then gets 503 with ``Retry-After: 1``;
2. **authentication** (:meth:`Hardening.check_access`, which a subclass may extend with roles: 403 for a
   caller whose credential does not cover the path): unless the path is public (``public_paths``, ``public_prefixes``), the
   ``Authorization`` header must equal ``Bearer <token>`` - or, where ``api_key_header`` is set (LiteLLM
   sends its guardrail ``api_key`` as ``x-api-key``), that header must equal the token - compared in
   constant time (:func:`hmac.compare_digest`, both candidates always compared); 401 with
   ``WWW-Authenticate`` otherwise, and for a request carrying more than one credential header
   (:func:`credential_headers`: a repeated ``Authorization``, or one beside the API-key header);
3. **body**: a public path takes none (POST, PUT or PATCH there is 405 before a byte is read: a body nobody
   authenticated would hold a concurrency slot for up to ``body_timeout_s``, so a few hundred slow anonymous
   uploads to ``/dashboard`` answered every agent 503); for POST, PUT and PATCH a declared ``Content-Length`` that is not a non-negative integer is
   400 and one over ``max_body`` is 413 before a byte is read; the body is then read here, counting what
   arrives (a chunked body over the limit is 413 too), within ``body_timeout_s`` (408 and the connection
   closed otherwise), and replayed to the app, so no framework parses an oversized body;
4. **headers on every response** (the app's, and the errors above): ``X-Frame-Options: DENY``,
   ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``,
   ``Cross-Origin-Opener-Policy: same-origin`` and a Content-Security-Policy (``csp``; ``csp_for(path)``
   chooses another per path, e.g. the Swagger page);
5. ``on_request(path, status, seconds)`` after each request (the service's metrics).

Only ``http`` requests are served, and ``lifespan`` events passed on: a WebSocket handshake is refused (closed
with 1008 before it is accepted, which the server answers 403) and any other scope type is dropped, so a route
of a type these checks do not cover can never be reached without them.

Every error is one JSON object ``{"error": "..."}``, sent by :meth:`Hardening.refuse` (a subclass may
answer otherwise: the LiteLLM endpoint answers its guardrail path with BLOCKED, never an HTTP error). A subclass may serve some requests itself once
the body is read (:meth:`Hardening.forward`; the service's lean ``/v1/check`` path does).

Why a pure ASGI class and not Starlette's ``BaseHTTPMiddleware`` (or another package): it must sit
below both the server and the integrations (this package imports only :mod:`agentguard.core`), run
unchanged in front of FastAPI, a bare Starlette app and the MCP SDK's Streamable HTTP app, and refuse
a request before any of them reads the body; ``BaseHTTPMiddleware`` reads through the wrapped app's
request stream and adds a task per request on the hot path. What it does not do is connection-level
limits (slow headers, idle floods): those belong to the HTTP server's protocol (see
``agentguard.server.protocol``).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import time
import types
from typing import Any, Awaitable, Callable, Iterable, MutableMapping

__all__ = ["AMBIGUOUS", "CSP", "DOCS_CSP", "Hardening", "SECURITY_HEADERS", "Stamped", "authorization",
           "credential_headers", "send_error"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Content-Security-Policy of every response by default: same-origin scripts, styles and fetches only,
#: no inline code, never framed.
CSP = (b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       b"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
#: For a page that loads its script from a CDN and runs an inline one (the Swagger UI): it keeps its own
#: sources but may not be framed either.
DOCS_CSP = b"frame-ancestors 'none'; object-src 'none'; base-uri 'none'"
#: Sent with every response: no framing, no MIME sniffing, no referrer.
SECURITY_HEADERS = ((b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"), (b"cross-origin-opener-policy", b"same-origin"))

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: the 401 of a request that names more than one credential
AMBIGUOUS = "more than one credential header (Authorization or API key): send exactly one"


def credential_headers(headers: Iterable[tuple[bytes, bytes]], api_key_header: bytes | None = None) -> int:
    """How many credential headers a request carries (``Authorization``, and the API-key header when one is
    configured), names compared case-insensitively. More than one is refused (401) wherever a credential
    is read: two readers of one request (this middleware, a proxy in front, the app behind) could each
    take a different one, e.g. the first for the role check and the last for the token check."""
    names = (b"authorization", api_key_header) if api_key_header is not None else (b"authorization",)
    return sum(1 for k, _v in headers if k.lower() in names)


def authorization(headers: Iterable[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    """(how many ``Authorization`` headers the request carries, names compared case-insensitively; the first one's
    value): what :func:`credential_headers` counts for a reader without an API-key header, in one pass."""
    n, first = 0, b""
    for k, v in headers:
        if k == b"authorization" or (len(k) == 13 and k.lower() == b"authorization"):
            n += 1
            if n == 1:
                first = v
    return n, first


async def send_error(send: Send, status: int, message: str,
                     headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """Answer ``{"error": message}`` with ``status``."""
    body = json.dumps({"error": message}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


_COROUTINE = types.CoroutineType


class _Resumed:
    """The rest of a coroutine that was stepped once and yielded ``first`` (what it waits for): awaiting this
    goes on exactly where it stopped, as awaiting the coroutine itself would have."""

    __slots__ = ("coro", "first")

    def __init__(self, coro: Any, first: Any) -> None:
        self.coro = coro
        self.first = first

    def __await__(self) -> Any:
        coro, y = self.coro, self.first
        self.first = None
        while True:
            try:
                sent = yield y
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - thrown in (a cancellation): the coroutine's to handle
                try:
                    y = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    y = coro.send(sent)
                except StopIteration as done:
                    return done.value

    def close(self) -> None:
        self.coro.close()


class Stamped:
    """The ``send`` of one request: adds ``extra`` (the security headers) to the response's start and keeps its
    status (500 until one is sent)."""

    __slots__ = ("send", "extra", "status")

    def __init__(self, send: Send, extra: tuple[tuple[bytes, bytes], ...]) -> None:
        self.send = send
        self.extra = extra
        self.status = 500

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            message["headers"] = [*message.get("headers", ()), *self.extra]
        await self.send(message)


class Hardening:
    """Pure-ASGI hardening in front of ``app``: see the module docstring.

    ``token=None`` serves without authentication (tests, a loopback sidecar). ``realm`` names the
    ``WWW-Authenticate`` challenge.
    """

    def __init__(self, app: ASGIApp, *, token: str | None = None, api_key_header: str | None = None,
                 public_paths: Iterable[str] = (), public_prefixes: Iterable[str] = (),
                 max_body: int = 1 << 20, body_timeout_s: float = 30.0, max_concurrency: int = 512,
                 queue_timeout_s: float = 0.0, exempt: Iterable[str] = ("/health",),
                 csp: bytes | None = CSP, csp_for: Callable[[str], bytes | None] | None = None,
                 on_request: Callable[[str, int, float], None] | None = None,
                 realm: str = "agentguard") -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.expected = b"Bearer " + self.token if self.token else None
        self.api_key_header = api_key_header.lower().encode() if api_key_header else None
        self.public_paths = frozenset(public_paths)
        self.public_prefixes = tuple(public_prefixes)
        self.max_body = int(max_body)
        self.body_timeout_s = float(body_timeout_s)
        self.max_concurrency = max(1, int(max_concurrency))
        self.queue_timeout_s = max(0.0, float(queue_timeout_s))
        self.exempt = frozenset(exempt)
        self.csp = csp
        self.csp_for = csp_for
        self.on_request = on_request
        self.challenge = f'Bearer realm="{realm}"'.encode()
        self.in_flight = 0
        self._extra: dict[bytes | None, tuple[tuple[bytes, bytes], ...]] = {}

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.app!r}, auth={'on' if self.token else 'off'}, "
                f"max_body={self.max_body}, max_concurrency={self.max_concurrency})")

    # -- the checks ---------------------------------------------------------------------------------
    def public(self, path: str) -> bool:
        return path in self.public_paths or path.startswith(self.public_prefixes)

    def authorised(self, headers: Iterable[tuple[bytes, bytes]]) -> tuple[bool, str]:
        """(ok, why not): the bearer token, or the API-key header, compared in constant time."""
        if self.expected is None or self.token is None:
            return True, ""
        if credential_headers(headers, self.api_key_header) > 1:
            return False, AMBIGUOUS
        auth = key = b""
        for k, v in headers:
            k = k.lower()
            if k == b"authorization":
                auth = v
            elif self.api_key_header is not None and k == self.api_key_header:
                key = v
        ok = hmac.compare_digest(auth, self.expected)
        if self.api_key_header is not None:
            ok = hmac.compare_digest(key, self.token) | ok
        if ok:
            return True, ""
        return False, ("missing bearer token" if not auth and not key else "invalid bearer token")

    def check_access(self, scope: Scope, headers: Iterable[tuple[bytes, bytes]]) -> tuple[int, str] | None:
        """None when the request may go on, else (status, why): 401 without a valid credential. A subclass
        may identify the caller here (roles, per-caller credentials) and answer 403 for a forbidden path;
        what it learns goes in ``scope`` for the app."""
        ok, why = self.authorised(headers)
        return None if ok else (401, why)

    async def _slot(self) -> bool:
        if self.in_flight < self.max_concurrency:
            return True
        deadline = time.monotonic() + self.queue_timeout_s
        while time.monotonic() < deadline:
            await asyncio.sleep(0.01)
            if self.in_flight < self.max_concurrency:
                return True
        return False

    async def refuse(self, scope: Scope, send: Send, status: int, message: str,
                     headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        """Answer a request this middleware refuses (every error above goes through here):
        ``{"error": message}`` with ``status``. A subclass may answer otherwise where an HTTP error would
        be read as "go on" by the caller (the LiteLLM guardrail endpoint answers BLOCKED)."""
        await send_error(send, status, message, headers)

    async def read_body(self, receive: Receive, send: Send, scope: Scope | None = None) -> bytes | None:
        """The request body, or None once an error was answered (413 over the limit, 408 when it does
        not arrive within ``body_timeout_s``) or the client left.

        A body that has already arrived whole (the first ``receive()`` completes without waiting, as an HTTP
        server's does once it read the whole request) is taken without arming the timeout: nothing was waited
        for, so there is nothing to time out. Any message that has to be waited for is read under it."""
        aw = receive()
        msg: Message | None = None
        waiting: Any = aw
        if type(aw) is _COROUTINE:  # step it once: done means the message was ready
            try:
                first = aw.send(None)
            except StopIteration as done:
                msg = done.value
            else:
                waiting = _Resumed(aw, first)
        if msg is not None and msg["type"] == "http.request" and not msg.get("more_body", False):
            chunk = msg.get("body", b"")
            if len(chunk) <= self.max_body:
                return chunk
        return await self._read_rest(receive, send, scope, msg, waiting)

    async def _read_rest(self, receive: Receive, send: Send, scope: Scope | None, msg: Message | None,
                         waiting: Any) -> bytes | None:
        """:meth:`read_body` from its first message (``msg``, or ``waiting``: what yields it) on, under the timeout."""
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.body_timeout_s):
                while True:
                    if msg is None:
                        msg = await (waiting if waiting is not None else receive())
                    waiting = None
                    if msg["type"] == "http.disconnect":
                        return None
                    chunk = msg.get("body", b"")
                    size += len(chunk)
                    if size > self.max_body:
                        await self.refuse(scope or {}, send, 413, f"request body exceeds the limit of {self.max_body} "
                                          "bytes", [(b"connection", b"close")])
                        return None
                    chunks.append(chunk)
                    if not msg.get("more_body", False):
                        break
                    msg = None
        except TimeoutError:
            await self.refuse(scope or {}, send, 408, f"request body not received within {self.body_timeout_s:g} s",
                              [(b"connection", b"close")])
            return None
        finally:
            if waiting is not None and hasattr(waiting, "close"):
                waiting.close()  # never awaited (the timeout fired first): no "never awaited" warning
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    # -- hooks --------------------------------------------------------------------------------------
    async def forward(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        """Hand a request whose body was read to the app (the body replayed once, then the real
        ``receive`` for the disconnect). A subclass may answer some requests itself."""
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def label(self, path: str) -> str:
        """The path as ``on_request`` reports it."""
        return path

    # -- the middleware -----------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            elif scope["type"] == "websocket":  # never checked here, so never passed on: the handshake is refused
                await receive()
                await send({"type": "websocket.close", "code": 1008})
            return
        t0 = time.perf_counter()
        path = scope["path"]
        wrapped = Stamped(send, self.extra_headers(path))
        counted = path not in self.exempt
        try:
            if counted and self.in_flight >= self.max_concurrency and not await self._slot():
                await self.refuse(scope, wrapped, 503, f"over the limit of {self.max_concurrency} requests in "
                                  "flight; retry", [(b"retry-after", b"1")])
                return
            if counted:
                self.in_flight += 1
            try:
                await self._gated(scope, receive, wrapped, path)
            finally:
                if counted:
                    self.in_flight -= 1
        finally:
            if self.on_request is not None:
                self.on_request(self.label(path), wrapped.status, time.perf_counter() - t0)

    def extra_headers(self, path: str) -> tuple[tuple[bytes, bytes], ...]:
        """The headers every response to ``path`` gets (the security headers and its CSP)."""
        csp = self.csp_for(path) if self.csp_for is not None else self.csp
        got = self._extra.get(csp)
        if got is None:
            got = self._extra[csp] = (*SECURITY_HEADERS, *([(b"content-security-policy", csp)] if csp else []))
        return got

    def declared_refusal(self, headers: Iterable[tuple[bytes, bytes]]) -> tuple[int, str] | None:
        """None, or (status, why) for a declared ``Content-Length`` that is not a non-negative integer (400) or is
        over ``max_body`` (413)."""
        for k, v in headers:
            if k == b"content-length":
                try:
                    declared = int(v)
                except ValueError:
                    declared = -1
                if declared < 0:
                    return 400, "invalid Content-Length header"
                if declared > self.max_body:
                    return 413, f"request body of {declared} bytes exceeds the limit of {self.max_body} bytes"
                break
        return None

    async def _gated(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        headers = scope["headers"]
        public = self.public(path)
        if public and scope["method"] in BODY_METHODS:  # never read a body nobody authenticated
            await self.refuse(scope, send, 405, f"{path} takes no request body (it is public: GET or HEAD)",
                              [(b"allow", b"GET, HEAD"), (b"connection", b"close")])
            return
        if not public:
            denied = self.check_access(scope, headers)
            if denied is not None:
                status, why = denied
                await self.refuse(scope, send, status, why, [(b"www-authenticate", self.challenge)] if status == 401 else [])
                return
        if scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        bad = self.declared_refusal(headers)
        if bad is not None:
            await self.refuse(scope, send, bad[0], bad[1], [(b"connection", b"close")])
            return
        body = await self.read_body(receive, send, scope)
        if body is None:
            return
        await self.forward(scope, body, receive, send)
