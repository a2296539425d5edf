"""The MCP proxy's decision on one guarded request, shared by the SDK server
(:class:`~agentguard.integrations.mcp_proxy.GuardProxy`) and the stdio relay
(:mod:`agentguard.integrations.mcp_relay`).

- :func:`decide`: a halted session refuses; else the guard's verdict (under the fail-closed rule of
  :mod:`agentguard.core.guard`); an ESCALATE is resolved by ``approve(verdict, call)`` when the operator
  gave one, else by ``ask(verdict, call)`` (the human behind the client: True, False, None when the
  client cannot be asked, or a protocol object to answer with, e.g. an ``InputRequiredResult``), else it
  refuses with a message naming the approval needed. Only an explicit ``True`` approves.
- :func:`inline_safe`: whether a guard may be evaluated on the event loop itself (no worker-thread hop):
  only the exact built-in classes known to be fast and pure (:class:`ToolRuleGuard`, a
  :class:`~agentguard.policies.ToolCallGuard` without a slow (LLM) extractor, a
  :class:`~agentguard.core.GuardStack` of those). Inline evaluation uses
  :func:`agentguard.core.guard.run_guard` (the same rule: a raised error, a non-Verdict or a verdict
  later than the deadline never allows).
- :func:`applied_arguments`: the arguments a MODIFY / same-tool RECOVER forwards (else a refusal).
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import json
import secrets
import sys
import time
from typing import Any, Awaitable, Callable

from ..core.guard import GuardStack
from ..core.types import Context, Decision, ToolCall, Verdict
from ..policies.rules import ToolRuleGuard
from .runtime import GuardRuntime

__all__ = ["ApprovalRounds", "Approve", "Ask", "applied_arguments", "decide", "inline_safe", "resolve"]

#: ``_meta`` keys a client may send (session key, per-run facts) and the input-request key of our
#: approval round (2026-07-28 protocol), the same on both proxy paths
SESSION_META_KEY = "agentguard/session"
FACTS_META_KEY = "agentguard/facts"
APPROVAL_KEY = "agentguard-approval"

Approve = Callable[[Verdict, ToolCall], "bool | Awaitable[bool]"]
Ask = Callable[[Verdict, ToolCall], Awaitable[Any]]


def inline_safe(runtime: GuardRuntime) -> bool:
    """True when the runtime's guard may run on the event loop (see the module doc); a ``state_fn``
    (user code) or any other guard class keeps the worker-thread path."""
    return runtime.state_fn is None and _inline_guard(runtime.guard)


def _inline_guard(guard: Any) -> bool:
    if type(guard) is GuardStack:
        return all(_inline_guard(g) for g in guard.guards)
    if type(guard) is ToolRuleGuard:
        return True
    policies = sys.modules.get("agentguard.policies.guard")  # loaded when the stack holds a policy guard
    return (policies is not None and type(guard) is policies.ToolCallGuard
            and not getattr(guard, "_slow", True))


async def decide(runtime: GuardRuntime, gctx: Context, call: ToolCall, *, inline: bool = False,
                 approve: Approve | None = None, ask: Ask | None = None) -> Any:
    """The verdict on ``call`` (ESCALATE resolved; see the module doc), or what ``ask`` answered with
    when that is not a bool or None (a protocol object the caller sends back as is)."""
    halted = gctx.metadata.get("halted")
    if halted:
        return Verdict(Decision.HALT, f"session halted earlier: {halted}", runtime.guard.name)
    v = runtime.check(gctx, call) if inline else await runtime.acheck(gctx, call)
    return await resolve(v, call, approve=approve, ask=ask, runtime=runtime)


async def resolve(v: Verdict, call: ToolCall, *, approve: Approve | None = None, ask: Ask | None = None,
                  runtime: GuardRuntime | None = None) -> Any:
    """``v`` itself unless it is an ESCALATE; an ESCALATE resolved as :func:`decide` says. The human's
    answer is reported to the guard that escalated when it keeps its own record (the service's
    ``RemoteGuard``: :meth:`GuardRuntime.asettle_approval`); an approval it does not confirm refuses."""
    if v.decision is not Decision.ESCALATE:
        return v
    if approve is not None:
        try:
            ok = approve(v, call)
            if inspect.isawaitable(ok):
                ok = await ok
        except Exception as exc:
            return Verdict(Decision.REJECT, f"approval failed ({exc}): {v.reason}", v.guard, v.numbers)
        out = Verdict(Decision.ALLOW if ok is True else Decision.REJECT,
                      f"{'approved' if ok is True else 'not approved'} by a human: {v.reason}", v.guard, v.numbers)
        return await _settle(runtime, v, call, ok is True, "operator (mcp-proxy approver)", out)
    try:
        ok = await ask(v, call) if ask is not None else None
    except Exception as exc:
        return Verdict(Decision.REJECT, f"approval failed ({type(exc).__name__}): {v.reason}", v.guard)
    if ok is None:
        return Verdict(Decision.REJECT, f"needs a human's approval ({v.reason}), and this MCP client "
                       "cannot ask one (no elicitation support); ask the operator to approve "
                       f"{call.name} or to run the proxy with an approver", v.guard, v.numbers)
    if not isinstance(ok, bool):
        return ok
    out = Verdict(Decision.ALLOW if ok else Decision.REJECT,
                  f"{'approved' if ok else 'not approved'} by a human (MCP elicitation): {v.reason}",
                  v.guard, v.numbers)
    return await _settle(runtime, v, call, ok, "human via MCP elicitation", out)


async def _settle(runtime: GuardRuntime | None, v: Verdict, call: ToolCall, approved: bool, approver: str,
                  out: Verdict) -> Verdict:
    return await runtime.aconfirm(v, call, out, approver) if runtime is not None else out


def applied_arguments(v: Verdict, call: ToolCall) -> tuple[Verdict, dict[str, Any]]:
    """``(verdict, arguments to forward)``: MODIFY / same-tool RECOVER give the verdict's arguments; a
    MODIFY or RECOVER without an applicable replacement becomes a REJECT."""
    if v.decision not in (Decision.MODIFY, Decision.RECOVER):
        return v, dict(call.arguments)
    act = v.action
    if isinstance(act, ToolCall) and act.name == call.name:
        return v, dict(act.arguments)
    if v.decision is Decision.MODIFY and isinstance(act, dict):
        return v, dict(act)
    return Verdict(Decision.REJECT, f"{v.reason} (no applicable replacement call)", v.guard, v.numbers), {}


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
