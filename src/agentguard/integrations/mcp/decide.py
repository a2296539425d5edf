"""What both MCP proxy paths share: the one :class:`~agentguard.core.pipeline.Pipeline` they decide
through, the approval round, and the text a refused call answers with.

Both the SDK server (:class:`~agentguard.integrations.mcp.proxy.GuardProxy`) and the stdio relay
(:class:`~agentguard.integrations.mcp.relay.StdioRelay`) build a ``Pipeline(adapter="mcp")`` with
:func:`make_pipeline` and decide every guarded request with :func:`gate`:

- the Pipeline converts the request's call, decides fail-closed, applies the enforcement ``strategy``
  (the one given, else the deciding guard's own, else the default), latches a HALT for the run;
- an ESCALATE (``outcome.ask``) is answered by ``approve(verdict, call)`` when the operator gave one,
  else by the human behind the client through the proxy's approval round (``ask(outcome)``: True, False,
  None when the client cannot be asked, or a protocol object to answer with, e.g. an
  ``input_required`` result), then :meth:`Pipeline.aresolve` (only an explicit ``True`` approves; a
  refused call is never offered, since REJECT and HALT dominate ESCALATE in the stack);
- the forwarded call is ``outcome.call`` (the verdict's arguments for a MODIFY, the fallback for a
  RECOVER), nothing when ``outcome.execute`` is false.

The run of a request is chosen by the proxy from the connection, never from a field the client writes
(see each path). ``_meta["agentguard/facts"]`` (an object) may still carry per-run facts, merged into
the run's ``Context.metadata`` except the keys the Pipeline owns.

:func:`inline_safe`: whether a guard may be evaluated on the event loop itself (no worker-thread hop):
guards whose own class declares ``inline_safe = True`` (:class:`~agentguard.policies.rules.ToolRuleGuard`,
a :class:`~agentguard.policies.guard.ToolCallGuard` without a slow extractor) and a plain
:class:`~agentguard.core.guard.GuardStack` of those. Inline evaluation is still fail-closed
(:func:`~agentguard.core.guard.run_guard`: a raised error, a non-Verdict or a late verdict never allows).
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import json
import secrets
import time
from typing import Any, Awaitable, Callable, Mapping

from ...core.enforcement import Enforcement, Outcome
from ...core.guard import Guard, GuardStack, declares_inline_safe
from ...core.pipeline import RESERVED_KEYS, Pipeline, approval_request
from ...core.strict_json import inexact_integer
from ...core.types import Context, Decision, ToolCall, Verdict
from ..declared import judged_call, type_refusal

__all__ = ["ApprovalRounds", "Approve", "Ask", "call_refusal", "gate", "inline_safe", "json_text_refusal",
           "judged_call", "listing_changed", "make_pipeline", "refusal_text", "refused_before", "schema_refusal",
           "schema_text"]

#: ``_meta`` key of per-run facts a client may send, and the input-request key of our approval round
#: (2026-07-28 protocol), the same on both proxy paths
FACTS_META_KEY = "agentguard/facts"
APPROVAL_KEY = "agentguard-approval"
#: ``_meta`` key of an elicitation request that carries the approval request (every guard's verdict)
APPROVAL_META_KEY = "agentguard/approval"

Approve = Callable[[Verdict, ToolCall], "bool | Awaitable[bool]"]
Ask = Callable[[Outcome], Awaitable[Any]]

#: facts never taken from a request: the Pipeline's own keys, and ``decide``'s keyword names
_NOT_FACTS = RESERVED_KEYS | {"audit_kind", "kind", "proposal", "refuse", "run"}


def make_pipeline(guard: Guard, *, strategy: Enforcement | str | None = None, recorder: Any = None,
                  on_error: Decision | str = Decision.HALT, state_fn: Callable[[Context, Any], Any] | None = None,
                  timeout_s: float | None = None, max_runs: int = 10_000, shadow: bool = False) -> Pipeline:
    """The proxy's Pipeline (``adapter="mcp"``); ``strategy`` is the enforcement strategy (a name such as
    ``"CRP+TEH"``, an :class:`~agentguard.core.enforcement.Enforcement`, or None for each guard's own);
    ``shadow``: the guard only observes (every call runs; would-be refusals are audited)."""
    return Pipeline(guard, strategy=strategy, recorder=recorder, on_error=on_error, state_fn=state_fn,
                    timeout_s=timeout_s, max_runs=max_runs, adapter="mcp", shadow=shadow)


def facts_of(meta: Any) -> dict[str, Any]:
    """The per-run facts of a request's ``_meta`` (``agentguard/facts``), minus the keys the Pipeline owns."""
    facts = meta_get(meta, FACTS_META_KEY)
    if not isinstance(facts, dict):
        return {}
    return {str(k): v for k, v in facts.items() if str(k) not in _NOT_FACTS}


