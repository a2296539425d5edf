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

Mapping: every tool call and every text goes through one :class:`~agentguard.core.pipeline.Pipeline`
(``adapter="litellm"``; texts through a second one around ``text_guard``, optional): a tool call as a
:class:`~agentguard.core.ToolCall`, a text as ``Step(output=text)`` for responses or
``Step(observation=text)`` for requests. The answer is read from the outcomes
(:class:`~agentguard.core.enforcement.Outcome`): every call runs unchanged and every text passes -> ``NONE``; texts rewritten (a MODIFY whose ``action`` is
a string) and nothing else -> ``GUARDRAIL_INTERVENED`` with the rewritten texts; anything else (a refused
call, one the strategy replaced or modified, which this API cannot rewrite, an ESCALATE, which it cannot
ask a human about, a stop) -> ``BLOCKED`` with the refusal of the strictest outcome as ``blocked_reason``
(with what the strategy adds: a CRP round's instruction). A guard error fails closed (BLOCKED), and a
stopping outcome latches HALT for the run. A tool call whose arguments are not one strict JSON object
(a repeated key, NaN, 1e999, not JSON, an integer beyond 2**53 that a JavaScript client reads as another number) is
refused by the Pipeline like a refused call (audited). A call of a tool the body declares (``tools``: LiteLLM sends
them with a request; the recipe's guardrail file with a response too) is judged as the client's tool receives it:
refused unless its arguments already have the declared parameter types (an agent loop's lax validation reads
``"off"`` as ``False``), with the declared defaults of what it leaves out filled in (:mod:`.declared`).

Nothing on the guardrail path is answered with an HTTP error (:func:`refused`): a malformed body, one over
the size limit or too slow, a request over the concurrency limit, a missing token are all ``BLOCKED``
with HTTP 200 and the reason. LiteLLM treats a guardrail's HTTP error as "proceed without the guardrail"
when it is configured ``fail_on_error: false`` (any status) or ``unreachable_fallback: fail_open``
(502/503/504), which would let through exactly the response that could not be checked.

Per-run state is keyed on ``litellm_trace_id`` (one conversation), else ``litellm_call_id``. The trace
id contract: LiteLLM gives every request a fresh ``litellm_trace_id`` unless the *client* names one
(``"litellm_trace_id": "<conversation id>"`` in the chat-completion body, or its ``metadata``), so
stateful guards see a conversation as one run only when the client sends the same trace id on each of
its requests; without one, every request is a one-step run.

Hardening of the HTTP endpoint (:func:`serve`, an ASGI app under uvicorn): the shared
:class:`agentguard.asgi.Hardening` - a token like the service's (``token=``; the CLI requires
``AGENTGUARD_TOKEN`` or ``--token-file``), as ``Authorization: Bearer <token>`` or as ``x-api-key:
<token>`` (the header LiteLLM sends for the guardrail's ``api_key``), compared in constant time; a body
limit (``max_body``, 1 MiB, declared or streamed; a negative or malformed Content-Length refused); at most
``max_concurrency`` requests checked at once (a request waits up to 5 s for a slot); the body must arrive
within ``timeout_s``, and an idle keep-alive connection is closed after it; what is not decided within
``timeout_s`` after that is refused through the Pipeline (audited): LiteLLM's own HTTP timeout never answers
for a slow guard. Here: a JSON nesting limit
(``max_depth``, 64) and duplicate object keys refused (``{"command": "rm -rf /", "command": "ls"}`` is not
"last one wins"). Each of these refusals of a guardrail request is ``BLOCKED`` (see above; the status it
would have had, 401, 413, 408, 503 or 400, is named in ``blocked_reason``); other paths get HTTP errors.

The answer (``answer_guard=``, :mod:`.litellm_answers`): a request's conversation (``structured_messages``, sent
in ``pre_call`` mode) is recorded in its run (the first user message as the ``prompt`` fact, each tool result as
the call it answers), and each text of a response is decided by ``answer_guard`` on that run (audited as
``kind = "answer"``): withheld with a redaction -> ``GUARDRAIL_INTERVENED`` with the redaction; withheld without
one, or on a run whose request was never seen -> ``BLOCKED`` (the reason names the guard, never the value).

What it can see: only what LiteLLM sends - texts and the model's proposed tool calls (in
``response`` mode); tool results only as the next request's messages (``pre_call``), which the client sends. For
``during_call`` streaming LiteLLM sends the assembled text, not individual tokens (see
:mod:`agentguard.integrations.streaming` for cutting a stream). A streamed response's tool calls are sent
once the stream has ended: LiteLLM's built-in ``generic_guardrail_api`` has by then released every delta
of them to the client (the refusal is a trailing error event), so the documented recipe names the guardrail
file ``examples/integrations/litellm_stream_safe.py`` (the same client, holding the stream until the verdict).
LiteLLM sends only ``function`` tool calls as its stream builder rebuilds them: a legacy ``function_call``, a
``custom`` tool call, or a streamed call whose fragments another reader assembles differently is never judged
here; that file refuses such a response before any of it is released (its module doc).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..asgi.hardening import Hardening, Receive, Scope, Send
from ..core.audit import AuditSink
from ..core.enforcement import Enforcement, Outcome
from ..core.errors import InputError
from ..core.guard import Guard
from ..core.pipeline import Pipeline, RunState, call_key
from ..core.runs import RunEvicted
from ..core.strict_json import StrictJSONError, inexact_integer, loads_strict
from ..core.types import Context, Decision, Step, ToolCall, Verdict
from .recording import TraceRecorder
from .common import Unreadable, read_arguments, refusal_message
from .declared import judged_call, type_refusal
from .litellm_answers import SEEN_REQUEST, answer_response, record_history, withheld_reason

