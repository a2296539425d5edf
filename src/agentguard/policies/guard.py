"""ToolCallGuard: the online stage of VeriGuard. Intercept a tool call, extract the policy's arguments,
evaluate the verified policy, record the decision, and let an enforcement strategy act.

Strategies (from :mod:`agentguard.core.strategies`, under the paper's names): task termination ``TT``
(:class:`~agentguard.core.strategies.Stop`), action blocking ``AB`` (:class:`Block`), tool execution halt
``TEH`` (:class:`HaltTool`) and collaborative re-planning ``CRP`` (:class:`Replan`); ``"CRP+TEH"`` is the
paper's hybrid (re-plan up to N times, then halt the tool).

Guarantees:
- fail closed: an extractor or policy that raises, times out, returns garbage or gets arguments outside its
  precondition yields a blocking verdict (``on_error``, REJECT by default), never ALLOW;
- a tool no binding covers is refused unless ``unknown_tool="allow"``;
- every decision, allowed or not, is written to the audit sink (time, call, arguments, policy id, version
  and digest, verdict, reason).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..core.enforcement import Enforcement, Outcome
from ..core.errors import InputError
from ..core.guard import BaseGuard, fail_closed
from ..core.strategies import Block, HaltTool, Replan, Stop
from ..core.types import Context, Decision, ToolCall, Verdict
from .audit import AuditRecord, AuditSink
from .extract import ArgumentExtractor
from .model import Policy

_log = logging.getLogger("agentguard.policies")

__all__ = ["AB", "CRP", "PolicyBinding", "TEH", "TT", "ToolCallGuard", "strategy"]

TT = Stop
AB = Block
TEH = HaltTool
CRP = Replan


def strategy(name: str, *, max_rounds: int = 3) -> Enforcement:
    """A strategy by the paper's name: TT, AB, TEH, CRP, or CRP+TEH / CRP+AB / CRP+TT (hybrids)."""
    key = name.strip().upper()
    simple = {"TT": Stop, "AB": Block, "TEH": HaltTool}
    if key in simple:
        return simple[key]()
    if key == "CRP":
        return Replan(max_rounds=max_rounds)
    if key.startswith("CRP+") and key[4:] in simple:
        return Replan(max_rounds=max_rounds, then=simple[key[4:]]())
    raise InputError(f"unknown enforcement strategy {name!r}; expected TT, AB, TEH, CRP or CRP+TEH")


@dataclass
class PolicyBinding:
    """A policy, the extractor that feeds it, and the tools it governs (``"*"`` = every tool)."""

    policy: Policy
    extractor: ArgumentExtractor
    tools: tuple[str, ...] = ("*",)

    def covers(self, tool: str) -> bool:
        return "*" in self.tools or tool in self.tools


def _as_call(proposal: Any) -> ToolCall:
    if isinstance(proposal, ToolCall):
        return proposal
    if isinstance(proposal, Mapping):
        return ToolCall.from_dict(proposal)
    action = getattr(proposal, "action", None)
    if isinstance(action, ToolCall):
        return action
    raise InputError(f"ToolCallGuard checks tool calls, got {type(proposal).__name__}")


