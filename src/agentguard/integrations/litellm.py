"""LiteLLM adapter: the *Generic Guardrail API* endpoint that LiteLLM's proxy calls.

LiteLLM (``guardrail: generic_guardrail_api`` in its ``config.yaml``, ``api_base`` pointing here) POSTs
to ``/beta/litellm_basic_guardrail_api`` a JSON body with (schema of LiteLLM's
``GenericGuardrailAPIRequest``): ``texts`` (list of strings), ``tool_calls`` (OpenAI chat tool calls
``{"id", "type": "function", "function": {"name", "arguments": "<json>"}}``), ``tools`` (tool
definitions), ``images``, ``structured_messages``, ``input_type`` (``"request"`` before the model,
``"response"`` after), ``litellm_call_id``, ``litellm_trace_id``, ``request_data`` (key/team/user
metadata) and ``additional_provider_specific_params``. It expects
``{"action": "BLOCKED" | "NONE" | "GUARDRAIL_INTERVENED", "blocked_reason": ..., "texts": [...]}``;
on BLOCKED LiteLLM raises and the request/response never reaches the caller: the caller gets HTTP 400
whose error message is agentguard's refusal (``blocked_reason``), which an agent loop can read and hand
back to the model. That is the most this API allows for a tool call: LiteLLM (1.106) takes back only
``texts``, ``images``, ``tools`` and ``structured_messages`` from a guardrail, never rewritten or
dropped ``tool_calls``, so rewriting the text of a response while its forbidden tool call stays in it
would let the client run the call; agentguard therefore blocks.

Mapping: each tool call is checked by the guard as a :class:`~agentguard.core.ToolCall`; each text is
checked by ``text_guard`` (optional) as ``Step(output=text)`` for responses or ``Step(observation=text)``
for requests. The strictest verdict decides: ALLOW -> ``NONE``; a MODIFY of a text whose ``action``
is a string -> ``GUARDRAIL_INTERVENED`` with the rewritten texts; anything that blocks (REJECT,
RECOVER, ESCALATE, HALT, and a MODIFY of a tool call, which this API cannot rewrite) -> ``BLOCKED``
with the refusal as ``blocked_reason``. A guard error fails closed (BLOCKED). A malformed body is
answered HTTP 400, which LiteLLM also treats as a failure (it does not let the call through).

Per-run state is keyed on ``litellm_trace_id`` (one conversation), else ``litellm_call_id``. The trace
id contract: LiteLLM gives every request a fresh ``litellm_trace_id`` unless the *client* names one
(``"litellm_trace_id": "<conversation id>"`` in the chat-completion body, or its ``metadata``), so
stateful guards see a conversation as one run only when the client sends the same trace id on each of
its requests; without one, every request is a one-step run.

Hardening of the HTTP endpoint (:func:`serve`): a token like the service's (``token=``; the CLI
requires ``AGENTGUARD_TOKEN`` or ``--token-file``), as ``Authorization: Bearer <token>`` or as
``x-api-key: <token>`` - the header LiteLLM sends for the guardrail's ``api_key`` - compared in
constant time, 401 otherwise; a body
limit (``max_body``, 1 MiB: 413 above it, 400 for a missing, negative or malformed Content-Length),
a JSON nesting limit (``max_depth``, 64: 400), duplicate object keys refused (400: ``{"command": "rm
-rf /", "command": "ls"}`` is not "last one wins"), at most ``max_concurrency`` requests checked at
once (503 beyond, with ``Retry-After``), and a socket timeout (``timeout_s``) that closes slow clients.

What it can see: only what LiteLLM sends - texts and the model's proposed tool calls (in
``response`` mode) - not the tool results, which the client executes outside LiteLLM. It is a
synchronous endpoint (the stdlib server runs the guard's ``check`` in a thread per request); for
``during_call`` streaming LiteLLM sends the assembled text, not individual tokens (see
:mod:`agentguard.integrations.streaming` for cutting a stream).
"""

from __future__ import annotations

import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Mapping

from ..core.errors import InputError
from ..core.strict_json import StrictJSONError, loads_strict
from ..core.guard import Guard
from ..core.types import Context, Decision, Step, ToolCall, Verdict
from .recording import TraceRecorder
from .runtime import GuardRuntime, refusal_message

__all__ = ["BodyError", "GUARDRAIL_PATH", "GuardrailEndpoint", "parse_body", "serve", "serve_in_thread"]

GUARDRAIL_PATH = "/beta/litellm_basic_guardrail_api"


