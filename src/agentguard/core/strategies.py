"""Concrete enforcement strategies, usable with any guard's verdict.

| strategy | paper name | what happens on a blocking verdict |
|---|---|---|
| :class:`Stop` | stop (Pro2Guard), task termination TT (VeriGuard) | the run ends |
| :class:`Block` | action blocking AB (VeriGuard) | the action is skipped; the agent is told why and goes on |
| :class:`HaltTool` | tool execution halt TEH (VeriGuard) | the tool is disabled for the rest of the run; the agent goes on |
| :class:`Replan` | collaborative re-planning CRP (VeriGuard) | the agent gets the violation and may propose another call, up to ``max_rounds`` times, then ``then`` applies |
| :class:`Reflect` | self-reflection (Pro2Guard section 3.3) | the agent's next prompt carries an alert: abstract state, property, probability, threshold |
| :class:`HumanInTheLoop` | human-in-the-loop (Pro2Guard) | a callback approves or overrides; :class:`PendingApproval` for non-blocking servers |
| :class:`Fallback` | safety filter (ReGuard) | the verdict's fallback action replaces the proposed one |

Every strategy returns an :class:`~agentguard.core.enforcement.Outcome`. An ALLOW verdict always
executes the proposal unchanged; MODIFY executes the verdict's action. A HALT verdict stops the run
whatever the strategy, except under :class:`HumanInTheLoop`, where the human decides.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from .canonical import canonical_name, name_forms
from .enforcement import Outcome
from .types import Context, Decision, Step, ToolCall, Verdict

__all__ = [
    "Block", "Default", "Fallback", "HaltTool", "HumanInTheLoop", "PendingApproval", "Reflect", "Replan", "Stop",
    "default_outcome", "halted_tool", "strategy", "tool_of",
]


def tool_of(proposal: Any) -> str | None:
    """The tool a proposal runs: a ToolCall's name, or the name of a Step's ToolCall action (a step fed to
    ``/v1/runs/{id}/steps`` runs its action's tool as surely as ``/v1/check`` runs a call); None for
    anything that runs no named tool."""
    if isinstance(proposal, Step):
        proposal = proposal.action
    name = proposal.name if isinstance(proposal, ToolCall) else getattr(proposal, "name", None)
    return name if isinstance(name, str) and name else None


def halted_tool(metadata: Any, proposal: Any) -> str | None:
    """The entry of ``metadata['halted_tools']`` (the tools :class:`HaltTool` disabled for the run) that the
    tool of ``proposal`` (:func:`tool_of`) is, or None.

    Guaranteed: a halted tool is matched as a refusing rule matches a tool name
    (:mod:`~agentguard.core.canonical`): the canonical name of the halted tool against every name form of
    the call's, so ``READ-FILE``, `` read_file``, full-width letters or ``fs__read_file`` are the halted
    ``read_file`` (the rules grant them as ``read_file``, so an exact comparison let them run again)."""
    halted = metadata.get("halted_tools") if hasattr(metadata, "get") else None
    tool = tool_of(proposal)
    if not halted or tool is None:
        return None
    forms = set(name_forms(tool))
    return next((h for h in sorted(str(x) for x in halted) if canonical_name(h) in forms), None)


def default_outcome(verdict: Verdict, proposal: Any) -> Outcome | None:
    """The outcome every strategy shares for non-blocking verdicts and for HALT; None otherwise."""
    if verdict.decision is Decision.ALLOW:
        return Outcome(True, proposal, verdict=verdict)
    if verdict.decision is Decision.MODIFY:
        return Outcome(True, verdict.action if verdict.action is not None else proposal, verdict=verdict,
                       message=verdict.reason)
    if verdict.decision is Decision.HALT:
        return Outcome(False, None, stop=True, message=verdict.reason, verdict=verdict)
    return None


@dataclass
class Stop:
    """Stop the run on any blocking verdict (Pro2Guard 'stop', VeriGuard task termination TT)."""

    name: str = "stop"

    def apply(self, verdict: Verdict, context: Context, proposal: Any) -> Outcome:
        out = default_outcome(verdict, proposal)
        if out is not None and verdict.decision is not Decision.RECOVER:
            return out
        return Outcome(False, None, stop=True, message=f"run stopped: {verdict.reason}", verdict=verdict)


@dataclass
class Block:
    """Skip the blocked action, tell the agent why, go on (VeriGuard action blocking AB)."""

    name: str = "block"

    def apply(self, verdict: Verdict, context: Context, proposal: Any) -> Outcome:
        out = default_outcome(verdict, proposal)
        if out is not None:
            return out
        return Outcome(False, None, message=f"action blocked by {verdict.guard}: {verdict.reason}", verdict=verdict)


@dataclass
class HaltTool:
    """Disable the offending tool for the rest of the run (VeriGuard tool execution halt TEH).

    The set of halted tools is kept per run in ``context.metadata['halted_tools']``; later calls to a
    halted tool are refused even if a guard would allow them.
    """

    name: str = "halt-tool"

    def apply(self, verdict: Verdict, context: Context, proposal: Any) -> Outcome:
        halted: set[str] = context.metadata.setdefault("halted_tools", set())
        tool = tool_of(proposal)
        if halted_tool(context.metadata, proposal) is not None:
            return Outcome(False, None, message=f"tool {tool} was halted earlier in this run", verdict=verdict)
        out = default_outcome(verdict, proposal)
        if out is not None:
            return out
        if tool:
            halted.add(tool)
        return Outcome(False, None, message=f"tool {tool} halted for this run: {verdict.reason}", verdict=verdict,
                       extra={"halted_tool": tool})


@dataclass
class Replan:
    """Give the violation back to the agent so it can propose another action (VeriGuard CRP).

    Counts the rounds per run in ``context.metadata['replan_rounds']``; after ``max_rounds`` blocked
    proposals in a row the ``then`` strategy (default :class:`Stop`) applies. An allowed proposal resets
    the count.
    """

    max_rounds: int = 3
    then: Any = field(default_factory=Stop)
    name: str = "replan"

    def apply(self, verdict: Verdict, context: Context, proposal: Any) -> Outcome:
        if isinstance(self.then, HaltTool) and halted_tool(context.metadata, proposal) is not None:
            return self.then.apply(verdict, context, proposal)  # CRP+TEH: a tool halted earlier stays halted
        out = default_outcome(verdict, proposal)
        if out is not None:
            if out.execute:
                context.metadata["replan_rounds"] = 0
            return out
        k = int(context.metadata.get("replan_rounds", 0)) + 1
        context.metadata["replan_rounds"] = k
        if k > self.max_rounds:
            return self.then.apply(verdict, context, proposal)
        msg = (f"Your proposed action was refused by {verdict.guard}: {verdict.reason}. "
               f"Propose a different action that respects this rule (attempt {k} of {self.max_rounds}).")
        return Outcome(False, None, message=msg, verdict=verdict, extra={"replan": True, "round": k})


@dataclass
class Reflect:
    """Let the agent go on, with a risk alert added to its next prompt (Pro2Guard section 3.3).

    The alert states the current abstract state in words (``verdict.details['state_text']`` when the
    guard provides it), the property at risk (``details['property']``), the predicted probability
    (``numbers['probability']``, the probability of staying safe) and the threshold
    (``numbers['threshold']``). ``execute_proposal`` chooses whether the flagged action itself still
    runs (False by default: the agent re-plans first).
    """

    execute_proposal: bool = False
    name: str = "reflect"

    @staticmethod
    def alert(verdict: Verdict) -> str:
        d, n = verdict.details, verdict.numbers
        parts = ["SAFETY ALERT."]
        if d.get("state_text"):
            parts.append(f"Current state: {d['state_text']}.")
        if d.get("property"):
            parts.append(f"Requirement at risk: {d['property']}.")
        if "probability" in n and "threshold" in n:
            parts.append(
                f"The predicted probability of staying safe is {n['probability']:.3f}, below the threshold "
                f"{n['threshold']:.3f} (probability of a future violation {1 - n['probability']:.3f})."
            )
        parts.append(f"Reason: {verdict.reason}. Revise your plan and choose an action that avoids the hazard.")
        return " ".join(parts)

    def apply(self, verdict: Verdict, context: Context, proposal: Any) -> Outcome:
        out = default_outcome(verdict, proposal)
        if out is not None:
            return out
        return Outcome(self.execute_proposal, proposal if self.execute_proposal else None,
                       message=self.alert(verdict), verdict=verdict, extra={"reflect": True})


@dataclass
class Default:
    """What happens when no strategy is configured: run ALLOW unchanged and MODIFY with its arguments;
    a RECOVER runs its fallback action (ReGuard) when it has one and is refused otherwise; REJECT (and an
    ESCALATE nobody approved) is refused and the run goes on; HALT stops the run."""

    name: str = "default"

    def apply(self, verdict: Verdict, context: Context, proposal: Any) -> Outcome:
        out = default_outcome(verdict, proposal)
        if out is not None:
            return out
        if verdict.decision is Decision.RECOVER and verdict.action is not None:
            return Outcome(True, verdict.action, message=f"action replaced: {verdict.reason}", verdict=verdict)
        return Outcome(False, None, message=f"action refused by {verdict.guard or 'guard'}: {verdict.reason}",
                       verdict=verdict)


@dataclass
class Fallback:
    """Replace the proposal by the verdict's fallback action (ReGuard least-restrictive filter).

    A RECOVER verdict without an action fails closed (the run stops).
    """

    name: str = "fallback"

    def apply(self, verdict: Verdict, context: Context, proposal: Any) -> Outcome:
        out = default_outcome(verdict, proposal)
        if out is not None:
            return out
        if verdict.action is not None:
            return Outcome(True, verdict.action, message=f"action replaced: {verdict.reason}", verdict=verdict)
        return Outcome(False, None, stop=True, message=f"no fallback action: {verdict.reason}", verdict=verdict)


@dataclass
class PendingApproval:
    """A request for human approval that a server can hand out and resolve later (non-blocking)."""

    verdict: Verdict
    proposal: Any
    ticket: str = field(default_factory=lambda: uuid.uuid4().hex)
    _future: "asyncio.Future[bool] | None" = None
    decided: bool | None = None

    def resolve(self, approved: bool) -> None:
        self.decided = bool(approved)
        if self._future is not None and not self._future.done():
            self._future.get_loop().call_soon_threadsafe(self._future.set_result, self.decided)

    async def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the human; a timeout counts as a refusal (fail closed)."""
        if self.decided is not None:
            return self.decided
        self._future = asyncio.get_running_loop().create_future()
        try:
            return await asyncio.wait_for(self._future, timeout_s)
        except asyncio.TimeoutError:
            self.decided = False
            return False


@dataclass
class HumanInTheLoop:
    """Ask a human about every blocking verdict.

    ``approve(verdict, proposal) -> bool | Any``: True executes the proposal, False refuses it (the
    agent is told), any other value is an override action that runs instead. A callback that raises
    counts as a refusal (fail closed). With ``approve=None`` the strategy is non-blocking: it returns
    an outcome carrying a :class:`PendingApproval` in ``extra['pending']`` that a server resolves later.
    """

    approve: Callable[[Verdict, Any], Any] | None = None
    name: str = "human"
    pending: dict[str, PendingApproval] = field(default_factory=dict)

    def apply(self, verdict: Verdict, context: Context, proposal: Any) -> Outcome:
        if verdict.decision in (Decision.ALLOW, Decision.MODIFY):
            return default_outcome(verdict, proposal)  # type: ignore[return-value]
        if self.approve is None:
            p = PendingApproval(verdict, proposal)
            self.pending[p.ticket] = p
            return Outcome(False, None, message=f"waiting for human approval (ticket {p.ticket}): {verdict.reason}",
                           verdict=verdict, extra={"pending": p, "ticket": p.ticket})
        try:
            answer = self.approve(verdict, proposal)
        except Exception as exc:  # fail closed
            return Outcome(False, None, stop=verdict.decision is Decision.HALT,
                           message=f"human approval failed ({exc}); action refused", verdict=verdict)
        if answer is True:
            return Outcome(True, proposal, message="approved by a human", verdict=verdict, extra={"human": "approved"})
        if answer is False or answer is None:
            return Outcome(False, None, stop=verdict.decision is Decision.HALT,
                           message=f"refused by a human: {verdict.reason}", verdict=verdict, extra={"human": "refused"})
        return Outcome(True, answer, message="overridden by a human", verdict=verdict, extra={"human": "override"})


_SIMPLE: dict[str, Callable[[], Any]] = {
    "TT": Stop, "STOP": Stop, "AB": Block, "BLOCK": Block, "TEH": HaltTool, "HALT-TOOL": HaltTool,
    "FALLBACK": Fallback, "REFLECT": Reflect, "DEFAULT": Default,
}


def strategy(name: str, *, max_rounds: int = 3) -> Any:
    """A strategy by name: the VeriGuard paper's TT, AB, TEH, CRP and the hybrids CRP+TEH / CRP+AB /
    CRP+TT, or ``stop``, ``block``, ``halt-tool``, ``fallback``, ``reflect``, ``default``
    (case-insensitive). Raises InputError naming the known ones."""
    from .errors import InputError

    key = str(name).strip().upper()
    if key in _SIMPLE:
        return _SIMPLE[key]()
    if key in ("CRP", "REPLAN"):
        return Replan(max_rounds=max_rounds)
    if key.startswith("CRP+") and key[4:] in _SIMPLE:
        return Replan(max_rounds=max_rounds, then=_SIMPLE[key[4:]]())
    raise InputError(f"unknown enforcement strategy {name!r}; expected TT, AB, TEH, CRP, CRP+TEH, CRP+AB, CRP+TT, "
                     "stop, block, halt-tool, fallback, reflect or default")
