"""The service's front door and response helpers: :class:`Gate`, the shared HTTP hardening
(:class:`agentguard.asgi.Hardening`: bearer token, body limit, concurrency, security headers) configured
for the service, with request metrics and the lean ``/v1/check`` path; and the JSON response class every
route uses."""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable, Iterable

from starlette.responses import Response

from ..asgi.hardening import (AMBIGUOUS, CSP, DOCS_CSP, SECURITY_HEADERS, Hardening, Receive, Scope, Send, Stamped,
                              authorization)
from .credentials import CredentialStore, Principal, permitted, required_role
from .jsonutil import dumps
from .metrics import Metrics

__all__ = ["ANONYMOUS", "BytesJSON", "CSP", "Gate", "JSONResponse", "PRINCIPAL", "PUBLIC_PATHS", "PUBLIC_PREFIXES",
           "SECURITY_HEADERS", "error", "principal_of", "route_label", "validation_response"]

#: the ``scope`` key under which the gate leaves the caller's :class:`~.credentials.Principal`
PRINCIPAL = "agentguard.principal"
#: the caller of a service that runs without authentication (tests, a loopback sidecar): every role but
#: ``approver`` (with no credentials there is no identity to record for an answer)
ANONYMOUS = Principal("anonymous", frozenset({"agent", "reader", "admin"}))


def principal_of(scope: Any) -> Principal:
    """The caller the gate identified (``ANONYMOUS`` when the service runs without authentication)."""
    p = scope.get(PRINCIPAL) if hasattr(scope, "get") else None
    return p if isinstance(p, Principal) else ANONYMOUS

PUBLIC_PATHS = frozenset({"/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/dashboard", "/",
                          "/favicon.ico"})
PUBLIC_PREFIXES = ("/static/",)


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)


class BytesJSON(Response):
    """A 200 answer whose JSON body is already encoded: the two headers set directly (what
    ``Response.init_headers`` computes for it, without its general case on the decision path)."""

    media_type = "application/json"

    def __init__(self, body: bytes) -> None:  # noqa: D107 - no super().__init__: nothing else to set up
        self.status_code = 200
        self.body = body
        self.background = None
        self.raw_headers = [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]