class BodyError(InputError):
    """A request body the endpoint refuses, with its HTTP status (400 or 413)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _tool_call(tc: Any, i: int) -> ToolCall:
    if not isinstance(tc, Mapping):
        raise InputError(f"tool_calls[{i}] must be an object")
    fn = tc.get("function") if isinstance(tc.get("function"), Mapping) else tc
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"tool_calls[{i}] has no function name")
    raw = fn.get("arguments")
    if isinstance(raw, Mapping):
        args = dict(raw)
    elif raw in (None, ""):
        args = {}
    else:
        try:  # duplicate keys refused here too: '{"command": "rm -rf /", "command": "ls"}' is not "ls"
            args = loads_strict(raw)
        except StrictJSONError as exc:
            msg = str(exc)
            raise InputError(f"tool_calls[{i}] ({name}): arguments: {msg}" if "duplicate" in msg else
                             f"tool_calls[{i}] ({name}): arguments are not valid JSON") from None
        except TypeError:
            raise InputError(f"tool_calls[{i}] ({name}): arguments are not valid JSON") from None
        if not isinstance(args, dict):
            raise InputError(f"tool_calls[{i}] ({name}): arguments must be a JSON object")
    return ToolCall(name, args, str(tc.get("id") or ""))


class GuardrailEndpoint:
    """The request -> response logic of LiteLLM's generic guardrail API, around any Guard."""

    def __init__(
        self,
        guard: Guard,
        *,
        text_guard: Guard | None = None,
        recorder: TraceRecorder | None = None,
        on_error: Decision | str = Decision.HALT,
        state_fn: Callable[[Context, Any], Any] | None = None,
    ) -> None:
        self.runtime = GuardRuntime(
            guard, recorder=recorder, adapter="litellm", on_error=on_error, state_fn=state_fn
        )
        self.text_runtime = (
            GuardRuntime(text_guard, adapter="litellm", on_error=on_error) if text_guard is not None else None
        )

    def __repr__(self) -> str:
        return f"GuardrailEndpoint({self.runtime.guard!r})"

    @staticmethod
    def parse(payload: Any) -> tuple[str, str, list[str], list[ToolCall]]:
        """Validate a request body: (run key, input_type, texts, tool calls); InputError if malformed."""
        if not isinstance(payload, Mapping):
            raise InputError("the request body must be a JSON object")
        input_type = payload.get("input_type", "request")
        if input_type not in ("request", "response"):
            raise InputError(f"input_type must be 'request' or 'response', not {input_type!r}")
        texts = payload.get("texts") or []
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise InputError("texts must be a list of strings")
        raw_calls = payload.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise InputError("tool_calls must be a list")
        calls = [_tool_call(tc, i) for i, tc in enumerate(raw_calls)]
        key = payload.get("litellm_trace_id") or payload.get("litellm_call_id") or "default"
        return str(key), input_type, list(texts), calls

    def handle(self, payload: Any) -> dict[str, Any]:
        """Answer one guardrail request (synchronous; uses the guards' ``check``)."""
        key, input_type, texts, calls = self.parse(payload)
        ctx = self.runtime.context(key, input_type=input_type)
        decided: list[tuple[Verdict, Any]] = []
        for c in calls:
            decided.append((self.runtime.check(ctx, c), c))
        if self.text_runtime is not None:
            tctx = self.text_runtime.context(key)
            for i, t in enumerate(texts):
                step = Step(output=t) if input_type == "response" else Step(observation=t)
                decided.append((self.text_runtime.check(tctx, step), i))
        return self._respond(ctx, texts, decided)

    def _respond(self, ctx: Context, texts: list[str], decided: list[tuple[Verdict, Any]]) -> dict[str, Any]:
        """``decided``: (verdict, ToolCall) for tool calls, (verdict, index into texts) for texts."""
        worst = max(decided, key=lambda vp: vp[0].decision, default=None)
        for v, p in decided:
            if isinstance(p, ToolCall):
                blocked = v.blocks or v.decision is Decision.MODIFY
                self.runtime.record(ctx, p, v, observation=refusal_message(v, p) if blocked else None)
        if worst is None or worst[0].decision is Decision.ALLOW:
            return {"action": "NONE"}
        v, p = worst
        if v.decision is Decision.MODIFY:
            new_texts = list(texts)
            rewrites = [(vv, pp) for vv, pp in decided if vv.decision is Decision.MODIFY]
            if all(isinstance(pp, int) and isinstance(vv.action, str) for vv, pp in rewrites):
                for vv, pp in rewrites:  # pp: the index of the rewritten text
                    new_texts[pp] = vv.action
                return {"action": "GUARDRAIL_INTERVENED", "texts": new_texts}
        return {
            "action": "BLOCKED",
            "blocked_reason": refusal_message(v, p if isinstance(p, ToolCall) else None),
        }