class ToolCallGuard(BaseGuard):
    """Gate every tool call with verified policies (a :class:`~agentguard.core.guard.Guard`).

    ``check(context, call) -> Verdict`` decides; ``enforce(context, call) -> Outcome`` also applies the
    strategy. Every binding that covers the tool must allow; the first denial decides.
    """

    def __init__(
        self,
        bindings: Iterable[PolicyBinding],
        *,
        strategy: Enforcement | str = "AB",
        audit: AuditSink | None = None,
        name: str = "verified-policy",
        deny: Decision | str = Decision.REJECT,
        on_error: Decision | str = Decision.REJECT,
        unknown_tool: str = "deny",
    ) -> None:
        self.bindings = list(bindings)
        if not self.bindings:
            raise InputError("ToolCallGuard needs at least one PolicyBinding")
        self.strategy = globals()["strategy"](strategy) if isinstance(strategy, str) else strategy
        self.audit = audit
        self.audit_errors = 0      # audit records that could not be written (each also logged)
        self.name = name
        self.deny = Decision.parse(deny)
        self.on_error = Decision.parse(on_error)
        if self.deny < Decision.REJECT or self.on_error < Decision.REJECT:
            raise InputError("deny and on_error must be blocking decisions (REJECT, ESCALATE or HALT)")
        if unknown_tool not in ("deny", "allow"):
            raise InputError("unknown_tool must be 'deny' or 'allow'")
        self.unknown_tool = unknown_tool
        self._slow = any(getattr(b.extractor, "slow", False) for b in self.bindings)

    def __repr__(self) -> str:
        pols = ", ".join(f"{b.policy.id}@{b.policy.version}" for b in self.bindings)
        return f"<ToolCallGuard {self.name!r} [{pols}] strategy={getattr(self.strategy, 'name', self.strategy)}>"

    def _record(self, context: Context, call: ToolCall, args: dict, policy: Policy | None, verdict: Verdict,
                code: int | None, seconds: float) -> None:
        if self.audit is None:
            return
        try:
            self.audit.write(AuditRecord(
                time=time.time(), run_id=context.run_id, call=call.to_dict(), arguments=args,
                policy_id=policy.id if policy else "", policy_version=policy.version if policy else "",
                policy_digest=policy.digest if policy else "", decision=verdict.decision.name,
                reason=verdict.reason, code=code, seconds=seconds, guard=self.name,
            ))
        except Exception as exc:  # noqa: BLE001 - a failing audit sink must not turn into an ALLOW or a crash
            self.audit_errors += 1   # the decision stands; the lost record is counted and logged
            _log.warning("audit sink %s failed for %s (%s): %s: %s", type(self.audit).__name__, call.name,
                         verdict.decision.name, type(exc).__name__, exc)

    def check(self, context: Context, proposal: Any) -> Verdict:
        call = _as_call(proposal)
        matched = [b for b in self.bindings if b.covers(call.name)]
        if not matched:
            if self.unknown_tool == "allow":
                v = Verdict.allow(self.name, f"no policy covers tool {call.name}")
            else:
                v = Verdict(self.deny, f"no policy covers tool {call.name} (unknown tools are refused)", self.name)
            self._record(context, call, {}, None, v, None, 0.0)
            return v
        verdict = None
        for b in matched:
            t0 = time.perf_counter()
            args: dict[str, Any] = {}
            try:
                args = b.extractor.extract(call, context)
                res = b.policy.evaluate(args)
            except Exception as exc:  # noqa: BLE001 - fail closed on anything
                v = fail_closed(self.name, exc, self.on_error)
                v = Verdict(v.decision, f"policy {b.policy.id} could not decide: {type(exc).__name__}: {exc}",
                            self.name, details={"policy": b.policy.id, "version": b.policy.version,
                                                "error": type(exc).__name__, "arguments": args})
                self._record(context, call, args, b.policy, v, None, time.perf_counter() - t0)
                return v
            dt = time.perf_counter() - t0
            details = {"policy": b.policy.id, "version": b.policy.version, "code": res.code, "arguments": args}
            if not res.allow:
                v = Verdict(self.deny, res.reason, self.name, {"seconds": dt}, details=details)
                self._record(context, call, args, b.policy, v, res.code, dt)
                return v
            verdict = Verdict(Decision.ALLOW, res.reason, self.name, {"seconds": dt}, details=details)
            self._record(context, call, args, b.policy, verdict, res.code, dt)
        assert verdict is not None
        return verdict

    async def acheck(self, context: Context, proposal: Any) -> Verdict:
        if self._slow:  # an LLM extractor blocks on I/O: keep the event loop free
            return await asyncio.to_thread(self.check, context, proposal)
        return self.check(context, proposal)

    def enforce(self, context: Context, proposal: Any) -> Outcome:
        """Decide and apply the enforcement strategy (what happens to the agent)."""
        try:
            verdict = self.check(context, proposal)
        except Exception as exc:  # noqa: BLE001 - e.g. a proposal that is not a tool call
            verdict = fail_closed(self.name, exc, self.on_error)
        return self.strategy.apply(verdict, context, proposal)
