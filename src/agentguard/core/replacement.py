"""Nothing runs that the guard did not decide: a replacement (MODIFY's arguments, RECOVER's fallback) is
decided by the whole guard before it may run.

A guard may answer MODIFY (run the call with other arguments) or RECOVER (run a fallback action instead:
ReGuard's least-restrictive filter). When guards compose, the strictest verdict wins and its action is
what runs; without this module that action was never shown to any guard, the one that proposed it
included. So a stack of a fallback filter and a verified policy would run the filter's fallback even
where the policy forbids it, and a redaction guard's rewritten arguments would bypass the allow-list
that judged the original ones: each guard benign, the composition a way through.

:func:`decided` / :func:`adecided` (what :class:`~agentguard.core.pipeline.Pipeline` calls instead of
:func:`~agentguard.core.guard.run_guard` / :func:`~agentguard.core.guard.arun_guard`) settle the verdict:

- a verdict that replaces nothing (ALLOW, REJECT, ESCALATE, HALT, or MODIFY/RECOVER without an action)
  is returned as it is;
- otherwise the replacement (:func:`replacement`) is decided by the same guard, with the same context,
  under the same fail-closed rule. ALLOW, or the same replacement proposed again (a fixed point: the
  fallback is its own best action), settles it: the verdict runs its replacement. Another replacement is
  decided in turn, up to :data:`MAX_ROUNDS`; a refusal of a replacement refuses the call (REJECT, or
  HALT when a guard halted; an ESCALATE is not put to a human about a call nobody proposed: REJECT); a
  replacement that cannot be read as a proposal, or rounds that do not settle, refuse it too.

Memory: a guard's per-run memory (every :class:`~agentguard.core.runs.RunMemory` held by a guard in the
tree: a monitor's step count and latch, a product automaton's state, a filter's last fallback) is put
back after the replacement rounds as the first decision left it, so each decision still counts once (a
calibrated monitor's per-step thresholds keep their index) and a replay rebuilds the same state. An entry
that cannot be copied is left as the rounds made it (``details["memory_kept"]``); memory a guard keeps
outside a RunMemory is not put back.

The proposal decided is the proposal that runs: a guard that changes the object it is deciding (writes into
a tool call's arguments) would make the call run with values the guards before it never judged (a stack of a
path rule and a guard that rewrites ``path`` afterwards ran ``/etc/shadow``). Each decision compares the
tool call's name and arguments (a typed snapshot, :func:`_frozen`) before and
after the guard; a tool call changed while it was decided is refused with ``on_error`` (fail closed), whatever
the guards answered. (A guard that wants other arguments answers MODIFY with them: they are decided in turn.)

What it costs: a snapshot of the tool call's arguments before and after each decision (one walk each: a few
microseconds for small arguments, ``benchmarks/results/pipeline_identity_check.json``); nothing more on a verdict
without a replacement; with one, a copy of the run's memory entries and up to :data:`MAX_ROUNDS` more decisions.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

from .errors import GuardError
from .guard import arun_guard, fail_closed, run_guard
from .proposal import to_proposal
from .runs import RunMemory, walk_guards
from .types import Context, Decision, Step, ToolCall, Verdict

__all__ = ["MAX_ROUNDS", "adecided", "decided", "replacement"]

#: replacement rounds before a verdict that keeps replacing is refused
MAX_ROUNDS = 3
_REPLACES = (Decision.MODIFY, Decision.RECOVER)


def replacement(proposal: Any, action: Any) -> ToolCall | Step:
    """The proposal that runs when ``action`` replaces ``proposal`` (what the enforcement executes): a
    ToolCall or Step action as it is; for a tool call, a mapping of arguments applied to the same tool
    (:attr:`~agentguard.core.enforcement.Outcome.call`) or a mapping with a ``name`` read as a call; for
    a step, a text action replacing its output (or, for a step that only observes, its observation),
    anything else replacing its action. Raises InputError when the action cannot be read."""
    if isinstance(action, (ToolCall, Step)):
        return action
    if isinstance(proposal, ToolCall):
        if isinstance(action, Mapping) and isinstance(action.get("name"), str):
            return to_proposal(action)
        if isinstance(action, Mapping):
            return ToolCall(proposal.name, dict(action), proposal.call_id)
        return to_proposal(action)  # raises: a tool call replaced by something that is not a call
    if isinstance(proposal, Step):
        if isinstance(action, str) and proposal.action is None and proposal.output is not None:
            return dataclasses.replace(proposal, output=action)
        if isinstance(action, str) and proposal.action is None and proposal.observation is not None:
            return dataclasses.replace(proposal, observation=action)
        return dataclasses.replace(proposal, action=action)
    return to_proposal(action)


def _refused(first: Verdict, why: str, decision: Decision = Decision.REJECT, by: Verdict | None = None) -> Verdict:
    trail = list((first.details or {}).get("verdicts") or [first.to_dict()])
    if by is not None:
        trail += list((by.details or {}).get("verdicts") or [by.to_dict()])
    return Verdict(decision, f"the {first.decision.name} of {first.guard or 'a guard'} ({first.reason}) was not "
                             f"allowed to run: {why}", (by.guard if by is not None else "") or first.guard,
                   dict(first.numbers), None, {"verdicts": trail, "replacement_refused": True})


def _settled(last: Verdict, final: ToolCall | Step, rounds: int) -> Verdict:
    """``last`` (the verdict that proposed ``final``, the replacement the guard allowed) with an action the
    enforcement reads as ``final``: after the first round the verdict's own action (relative to the
    original proposal, as the guard gave it); later a tool call is carried whole (its arguments may
    belong to another tool than the proposal's) and a step's action as the guard gave it."""
    action = last.action if rounds == 1 or not isinstance(final, ToolCall) else final
    return Verdict(last.decision, last.reason, last.guard, dict(last.numbers), action,
                   {**dict(last.details), "replacement_checked": rounds})


def _next(first: Verdict, v: Verdict, current: Any, got: Verdict, rounds: int
          ) -> tuple[Verdict | None, Any, Verdict]:
    """One settling step: (the final verdict or None to go on, the next replacement, its verdict)."""
    if got.decision is Decision.ALLOW:
        return _settled(v, current, rounds), current, v
    if got.decision in _REPLACES and got.action is not None:
        try:
            nxt = replacement(current, got.action)
        except Exception as exc:  # noqa: BLE001 - unreadable replacement: refused
            return _refused(first, f"its replacement's own replacement cannot be read ({exc})", by=got), current, v
        if nxt == current:  # a fixed point: the guard proposes this very action for it
            return _settled(v, current, rounds), current, v
        return None, nxt, got
    if got.decision in _REPLACES:
        return _refused(first, f"{got.guard or 'a guard'} answered {got.decision.name} without an action", by=got), \
            current, v
    decision = Decision.HALT if got.decision is Decision.HALT else Decision.REJECT
    return _refused(first, f"{got.guard or 'a guard'} refused the replacement ({got.decision.name}: {got.reason})",
                    decision, got), current, v


def _start(proposal: Any, v: Verdict) -> tuple[Verdict | None, Any]:
    if v.decision not in _REPLACES or v.action is None:
        return v, None
    try:
        return None, replacement(proposal, v.action)
    except Exception as exc:  # noqa: BLE001
        return _refused(v, f"its replacement cannot be read as a proposal ({exc})"), None


class _Memory:
    """The run's entries of every RunMemory in the guard tree, as the first decision left them."""

    def __init__(self, guard: Any, run_id: str) -> None:
        self.run_id, self.kept = run_id, 0
        self.entries: list[tuple[RunMemory[Any], bool, Any]] = []
        for g in walk_guards(guard):
            for mem in [v for v in (getattr(g, "__dict__", None) or {}).values() if isinstance(v, RunMemory)]:
                held = mem.peek(run_id)
                try:
                    self.entries.append((mem, held is not None, copy.deepcopy(held)))
                except Exception:  # noqa: BLE001 - uncopyable (a lock, a handle): left as the rounds make it
                    self.kept += 1

    def restore(self, v: Verdict) -> Verdict:
        for mem, held, state in self.entries:
            if held:
                mem.set(self.run_id, state)
            else:
                mem.end_run(self.run_id)
        return v if not self.kept else dataclasses.replace(v, details={**dict(v.details), "memory_kept": self.kept})


def _frozen(obj: Any) -> Any:
    """A comparable snapshot of ``obj``: types kept (``1``, ``1.0`` and ``True`` differ), floats by ``repr`` (a
    NaN equals itself), mappings in their order, other objects by ``repr``."""
    t = type(obj)
    if t is str or t is int or t is bool or obj is None:
        return t, obj
    if t is float:
        return t, repr(obj)
    if isinstance(obj, Mapping):
        return t, tuple((type(k), str(k), _frozen(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return t, tuple(_frozen(v) for v in obj)
    return t, repr(obj)


def _identity(proposal: Any) -> Any:
    """The snapshot of a tool call (its name and arguments) before it is decided; None for other proposals (a
    step is text to release or a record of what ran, nothing a guard's write could make run)."""
    if not isinstance(proposal, ToolCall):
        return None
    try:
        return proposal.name, _frozen(proposal.arguments)
    except Exception:  # noqa: BLE001 - cannot be read (a repr that raises, a cycle): refused below
        return "?"


def _kept(guard: Any, proposal: Any, before: Any, v: Verdict, on_error: Decision) -> Verdict:
    """``v``, or the fail-closed refusal when the guard changed ``proposal`` while deciding it (a REJECT or HALT
    runs nothing: it stands as it is; an ESCALATE could, once a human approves it)."""
    if before is None or before != "?" and (v.decision in (Decision.REJECT, Decision.HALT)
                                            or _identity(proposal) == before):
        return v
    why = "changed the proposal it was deciding" if before != "?" else "was given a proposal that cannot be encoded"
    return fail_closed(str(getattr(guard, "name", None) or type(guard).__name__), GuardError(why), on_error)


def _run(guard: Any, context: Context, proposal: Any, timeout_s: float | None, on_error: Decision) -> Verdict:
    before = _identity(proposal)
    return _kept(guard, proposal, before, run_guard(guard, context, proposal, timeout_s=timeout_s,
                                                    on_error=on_error), on_error)


async def _arun(guard: Any, context: Context, proposal: Any, timeout_s: float | None, on_error: Decision) -> Verdict:
    before = _identity(proposal)
    return _kept(guard, proposal, before, await arun_guard(guard, context, proposal, timeout_s=timeout_s,
                                                           on_error=on_error), on_error)


def decided(guard: Any, context: Context, proposal: Any, *, timeout_s: float | None = None,
            on_error: Decision = Decision.HALT) -> Verdict:
    """:func:`~agentguard.core.guard.run_guard`, then its replacement decided (see the module docstring)."""
    first = _run(guard, context, proposal, timeout_s, on_error)
    done, current = _start(proposal, first)
    if done is not None:
        return done
    memory, v = _Memory(guard, context.run_id), first
    for rounds in range(1, MAX_ROUNDS + 1):
        got = _run(guard, context, current, timeout_s, on_error)
        done, current, v = _next(first, v, current, got, rounds)
        if done is not None:
            return memory.restore(done)
    return memory.restore(_refused(first, f"its replacements did not settle in {MAX_ROUNDS} rounds"))


async def adecided(guard: Any, context: Context, proposal: Any, *, timeout_s: float | None = None,
                   on_error: Decision = Decision.HALT) -> Verdict:
    """:func:`~agentguard.core.guard.arun_guard`, then its replacement decided (see the module docstring)."""
    first = await _arun(guard, context, proposal, timeout_s, on_error)
    done, current = _start(proposal, first)
    if done is not None:
        return done
    memory, v = _Memory(guard, context.run_id), first
    for rounds in range(1, MAX_ROUNDS + 1):
        got = await _arun(guard, context, current, timeout_s, on_error)
        done, current, v = _next(first, v, current, got, rounds)
        if done is not None:
            return memory.restore(done)
    return memory.restore(_refused(first, f"its replacements did not settle in {MAX_ROUNDS} rounds"))