def parse_body(data: bytes, max_depth: int = 64) -> Any:
    """Decode a request body: strict JSON, no duplicate keys, nesting at most ``max_depth``."""
    try:
        return loads_strict(data, max_depth)
    except StrictJSONError as exc:
        msg = str(exc)
        raise BodyError(msg if ("duplicate" in msg or "nested" in msg) else "body is not valid JSON") from None


class _Handler(BaseHTTPRequestHandler):
    endpoint: GuardrailEndpoint
    token: str | None = None
    max_body: int = 1 << 20
    max_depth: int = 64
    slots: threading.BoundedSemaphore
    protocol_version = "HTTP/1.1"
    timeout = 30.0  # socket timeout: a client that stalls is disconnected
    disable_nagle_algorithm = True  # one small JSON answer per request: do not wait for delayed ACKs
    wbufsize = 1 << 16  # headers and body leave in one write (flushed after each request)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return None

    def _send(self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if code >= 400 and code != 401:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/health", ""):
            self._send(200, {"status": "ok"})
        else:
            self._send(404, {"error": f"no route {self.path}"})

    def _authorised(self) -> bool:
        if self.token is None:
            return True
        want = self.token.encode()
        bearer = (self.headers.get("Authorization") or "").encode()
        key = (self.headers.get("x-api-key") or "").encode()  # what LiteLLM sends for litellm_params.api_key
        return hmac.compare_digest(bearer, b"Bearer " + want) | hmac.compare_digest(key, want)

    def _body(self) -> Any:
        raw = self.headers.get("Content-Length")
        if raw is None or not raw.strip().isdigit():
            raise BodyError("a Content-Length (a non-negative integer) is required")
        n = int(raw)
        if n > self.max_body:
            raise BodyError(f"body of {n} bytes is over the limit of {self.max_body}", 413)
        return parse_body(self.rfile.read(n), self.max_depth)

    def do_POST(self) -> None:
        if self.path.split("?")[0].rstrip("/") != GUARDRAIL_PATH:
            self._send(404, {"error": f"no route {self.path}; POST {GUARDRAIL_PATH}"})
            return
        if not self._authorised():
            self._send(401, {"error": "missing or wrong bearer token"}, {"WWW-Authenticate": "Bearer"})
            return
        try:
            payload = self._body()
        except BodyError as exc:
            self._send(exc.status, {"error": str(exc)})
            return
        if not self.slots.acquire(timeout=5.0):
            self._send(503, {"error": "too many guardrail requests at once"}, {"Retry-After": "1"})
            return
        try:
            self._send(200, self.endpoint.handle(payload))
        except InputError as exc:
            self._send(400, {"error": str(exc)})
        except Exception as exc:  # fail closed: never NONE because something broke
            self._send(
                200,
                {"action": "BLOCKED", "blocked_reason": f"agentguard failed: {type(exc).__name__}: {exc}"},
            )
        finally:
            self.slots.release()


def serve(
    endpoint: GuardrailEndpoint,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    token: str | None = None,
    max_body: int = 1 << 20,
    max_depth: int = 64,
    max_concurrency: int = 32,
    timeout_s: float = 30.0,
) -> ThreadingHTTPServer:
    """A stdlib HTTP server for the endpoint (not started: call ``serve_forever``; port 0 picks one).
    ``token=None`` serves without authentication (tests, a loopback sidecar); see the module doc."""
    handler = type("AgentGuardLiteLLMHandler", (_Handler,), {
        "endpoint": endpoint, "token": token, "max_body": int(max_body), "max_depth": int(max_depth),
        "slots": threading.BoundedSemaphore(max(1, int(max_concurrency))), "timeout": float(timeout_s),
    })
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def serve_in_thread(
    endpoint: GuardrailEndpoint, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> ThreadingHTTPServer:
    """Start :func:`serve` on a daemon thread (tests, embedding); ``server.shutdown()`` stops it."""
    server = serve(endpoint, host, port, **options)
    threading.Thread(target=server.serve_forever, daemon=True, name="agentguard-litellm").start()
    return server