def meta_get(meta: Any, key: str) -> Any:
    """``meta[key]`` of a request's ``_meta`` (a dict or the SDK's model), None when absent or unreadable."""
    if not meta:
        return None
    try:
        return meta.get(key) if hasattr(meta, "get") else getattr(meta, key, None)
    except Exception:  # noqa: BLE001
        return None


def inline_safe(pipeline: Pipeline) -> bool:
    """True when the pipeline's guard may run on the event loop (see the module doc); a ``state_fn``
    (user code) or any guard that does not declare itself inline-safe keeps the worker-thread path."""
    return pipeline.state_fn is None and _inline_guard(pipeline.guard)


def _inline_guard(guard: Any) -> bool:
    if type(guard) is GuardStack:
        return all(_inline_guard(g) for g in guard.guards)
    return declares_inline_safe(guard)


def schema_refusal(schema: Any, arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` do not conform to a tool's declared ``inputSchema`` (None when they do, or when the
    tool declared none), read strictly, with no coercion: jsonschema (the MCP SDK's own dependency) with
    ``integer`` meaning a JSON integer.

    An upstream reads the arguments through its own validation: the MCP SDK's ``MCPServer`` parses a string
    holding JSON into the list or object its parameter wants (``{"paths": "[\"/etc/shadow\"]"}``, with
    Python's last-key-wins reading) and pydantic turns ``"5000"``, ``" 5000 "`` or ``5000.0`` into an int, so
    the guard would judge one value and the tool run another. Only arguments that already have the declared
    types are forwarded; what such an upstream makes of them is then what the guard read. An integer beyond
    2**53 is refused too, schema or not (:func:`~agentguard.core.strict_json.inexact_integer`: a TypeScript
    upstream, ``JSON.parse``, reads ``9007199254740993`` as ``9007199254740992``)."""
    big = inexact_integer(arguments)  # a TypeScript upstream reads it as a double: another number than judged
    if big is not None:
        return f"{big}: an integer beyond 2**53, which a JavaScript upstream reads as another number"
    if not isinstance(schema, dict):
        return None
    return type_refusal(schema, arguments, "inputSchema") or json_text_refusal(schema, arguments)


_COMBINATORS = ("anyOf", "oneOf", "allOf", "not", "if", "$ref", "$dynamicRef", "enum", "const")


def _plain_string(schema: Any) -> bool:
    """True for a schema that is a string and nothing else (``{"type": "string"}`` with annotations only)."""
    return isinstance(schema, dict) and schema.get("type") == "string" and not any(k in schema for k in _COMBINATORS)


def json_text_refusal(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why a top-level string argument holding a JSON array or object would run as other data than the guard read
    (None when none does). The MCP SDK's ``MCPServer`` parses such a string (Python's ``json.loads``: the last of two
    equal keys wins, ``\\u002f`` is ``/``) into the list or dict its parameter receives whenever the parameter is not
    annotated exactly ``str``: a ``str | list[str]`` parameter (listed ``anyOf``) receives ``["/etc/shadow"]`` for
    ``'["/etc/shadow"]'``, and an *unannotated* one, listed as ``{"type": "string"}``, receives the dict. The listing
    cannot tell these from a ``str`` parameter, so such a string is forwarded only where both readings agree: its
    property is declared a plain string (not a union, not undeclared), and the text is strict JSON (no repeated key,
    no NaN) with no backslash escape, so that every key and value the tool may receive appears verbatim in the text
    the guard judged. A JSON text with escapes in a string parameter (``{"a": "x\\ny"}``) is refused too (stated
    over-refusal: the server's annotation is not listed). The string ``"null"`` is refused wherever it is: MCPServer
    hands such a parameter (``path: str | None = "/safe"``, an unannotated one) ``None``, which the guard never read."""
    from ...core.strict_json import StrictJSONError, loads_strict

    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    extra = schema.get("additionalProperties")
    for key, value in arguments.items():
        if not isinstance(value, str):
            continue
        if value.strip(" \t\n\r") == "null":  # MCPServer hands a parameter not exactly ``str`` None for it
            return (f"{str(key)[:80]}: the string 'null' (JSON null), which MCPServer hands a parameter not annotated "
                    "str as None")
        if not value.lstrip(" \t\n\r").startswith(("[", "{")):
            continue
        try:
            data = json.loads(value)
        except (ValueError, RecursionError):
            continue  # not JSON to the server either: the tool receives the string
        if not isinstance(data, (list, dict)):
            continue
        declared = props.get(key, extra if isinstance(extra, dict) else None)
        if not _plain_string(declared):
            kind = "array" if isinstance(data, list) else "object"
            return (f"{str(key)[:80]}: a string holding a JSON {kind} where a string is not the only declared type "
                    "(MCPServer hands the tool the parsed value)")
        try:
            loads_strict(value)
        except StrictJSONError as exc:
            return f"{str(key)[:80]}: a string holding JSON the server reads otherwise ({exc})"
        if "\\" in value:
            return (f"{str(key)[:80]}: a string holding JSON with escapes (a server that parses it receives other "
                    "characters than the guard read)")
    return None


def call_refusal(schemas: Mapping[str, Any], name: str, arguments: dict[str, Any]) -> str | None:
    """Why a ``tools/call`` of ``name`` cannot be forwarded as the guard read it (None when it can): the tool
    must be one the upstream listed (exactly that name: an unlisted name, a confusable spelling or a stale
    listing is refused, never forwarded unchecked), listed with an ``inputSchema`` (MCP requires one), and
    the arguments must have that schema's types (:func:`schema_refusal`)."""
    if name not in schemas:
        return f"tool {name[:80]!r} is not in the upstream's tools/list"
    schema = schemas[name]
    if not isinstance(schema, dict):
        return f"tool {name[:80]!r} was listed without an inputSchema object"
    why = schema_refusal(schema, arguments)
    return None if why is None else f"the arguments do not have the types its inputSchema declares ({why})"


def schema_text(schema: Any) -> str | None:
    """A listed tool's ``inputSchema`` as comparable text (None when not listed): a call is forwarded only while the
    upstream's listing still gives its tool the schema it was checked against when its decision began."""
    if schema is None:
        return None
    try:
        return json.dumps(schema, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(schema)


def listing_changed(schemas: Mapping[str, Any], call: ToolCall, judged: str | None) -> str | None:
    """Why ``call``, checked against the listed schema ``judged`` (:func:`schema_text`) when its decision began, is
    not forwarded now (None when it may be): the upstream's listing no longer gives its tool that schema (a
    ``tools/list_changed``, a new listing with another schema or without the tool, while a slow guard or a human
    decided). The guard decided a call of the tool as it was listed; another tool under that name is not decided."""
    now = schema_text(schemas.get(call.name))
    if judged is not None and now == judged:
        return None
    why = call_refusal(schemas, call.name, dict(call.arguments)) or "its inputSchema changed"
    return f"the upstream's tools/list changed while the call was decided: {why}"


def refused_before(reason: str) -> Verdict:
    """The verdict of a request the proxy refuses before its guard (decided through the Pipeline's ``refuse``)."""
    return Verdict(Decision.REJECT, reason, "mcp-proxy")


def refusal_text(out: Outcome, call: ToolCall | None = None) -> str:
    """The text an agent sees when its call did not run: the guard, the decision and what the
    enforcement strategy said (a CRP strategy's request to propose another action, a TEH tool halt)."""
    v = out.verdict
    what = f"tool call {call.name}" if call is not None else "the request"
    head = f"agentguard refused {what}"
    if v is not None and v.blocks:
        head += f" ({v.decision.name} by {v.guard or 'guard'})"
    return f"{head}: {out.message or (v.reason if v is not None else 'no decision')}"


def approval_message(out: Outcome) -> str:
    """The elicitation message asking about ``out``: the call, and every guard's verdict."""
    call = out.proposal
    args = json.dumps(dict(getattr(call, "arguments", {}) or {}), default=str)[:500]
    req = approval_request(out)
    return f"agentguard asks before running {getattr(call, 'name', '?')}({args}).\n{req['text']}"


def approval_meta(out: Outcome) -> dict[str, Any]:
    """The approval request (the call, the reason, every guard's verdict) as JSON for ``_meta``."""
    return json.loads(json.dumps(approval_request(out), default=str))


async def gate(pipeline: Pipeline, run_id: str, call: ToolCall, facts: dict[str, Any], *, inline: bool = False,
               approve: Approve | None = None, ask: Ask | None = None, decided: Outcome | None = None) -> Any:
    """The outcome of ``call`` in ``run_id`` with an ESCALATE answered (see the module doc), or what
    ``ask`` answered with when that is not a bool or None (a protocol object the caller sends back as
    is). ``decided``: the outcome when the caller already decided (the relay's inline path)."""
    out = decided
    if out is None:
        out = pipeline.decide(run_id, call, **facts) if inline else await pipeline.adecide(run_id, call, **facts)
    if not out.ask:
        return out
    if approve is not None:
        try:
            ok: Any = approve(out.verdict, out.proposal)  # type: ignore[arg-type]
            if inspect.isawaitable(ok):
                ok = await ok
        except Exception:  # noqa: BLE001 - a failing approver refuses
            ok = False
        return await pipeline.aresolve(out, ok is True, approver="operator (mcp-proxy approver)")
    try:
        ok = await ask(out) if ask is not None else None
    except Exception:  # noqa: BLE001 - fail closed
        ok = False
    if ok is None:
        refused = await pipeline.aresolve(out, False, approver="nobody (the MCP client cannot be asked)")
        v = out.verdict
        refused.message = (f"{refused.message}\nThis call needs a human's approval "
                           f"({v.reason if v is not None else ''}), and this MCP client cannot ask one (no "
                           f"elicitation support); ask the operator to approve {call.name} or to run the proxy "
                           "with an approver")
        return refused
    if not isinstance(ok, bool):
        return ok
    return await pipeline.aresolve(out, ok, approver="human via MCP elicitation")


class ApprovalRounds:
    """The ``requestState`` of the proxy's approval rounds on the 2026-07-28 protocol (an
    ``input_required`` result asks the human; the client's retry carries the answer and the state).

    A state is ``<unix time>-<random>.<HMAC(secret, nonce, session, tool, arguments)>``: it is accepted
    only for exactly the call and session it was issued for, within ``ttl_s``, and once (a replayed
    answer is asked again), so one approval lets one call run."""

    def __init__(self, ttl_s: float = 600.0) -> None:
        self._secret = secrets.token_bytes(32)
        self.ttl_s = ttl_s
        self._spent: dict[str, float] = {}

    def _mac(self, nonce: str, session: str, call: ToolCall) -> str:
        text = "\x00".join((nonce, session, call.name, json.dumps(dict(call.arguments), sort_keys=True, default=str)))
        return f"{nonce}.{hmac.new(self._secret, text.encode(), hashlib.sha256).hexdigest()}"

    def issue(self, session: str, call: ToolCall) -> str:
        """A fresh state for asking about ``call`` in ``session``."""
        now = time.time()
        if len(self._spent) > 10_000:  # forget answered rounds that have expired anyway
            self._spent = {k: t for k, t in self._spent.items() if now - t < self.ttl_s}
        return self._mac(f"{int(now)}-{secrets.token_hex(8)}", session, call)

    def ours(self, state: Any, session: str, call: ToolCall) -> bool:
        """True when ``state`` was issued here for exactly this call and session (spent or not)."""
        if not isinstance(state, str) or "." not in state:
            return False
        return hmac.compare_digest(state, self._mac(state.split(".", 1)[0], session, call))

    def redeem(self, state: Any, session: str, call: ToolCall) -> bool:
        """True (once) for an unexpired, unspent state issued for exactly this call and session."""
        if not self.ours(state, session, call) or state in self._spent:
            return False
        try:
            issued = float(state.split("-", 1)[0])
        except ValueError:
            return False
        if not 0 <= time.time() - issued < self.ttl_s:
            return False
        self._spent[state] = issued
        return True