def error(status: int, message: str, detail: Any = None, headers: dict[str, str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"error": message}
    if detail is not None:
        body["detail"] = detail
    return JSONResponse(body, status_code=status, headers=headers)


def route_label(path: str, known: frozenset[str] | None = None) -> str:
    """The metrics label of a request path: a route of the service (``known``: the app's paths without
    parameters; PUBLIC_PATHS when not given), a run's route with ``{run_id}``, ``/static``, else ``other``.

    Guaranteed: the labels are a fixed set whatever the requests are. Every request is counted, those refused
    for want of a credential included, so a label taken from the path let anyone grow the metrics (and their
    memory) by one series per distinct path."""
    if path.startswith("/v1/runs/"):
        tail = path.rsplit("/", 1)[-1]
        if tail in ("steps", "signals"):
            return f"/v1/runs/{{run_id}}/{tail}"
        return "/v1/runs/{run_id}"
    if path.startswith("/static/"):
        return "/static"
    return path if path in (PUBLIC_PATHS if known is None else known) else "other"


class Gate(Hardening):
    """The service's :class:`~agentguard.asgi.Hardening`: bearer token on every path but the public ones,
    ``max_body`` (413, counted whether or not a Content-Length was declared), ``max_concurrency`` (503),
    ``body_timeout_s`` (408), the security headers and CSP (the Swagger page keeps its own sources),
    request metrics, and ``fast``: paths whose POST body goes straight to a handler (the same handler as
    the routed endpoint), skipping routing.
    """

    def __init__(self, app: Any, *, token: str | None, max_body: int, metrics: Metrics,
                 fast: dict[str, Callable[[bytes, Principal, Any], Awaitable[Response]]] | None = None,
                 max_concurrency: int = 512, body_timeout_s: float = 30.0,
                 credentials: CredentialStore | None = None, routes: Iterable[str] = ()) -> None:
        self.credentials = credentials if credentials is not None else CredentialStore(None, token)
        super().__init__(app, token=token, public_paths=PUBLIC_PATHS, public_prefixes=PUBLIC_PREFIXES,
                         max_body=max_body, body_timeout_s=body_timeout_s, max_concurrency=max_concurrency,
                         csp_for=lambda path: DOCS_CSP if path.startswith("/docs") else CSP,
                         on_request=metrics.request)
        self.fast = fast or {}
        self.metrics = metrics
        self.routes = frozenset(PUBLIC_PATHS | {str(r) for r in routes if "{" not in str(r)})
        self._lean: tuple[Any, dict[str, Any]] = (None, {})  # (the ``fast`` it was built from, the lean paths)

    def lean_paths(self) -> dict[str, Any]:
        """The lean paths of ``fast`` (rebuilt when ``fast`` is replaced): the authenticated and counted ones only (a
        public or exempt path takes the general route), with their handler, metrics label and response headers."""
        built, lean = self._lean
        if built is not self.fast:
            lean = {path: (handler, self.label(path), self.extra_headers(path)) for path, handler in self.fast.items()
                    if not self.public(path) and path not in self.exempt}
            self._lean = (self.fast, lean)
        return lean

    def label(self, path: str) -> str:
        return route_label(path, self.routes)

    def check_access(self, scope: Scope, headers: Iterable[tuple[bytes, bytes]]) -> tuple[int, str] | None:
        """Identify the caller by its bearer token (:class:`~.credentials.CredentialStore`: the credentials
        file's hashed tokens and the legacy single token), leave it in ``scope[PRINCIPAL]``, and refuse a
        path its roles do not cover (403 naming the role needed).

        Without authentication (an app embedded without credentials, e.g. a loopback sidecar; ``agentguard serve``
        refuses to start so: every caller is :data:`ANONYMOUS`), a request other than GET
        or HEAD that a browser sent for a web page (:func:`_from_a_page`) is 403. Session 26 red team: the service
        reads a body whatever its Content-Type, so any page its user opened could POST ``text/plain`` JSON to
        ``http://127.0.0.1:8787`` (a "simple" cross-site request: no preflight, no CORS needed to send it) and feed
        the sidecar's runs: latch a HALT, move a monitor, poison the traces the DTMC learns from. No page has a
        reason to write to the service (it answers no CORS; the dashboard only reads); with a token none can (a
        page cannot add ``Authorization`` to a cross-site request without a preflight the service never grants)."""
        creds = self.credentials
        if not creds.enabled:
            if scope["method"] not in ("GET", "HEAD") and _from_a_page(headers):
                return 403, ("a request sent by a web page (Origin or Sec-Fetch-Site header) may not change a service "
                             "that runs without authentication: set a token or a credentials file")
            p: Principal | None = ANONYMOUS
        else:
            n, auth = authorization(headers)
            if n > 1:
                return 401, AMBIGUOUS
            if not auth:
                return 401, "missing bearer token"
            scheme, _, tok = auth.partition(b" ")
            tok = tok.strip()
            p = creds.identify(tok) if tok and (scheme == b"Bearer" or scheme.lower() == b"bearer") else None
            if p is None:
                return 401, "invalid bearer token"
        assert p is not None
        method, path = scope["method"], scope["path"]
        if not permitted(p, method, path):
            need = required_role(method, path)
            return 403, (f"the credential of {p.identity!r} ({', '.join(sorted(p.roles))}) may not {method} {path}: "
                         f"it needs the {need} role")
        scope[PRINCIPAL] = p
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The lean paths (``fast``: a POST whose handler answers it, skipping routing) here, every other request
        through :class:`~agentguard.asgi.Hardening` (which a request refused before its body is read takes too): the
        same checks in the same order, the same headers, metrics and errors."""
        lean = self.lean_paths().get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if lean is None or self.in_flight >= self.max_concurrency:  # over the limit: queued or refused there
            await super().__call__(scope, receive, send)
            return
        t0 = time.perf_counter()
        handler, label, extra = lean
        stamped = Stamped(send, extra)  # the status counted is the one sent (500 until then), as in Hardening
        self.in_flight += 1
        try:
            await self._answer_lean(scope, receive, stamped, handler)
        finally:
            self.in_flight -= 1
            self.metrics.request(label, stamped.status, time.perf_counter() - t0)

    async def _answer_lean(self, scope: Scope, receive: Receive, stamped: Stamped,
                           handler: Callable[[bytes, Principal, Any], Awaitable[Response]]) -> None:
        """Answer a request of a lean path (its slot counted by the caller)."""
        headers = scope["headers"]
        if self.check_access(scope, headers) is not None or self.declared_refusal(headers) is not None:
            await self._gated(scope, receive, stamped, scope["path"])  # refused there, with its one-line error
            return
        body = await self.read_body(receive, stamped, scope)
        if body is None:
            return
        resp = await self._handled(handler, body, scope)
        if type(resp) is BytesJSON and resp.background is None:  # what Response.__call__ sends, headers added
            stamped.status = resp.status_code
            await stamped.send({"type": "http.response.start", "status": resp.status_code,
                                "headers": [*resp.raw_headers, *stamped.extra]})
            await stamped.send({"type": "http.response.body", "body": resp.body})
            return
        await resp(scope, receive, stamped)

    async def forward(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        handler = self.fast.get(scope["path"]) if scope["method"] == "POST" else None
        if handler is None:
            await super().forward(scope, body, receive, send)
            return
        await (await self._handled(handler, body, scope))(scope, receive, send)

    @staticmethod
    async def _handled(handler: Callable[[bytes, Principal, Any], Awaitable[Response]], body: bytes,
                       scope: Scope) -> Response:
        """A lean path's answer: the handler's, or a 500 that carries no verdict when it raises (never a verdict
        without its audit record)."""
        try:
            return await handler(body, principal_of(scope), scope.get("headers", ()))
        except Exception as exc:
            return error(500, f"internal error, no verdict given: {type(exc).__name__}")


_PAGE_HEADERS = (b"origin", b"sec-fetch-site")


def _from_a_page(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether a browser sent the request for a web page: it carries ``Origin`` (every cross-site POST does) or
    ``Sec-Fetch-Site`` (every request of a current browser does). HTTP clients (httpx, requests, curl, the
    agentguard client) send neither."""
    return any(k in _PAGE_HEADERS or (len(k) in (6, 14) and k.lower() in _PAGE_HEADERS) for k, _v in headers)


def validation_response(errors: list[dict[str, Any]]) -> JSONResponse:
    """400 for malformed JSON, 422 with a one-line summary for invalid fields."""
    if any(e.get("type") == "json_invalid" for e in errors):
        e = next(e for e in errors if e.get("type") == "json_invalid")
        ctx = e.get("ctx", {}).get("error", "")
        return error(400, f"malformed JSON body: {ctx or e.get('msg', '')}".rstrip(": "))
    parts, clean = [], []
    for e in errors[:20]:
        # a key is a client's text: one that is not printable (a newline) is shown escaped, so the summary
        # stays one line
        loc = ".".join(str(x) if str(x).isprintable() else ascii(x) for x in e.get("loc", ()) if x != "body") or "body"
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
        clean.append({"loc": [str(x) for x in e.get("loc", ())], "msg": e.get("msg"), "type": e.get("type")})
    more = f" (+{len(errors) - 20} more)" if len(errors) > 20 else ""
    return error(422, "invalid request: " + "; ".join(parts) + more, clean)