__all__ = ["BodyError", "GUARDRAIL_PATH", "GuardrailEndpoint", "GuardrailHardening", "GuardrailServer", "asgi_app",
           "parse_body", "refused", "serve", "serve_in_thread"]

GUARDRAIL_PATH = "/beta/litellm_basic_guardrail_api"
ADAPTER = "litellm"


class BodyError(InputError):
    """A request body the endpoint refuses, with its HTTP status (400 or 413)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _tool_call(tc: Any, i: int) -> ToolCall | Unreadable:
    """The call of one entry of ``tool_calls``: a :class:`ToolCall` of its strictly read arguments
    (:func:`~.common.read_arguments`: a repeated key, NaN, 1e999, text that is not a JSON object refused), or
    an :class:`~.common.Unreadable` that the Pipeline refuses (audited), never a guess."""
    if not isinstance(tc, Mapping):
        return Unreadable(f"tool_calls[{i}]", tc, f"tool_calls[{i}] must be an object")
    inner = tc.get("function")
    fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else tc
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        return Unreadable(f"tool_calls[{i}]", tc, f"tool_calls[{i}] has no function name")
    try:
        args = read_arguments(fn.get("arguments"))
    except InputError as exc:
        return Unreadable(name, fn.get("arguments"), f"tool_calls[{i}] ({name}): {exc}")
    big = inexact_integer(args)  # the client may read numbers as doubles (JavaScript): it would run another value
    if big is not None:
        return Unreadable(name, fn.get("arguments"), f"tool_calls[{i}] ({name}): the integer at {big} is beyond "
                          f"2**53, which a JavaScript client reads as another number (send it as a string)")
    return ToolCall(name, args, str(tc.get("id") or ""))


def _declared(tools: Any) -> dict[str, Any]:
    """The parameter schema of each function tool the request declared (LiteLLM's ``tools``: chat completions'
    ``{"type": "function", "function": {...}}``, the Responses API's flat ``{"type": "function", "name", ...}``)."""
    out: dict[str, Any] = {}
    for t in tools if isinstance(tools, list) else ():
        fn = t.get("function") if isinstance(t, Mapping) else None
        fn = t if fn is None and isinstance(t, Mapping) and t.get("type") == "function" else fn  # Responses API: flat
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            out[fn["name"]] = fn.get("parameters") if isinstance(fn.get("parameters"), dict) else {}
    return out


def _as_declared(call: ToolCall | Unreadable, declared: Mapping[str, Any]) -> ToolCall | Unreadable:
    """A call of a tool the request declared, as the client's tool receives it: refused (an :class:`Unreadable`)
    unless its arguments already have the declared parameter types (:func:`~.declared.type_refusal`: an agent loop
    validates them in lax mode, ``"off"`` for a boolean ran ``False``, ``"00"`` for an integer ran ``0``), and
    judged with the declared defaults of the arguments it leaves out (:func:`~.declared.judged_call`)."""
    if isinstance(call, Unreadable) or call.name not in declared:
        return call
    why = type_refusal(declared[call.name], dict(call.arguments), "parameters")
    if why is not None:
        return Unreadable(call.name, json.dumps(dict(call.arguments), default=str), f"{call.name}: the arguments do "
                          f"not have the types its declared parameters give ({why}); the client's tool would read "
                          "them as other values")
    return judged_call(declared, call)


def _reason(out: Outcome, call: ToolCall | Unreadable | None) -> str:
    """The refusal LiteLLM's caller reads: guard, decision, reason, and what the strategy adds."""
    v = out.verdict or Verdict(Decision.HALT, out.message or "no verdict")
    if not v.blocks and not out.execute:  # refused by the strategy (a tool halted earlier in the run)
        return f"agentguard refused {'tool call ' + call.name if call else 'action'}: {out.message or v.reason}"
    base = refusal_message(v, call)
    plain = ("", v.reason, f"action refused by {v.guard or 'guard'}: {v.reason}")
    return base if out.message in plain or out.execute else f"{base}. {out.message}"


def _strictness(out: Outcome) -> tuple[int, int]:
    v = out.verdict
    return (int(out.stop), v.decision.strictness if v is not None else 99)


class GuardrailEndpoint:
    """The request -> response logic of LiteLLM's generic guardrail API, around any Guard, through one
    :class:`~agentguard.core.pipeline.Pipeline` (``strategy``, ``audit``: see the Pipeline)."""

    def __init__(
        self,
        guard: Guard,
        *,
        text_guard: Guard | None = None,
        answer_guard: Guard | None = None,
        recorder: TraceRecorder | None = None,
        on_error: Decision | str = Decision.HALT,
        state_fn: Callable[[Context, Any], Any] | None = None,
        strategy: Enforcement | str | None = None,
        audit: AuditSink | None = None,
        timeout_s: float | None = None,
        max_runs: int = 10_000,
        shadow: bool = False,
    ) -> None:
        # no human can be asked through this API: an ESCALATE is refused (escalate="reject")
        self.pipeline = Pipeline(guard, strategy=strategy, audit=audit, recorder=recorder, on_error=on_error,
                                 state_fn=state_fn, adapter=ADAPTER, escalate="reject", timeout_s=timeout_s,
                                 max_runs=max_runs, shadow=shadow)
        self.text_pipeline = (
            Pipeline(text_guard, audit=audit, on_error=on_error, adapter=ADAPTER, escalate="reject",
                     timeout_s=timeout_s, max_runs=max_runs)
            if text_guard is not None else None
        )
        # the response's texts, decided on the tool calls' run (its trace: the request's tool results)
        self.answer_pipeline = (
            Pipeline(answer_guard, audit=audit, on_error=on_error, adapter=ADAPTER, escalate="reject",
                     timeout_s=timeout_s, max_runs=max_runs)
            if answer_guard is not None else None
        )

    def __repr__(self) -> str:
        return f"GuardrailEndpoint({self.pipeline!r})"

    @property
    def guard(self) -> Guard:
        return self.pipeline.guard

    @staticmethod
    def parse(payload: Any) -> tuple[str, str, list[str], list[ToolCall | Unreadable]]:
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
        declared = _declared(payload.get("tools"))
        calls = [_as_declared(_tool_call(tc, i), declared) for i, tc in enumerate(raw_calls)]
        key = payload.get("litellm_trace_id") or payload.get("litellm_call_id") or "default"
        return str(key), input_type, list(texts), calls

    @staticmethod
    def _step(text: str, input_type: str) -> Step:
        return Step(output=text) if input_type == "response" else Step(observation=text)

    def _answer_run(self, key: str, payload: Any, input_type: str) -> tuple[RunState | str, Verdict | None] | None:
        """With ``answer_guard``: a request's conversation is recorded in the run (:mod:`.litellm_answers`) and None
        returned; for a response, the run its texts are decided on and the refusal that answers before the guard (a
        run whose request was never seen, one evicted beyond rebuilding), if any."""
        if self.answer_pipeline is None:
            return None
        if input_type == "request":
            record_history(self.pipeline, key, payload.get("structured_messages"))
            return None
        try:
            st = self.pipeline.run(key)
        except RunEvicted as exc:
            return key, Verdict(Decision.HALT, str(exc), "agentguard")
        if SEEN_REQUEST in st.context.metadata:
            return st, None
        return st, Verdict(Decision.REJECT, "no request of this run was seen, so the answer cannot be checked against "
                           "what the model read (configure the guardrail for pre_call and post_call)", "agentguard")

    def handle(self, payload: Any) -> dict[str, Any]:
        """Answer one guardrail request (synchronous: the guards' ``check``)."""
        key, input_type, texts, calls = self.parse(payload)
        run = self._answer_run(key, payload, input_type)
        outs = [self.pipeline.decide(key, c, input_type=input_type) for c in calls]
        touts = ([self.text_pipeline.decide(key, self._step(t, input_type)) for t in texts]
                 if self.text_pipeline is not None else [])
        shown = self._rewritten(texts, touts)
        aouts = ([self.answer_pipeline.decide(run[0], Step(output=t), audit_kind="answer", refuse=run[1])
                  for t in shown] if run is not None and self.answer_pipeline is not None else [])
        return self._respond(calls, outs, texts, touts, aouts)

    async def ahandle(self, payload: Any, deadline_s: float | None = None) -> dict[str, Any]:
        """Async :meth:`handle` (the guards' ``acheck``; synchronous guards run in worker threads). With
        ``deadline_s``, whatever is not decided by then is refused through its Pipeline (audited): LiteLLM's
        own HTTP timeout must never be what answers, since it proceeds without the guardrail when configured
        ``fail_on_error: false``."""
        key, input_type, texts, calls = self.parse(payload)
        end = None if deadline_s is None else asyncio.get_running_loop().time() + deadline_s

        run = self._answer_run(key, payload, input_type)

        async def decide(pipe: Pipeline, proposal: Any, on: RunState | str = key, **facts: Any) -> Outcome:
            left = None if end is None else end - asyncio.get_running_loop().time()
            try:
                if left is None or left > 0:
                    return await asyncio.wait_for(pipe.adecide(on, proposal, **facts), left)
            except asyncio.TimeoutError:
                pass
            late = Verdict(Decision.REJECT, f"no decision within {deadline_s:g} s", "agentguard")
            return await pipe.adecide(on, proposal, **{**facts, "refuse": facts.get("refuse") or late})

        outs = [await decide(self.pipeline, c, input_type=input_type) for c in calls]
        touts = ([await decide(self.text_pipeline, self._step(t, input_type)) for t in texts]
                 if self.text_pipeline is not None else [])
        shown = self._rewritten(texts, touts)
        aouts = ([await decide(self.answer_pipeline, Step(output=t), run[0], audit_kind="answer", refuse=run[1])
                  for t in shown] if run is not None and self.answer_pipeline is not None else [])
        return self._respond(calls, outs, texts, touts, aouts)

    @staticmethod
    def _rewritten(texts: list[str], touts: list[Outcome]) -> list[str]:
        """The texts as ``text_guard`` rewrote them (a MODIFY whose action is a string): what the answer guard reads."""
        return [o.action if o.execute and o.verdict is not None and o.verdict.decision is Decision.MODIFY
                and isinstance(o.action, str) else t for t, o in zip(texts, touts)] + texts[len(touts):]

    def _respond(self, calls: list[ToolCall | Unreadable], outs: list[Outcome], texts: list[str],
                 touts: list[Outcome], aouts: Sequence[Outcome] = ()) -> dict[str, Any]:
        blocked: list[tuple[Outcome, Any]] = []
        for c, o in zip(calls, outs):
            todo = o.call
            ran = todo is not None and todo.name == c.name and call_key(todo) == call_key(c)
            if not ran:  # refused, or replaced by another call this API cannot hand back
                blocked.append((o, c))
            self.pipeline.record(o, observation=None if ran else _reason(o, c))
        new_texts, rewritten = list(texts), False
        for i, o in enumerate(touts):
            v = o.verdict
            if o.execute and v is not None and v.decision is Decision.MODIFY and isinstance(o.action, str):
                new_texts[i], rewritten = o.action, True
            elif not (o.execute and (v is None or v.decision is Decision.ALLOW)):
                blocked.append((o, None))
        new_texts, redacted, withheld = answer_response(new_texts, aouts)
        rewritten = rewritten or redacted
        if withheld is not None:  # the reason names the withheld value: the client reads only who withheld it
            blocked.append((withheld, withheld_reason))
        if blocked:
            worst, call = max(blocked, key=lambda oc: _strictness(oc[0]))
            return {"action": "BLOCKED", "blocked_reason": call(worst) if callable(call) else _reason(worst, call)}
        if rewritten:
            return {"action": "GUARDRAIL_INTERVENED", "texts": new_texts}
        return {"action": "NONE"}


def parse_body(data: bytes, max_depth: int = 64) -> Any:
    """Decode a request body: strict JSON, no duplicate keys, nesting at most ``max_depth``."""
    try:
        return loads_strict(data, max_depth)
    except StrictJSONError as exc:
        msg = str(exc)
        raise BodyError(msg if ("duplicate" in msg or "nested" in msg) else "body is not valid JSON") from None


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


def asgi_app(endpoint: GuardrailEndpoint, *, max_depth: int = 64,
             deadline_s: float | None = None) -> Callable[[Scope, Receive, Send], Any]:
    """The endpoint as a bare ASGI app (``GET /health``, ``POST`` :data:`GUARDRAIL_PATH`); put it behind
    :class:`~agentguard.asgi.Hardening` (as :func:`serve` does). ``deadline_s``: see :meth:`GuardrailEndpoint.ahandle`."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"].rstrip("/")
        if scope["method"] in ("GET", "HEAD"):
            if path in ("/health", ""):
                await _json(send, 200, {"status": "ok"})
            else:
                await _json(send, 404, {"error": f"no route {scope['path']}"})
            return
        if scope["method"] != "POST" or path != GUARDRAIL_PATH:
            await _json(send, 404, {"error": f"no route {scope['path']}; POST {GUARDRAIL_PATH}"})
            return
        chunks = []
        while True:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            if msg["type"] != "http.request" or not msg.get("more_body", False):
                break
        try:
            answer = await endpoint.ahandle(parse_body(b"".join(chunks), max_depth), deadline_s)
        except InputError as exc:  # a malformed body (BodyError too): BLOCKED, never an HTTP error (see refused)
            answer = refused(400, str(exc))
        except Exception as exc:  # noqa: BLE001 - fail closed: never NONE because something broke
            answer = {"action": "BLOCKED", "blocked_reason": f"agentguard failed: {type(exc).__name__}: {exc}"}
        await _json(send, 200, answer)

    return app


def refused(status: int, why: str) -> dict[str, Any]:
    """The answer to a guardrail request agentguard cannot decide (malformed, too large, too slow, over
    capacity, unauthenticated): BLOCKED with HTTP 200, never an HTTP error. LiteLLM lets the model's
    response through on an error when the guardrail is configured ``fail_on_error: false`` (any status) or
    ``unreachable_fallback: fail_open`` (502/503/504): a duplicate-key or oversized tool call, or a flood
    that fills the concurrency limit, would pass exactly when it cannot be checked."""
    return {"action": "BLOCKED", "blocked_reason": f"agentguard refused the guardrail request ({status}): {why}"}


class GuardrailHardening(Hardening):
    """:class:`~agentguard.asgi.Hardening` whose refusals of a guardrail request (``POST`` to
    :data:`GUARDRAIL_PATH`) are BLOCKED answers (:func:`refused`); other paths get its HTTP errors."""

    async def refuse(self, scope: Scope, send: Send, status: int, message: str,
                     headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        if scope.get("method") != "POST" or str(scope.get("path", "")).rstrip("/") != GUARDRAIL_PATH:
            await super().refuse(scope, send, status, message, headers)
            return
        data = json.dumps(refused(status, message)).encode()
        keep = [(k, v) for k, v in headers if k in (b"connection", b"retry-after")]
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *keep]})
        await send({"type": "http.response.body", "body": data})


class GuardrailServer:
    """uvicorn serving the hardened endpoint on a socket bound at construction (``server_address`` is
    known at once; port 0 picks one), with the stdlib server's handle: ``serve_forever`` (blocks; under
    the main thread uvicorn's SIGINT/SIGTERM handling stops it), ``shutdown`` (from another thread:
    stops it and waits), ``server_close`` (closes the socket)."""

    def __init__(self, app: Any, host: str, port: int, *, timeout_s: float = 30.0) -> None:
        import uvicorn

        self.app = app
        self.socket = socket.create_server((host, port), backlog=512)
        self.server_address: tuple[Any, ...] = self.socket.getsockname()
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False,
                                date_header=False, proxy_headers=False, timeout_keep_alive=max(1, int(timeout_s)),
                                h11_max_incomplete_event_size=16_384)
        self.server = uvicorn.Server(config)
        self._done = threading.Event()
        self._started = threading.Event()

    def __repr__(self) -> str:
        return f"GuardrailServer({self.server_address!r})"

    def serve_forever(self) -> None:
        self._started.set()
        try:
            self.server.run(sockets=[self.socket])
        finally:
            self._done.set()

    def shutdown(self) -> None:
        self.server.should_exit = True
        if self._started.is_set():
            self._done.wait(30)

    def server_close(self) -> None:
        self.socket.close()


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
) -> GuardrailServer:
    """A server for the endpoint behind :class:`~agentguard.asgi.Hardening` (not started: call
    ``serve_forever``). ``token=None`` serves without authentication (tests, a loopback sidecar); see
    the module doc."""
    app = GuardrailHardening(asgi_app(endpoint, max_depth=max_depth, deadline_s=timeout_s), token=token, api_key_header="x-api-key",
                    public_paths=("/health", "/"), max_body=max_body, body_timeout_s=timeout_s,
                    max_concurrency=max_concurrency, queue_timeout_s=5.0, realm="agentguard-litellm")
    return GuardrailServer(app, host, port, timeout_s=timeout_s)


def serve_in_thread(
    endpoint: GuardrailEndpoint, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> GuardrailServer:
    """Start :func:`serve` on a daemon thread (tests, embedding); ``server.shutdown()`` stops it."""
    server = serve(endpoint, host, port, **options)
    threading.Thread(target=server.serve_forever, daemon=True, name="agentguard-litellm").start()
    for _ in range(500):
        if server.server.started:
            break
        threading.Event().wait(0.01)
    return server
