"""The Guard protocol, a base class, fail-closed wrapping and composition (GuardStack).

Contract of a guard: ``check(context, proposal) -> Verdict`` never returns ALLOW because it failed.
Any exception inside a guard is turned, by :class:`GuardStack` and :func:`fail_closed`, into the
configured fail-closed decision (HALT by default) with the error as the reason.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Iterable, Protocol, runtime_checkable

from .errors import GuardError, GuardTimeout, InputError
from .runs import end_run
from .types import Context, Decision, Verdict

__all__ = ["BaseGuard", "Guard", "GuardStack", "fail_closed"]


@runtime_checkable
class Guard(Protocol):
    """Anything with a ``name`` and matching ``check``/``acheck`` methods returning a Verdict."""

    name: str

    def check(self, context: Context, proposal: Any) -> Verdict: ...

    async def acheck(self, context: Context, proposal: Any) -> Verdict: ...


class BaseGuard:
    """Convenience base: subclasses implement ``check``; ``acheck`` runs it (cheap guards need no thread)."""

    name: str = "guard"

    def check(self, context: Context, proposal: Any) -> Verdict:  # pragma: no cover - abstract
        raise NotImplementedError

    async def acheck(self, context: Context, proposal: Any) -> Verdict:
        return self.check(context, proposal)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


def fail_closed(guard_name: str, error: BaseException, decision: Decision = Decision.HALT) -> Verdict:
    """The verdict a guard that errored yields: never ALLOW. ``decision`` must block."""
    if decision < Decision.REJECT:
        raise InputError(f"fail-closed decision must be REJECT, ESCALATE or HALT, not {decision.name}")
    kind = "timed out" if isinstance(error, (TimeoutError, GuardTimeout)) else "failed"
    return Verdict(
        decision,
        f"guard {guard_name} {kind}: {type(error).__name__}: {error}",
        guard_name,
        details={"error": type(error).__name__},
    )


class GuardStack(BaseGuard):
    """Ask guards in order; the strictest verdict wins and says which guard decided.

    - ``short_circuit``: stop asking once a verdict reaches HALT (nothing can be stricter).
    - ``on_error``: the decision for a guard that raises (fail closed; HALT by default).
    - ``timeout_s``: per-guard time limit. ``acheck`` enforces it with ``asyncio.wait_for``;
      ``check`` (synchronous, no threads on the hot path) treats a guard that *returned* after the
      limit as timed out and fails closed.
    The returned verdict's ``details['verdicts']`` lists every guard's verdict in order.
    """

    def __init__(
        self,
        guards: Iterable[Guard],
        *,
        name: str = "stack",
        on_error: Decision | str = Decision.HALT,
        timeout_s: float | None = None,
        short_circuit: bool = True,
    ) -> None:
        self.guards = list(guards)
        if not self.guards:
            raise InputError("GuardStack needs at least one guard")
        for g in self.guards:
            if not isinstance(g, Guard):
                raise InputError(f"{g!r} is not a Guard (needs name, check and acheck)")
        self.name = name
        self.on_error = Decision.parse(on_error)
        self.timeout_s = timeout_s
        self.short_circuit = short_circuit

    def __repr__(self) -> str:
        return f"GuardStack([{', '.join(repr(g) for g in self.guards)}], on_error={self.on_error.name})"

    def end_run(self, run_id: str) -> None:
        """Forget ``run_id`` in every member that keeps per-run memory (see :func:`agentguard.core.runs.end_run`)."""
        for g in self.guards:
            end_run(g, run_id)

    def _combine(self, verdicts: list[Verdict]) -> Verdict:
        best = verdicts[0]
        for v in verdicts[1:]:
            if v.decision > best.decision:
                best = v
        trail = [v.to_dict() for v in verdicts]
        return Verdict(best.decision, best.reason, best.guard, best.numbers, best.action,
                       {**dict(best.details), "verdicts": trail})

    def check(self, context: Context, proposal: Any) -> Verdict:
        verdicts: list[Verdict] = []
        for g in self.guards:
            t0 = time.perf_counter()
            try:
                v = g.check(context, proposal)
                if not isinstance(v, Verdict):
                    raise GuardError(f"returned {type(v).__name__}, not a Verdict")
                if self.timeout_s is not None and time.perf_counter() - t0 > self.timeout_s:
                    raise GuardTimeout(f"took longer than {self.timeout_s}s")
                if not v.guard:
                    v = v.with_guard(g.name)
            except Exception as exc:  # fail closed on anything a guard raises
                v = fail_closed(g.name, exc, self.on_error)
            verdicts.append(v)
            if self.short_circuit and v.decision is Decision.HALT:
                break
        return self._combine(verdicts)

    async def acheck(self, context: Context, proposal: Any) -> Verdict:
        verdicts: list[Verdict] = []
        for g in self.guards:
            try:
                coro = g.acheck(context, proposal)
                v = await (asyncio.wait_for(coro, self.timeout_s) if self.timeout_s else coro)
                if not isinstance(v, Verdict):
                    raise GuardError(f"returned {type(v).__name__}, not a Verdict")
                if not v.guard:
                    v = v.with_guard(g.name)
            except Exception as exc:
                v = fail_closed(g.name, exc, self.on_error)
            verdicts.append(v)
            if self.short_circuit and v.decision is Decision.HALT:
                break
        return self._combine(verdicts)
