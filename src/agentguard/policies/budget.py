"""Run budgets: limits over a run's calls taken together ("at most 1,000 transferred per run, in at most 5 transfers").

A rule on one call (a verified policy ``amount <= limit``, an argument rule) is passed by splitting: 800 over a
limit of 500 goes through as two transfers of 400. A budget counts what the run has already been allowed::

    [[guards]]
    type = "run-budget"
    name = "spend"

    [[guards.budgets]]
    name = "transfers"
    tools = ["transfer_*", "pay_*"]     # canonical globs, matched as the refusing rules match (every namespace form)
    argument = "amount"                 # summed over the run, found at any depth of the arguments
    max_total = 1000
    max_calls = 5                       # optional; a budget needs max_total or max_calls (or both)
    decision = "reject"                 # reject (default), escalate or halt

Guarantees (per run, per budget):

- the calls this guard allowed never add up to more than ``max_total`` and are never more than ``max_calls``:
  a call is allowed only when the run's total (every earlier call it allowed or escalated, plus this one) stays
  within the budget, and then it is counted at once (before it runs), so calls decided side by side in one
  turn, or concurrently under the run's lock, are counted one after another;
- a call over the budget is answered with ``decision`` and not counted; an ESCALATE is counted (the human may
  let it run);
- every value under the ``argument`` name at any depth counts (``{"payments": [{"amount": 400}, {"amount":
  400}]}`` is 800, as :func:`~.arguments.keyed_values` finds it); each must read as a finite number that is not
  negative (an int or float, or a text spelled as a plain decimal, ``"400"`` or ``"400.50"``:
  :data:`AMOUNT_TEXT`, not ``True``, not ``"-400"``, ``"nan"``, ``"1e3"``, ``"1_000"``, ``" 5"`` or non-ASCII
  digits, which readers other than Python's read otherwise or not at all); a matching call without one, with one
  it cannot read, or with values too deep or too many to read, is refused (fail closed: a tool may fall back to
  a default, or a refund trick may pass a negative amount);
- a call this guard allowed counts whatever the other guards of the stack decided (conservative: it may leave
  the run with less budget than it spent, never more);
- the counts live in a :class:`~agentguard.core.runs.RunMemory` (``max_runs``): a run let go for capacity is
  never treated as new (:class:`~agentguard.core.runs.RunEvicted`: the service replays the run's stored inputs
  into the guard, a library caller fails closed); ``end_run`` forgets a finished run.

Why a guard of its own and not an argument rule: the limit is over the run's history, which a rule on one call
cannot see; the flow rules read the run's recorded trace, which holds only calls an adapter recorded after they
ran, so calls decided side by side in one turn would each see the budget unspent.
"""

from __future__ import annotations

import math
import threading
from fractions import Fraction
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..core.canonical import canonical_name, name_forms
from ..core.errors import InputError
from ..core.guard import BaseGuard
from ..core.runs import RunMemory
from ..core.types import Context, Decision, Verdict
from .arguments import keyed_values
from .flow import guard_tables, named_tables, proposed_call
from .rules import tool_patterns
from .selection import AMOUNT_TEXT  # the one spelling of an amount given as text (why: there)

__all__ = ["Budget", "RunBudgetGuard"]

_KEYS = {"name", "tools", "argument", "max_total", "max_calls", "decision"}


def _limit(value: Any, what: str, integer: bool = False) -> float | None:
    if value is None:
        return None
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or not math.isfinite(value) or value < 0:
        kind = "a non-negative integer" if integer else "a finite non-negative number"
        raise InputError(f"{what} must be {kind}, got {value!r}")
    return value


@dataclass(frozen=True)
class Budget:
    """One budget: the calls of ``tools`` in a run, at most ``max_calls`` of them and ``argument`` summing to at
    most ``max_total`` (see the module docstring)."""

    name: str
    tools: Sequence[str]
    argument: str | None = None
    max_total: float | None = None
    max_calls: int | None = None
    decision: Decision = Decision.REJECT

    def __post_init__(self) -> None:
        what = f"budget {self.name!r}"
        if isinstance(self.tools, str):
            object.__setattr__(self, "tools", [self.tools])
        if not self.tools:
            raise InputError(f"{what}: give the tools it counts (tools = [...])")
        object.__setattr__(self, "_match", tool_patterns(list(self.tools), f"{what}.tools"))
        _limit(self.max_total, f"{what}.max_total")
        _limit(self.max_calls, f"{what}.max_calls", integer=True)
        if self.max_total is None and self.max_calls is None:
            raise InputError(f"{what}: give max_total or max_calls (or both)")
        if self.max_total is not None and not (isinstance(self.argument, str) and self.argument):
            raise InputError(f"{what}: max_total needs the argument it sums (argument = \"amount\")")
        if not self.decision.refuses:
            raise InputError(f"{what}: decision must refuse (reject, escalate or halt), not {self.decision.name}")

    @classmethod
    def from_config(cls, raw: Any, where: str) -> "Budget":
        if not isinstance(raw, Mapping):
            raise InputError(f"{where}: a budget is a table ([[guards.budgets]]), got {type(raw).__name__}")
        unknown = sorted(set(raw) - _KEYS)
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})")
        return cls(name=str(raw.get("name", where)), tools=raw.get("tools") or [], argument=raw.get("argument"),
                   max_total=raw.get("max_total"), max_calls=raw.get("max_calls"),
                   decision=Decision.parse(raw.get("decision", "reject")))

    def counts(self, name: str) -> bool:
        """Whether a call of the tool ``name`` is counted (any of its namespace forms matches)."""
        match = self._match  # type: ignore[attr-defined]
        return match is not None and any(match.match(f) for f in name_forms(name))

    def amount(self, arguments: Any) -> Fraction | str:
        """The sum of the call's ``argument`` values, or why it cannot be read (a text)."""
        want = canonical_name(self.argument or "")
        values = keyed_values(arguments, lambda k: k == want)
        if values is None:
            return f"its arguments are too deep or too many to find every {self.argument!r}"
        if not values:
            return f"it names no {self.argument!r}"
        total = Fraction(0)
        for v in values:
            x = _number(v)
            if x is None:
                return f"its {self.argument!r} {str(v)[:40]!r} is not a finite non-negative number"
            total += x
        return total


#: longer texts are refused (no amount needs more digits than a float holds; an int of 4,300+ digits is refused by
#: Python's own reader)
AMOUNT_TEXT_MAX = 400


def _number(v: Any) -> Fraction | None:
    """``v`` as an exact non-negative number (a Fraction: sums never round below the true total), or None.

    A number (int, float) counts as itself when finite and not negative (not a bool). A text (str, or bytes read as
    ASCII) counts only when all of it is :data:`AMOUNT_TEXT` (no sign, space, exponent, separator, base prefix,
    leading zero or non-ASCII digit); anything else is unreadable, and an unreadable amount is refused (fail closed)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return Fraction(v) if v >= 0 else None
    if isinstance(v, float):
        return Fraction(v) if math.isfinite(v) and v >= 0 else None
    if isinstance(v, bytes):
        try:
            v = v.decode("ascii")
        except UnicodeDecodeError:
            return None
    if not isinstance(v, str) or len(v) > AMOUNT_TEXT_MAX or not AMOUNT_TEXT.fullmatch(v):
        return None
    return Fraction(v)


class _Spent:
    """What one run has spent: (calls, total) per budget."""

    __slots__ = ("calls", "totals")

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.totals: dict[str, Fraction] = {}


class RunBudgetGuard(BaseGuard):
    """Budgets over a run's calls (see the module docstring); the strictest budget exceeded answers."""

    def __init__(self, budgets: Sequence[Budget | Mapping[str, Any]], *, name: str = "run-budget",
                 max_runs: int = 10_000) -> None:
        self.name = name
        self.budgets = named_tables(budgets, Budget, Budget.from_config, name, "budget", "budgets")
        self.max_runs = max_runs
        self._runs: RunMemory[_Spent] = RunMemory(_Spent, max_runs)
        self._lock = threading.Lock()  # a run's check reads and adds in one step

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> "RunBudgetGuard":
        """``{"budgets": [...], "name": ..., "max_runs": ...}`` (a ``[[guards]]`` table of type ``run-budget``)."""
        budgets = guard_tables(params, "run-budget", "budgets", {"budgets", "name", "max_runs"})
        return cls(budgets, name=str(params.get("name", "run-budget")), max_runs=int(params.get("max_runs", 10_000)))

    def check(self, context: Context, proposal: Any) -> Verdict:
        call = proposed_call(proposal, self.name)
        if isinstance(call, Verdict):
            return call
        mine = [b for b in self.budgets if b.counts(call.name)]
        if not mine:
            return Verdict.allow(self.name)
        with self._lock:
            spent = self._runs.get(context.run_id)  # RunEvicted for a run let go: never started over
            rows = [(b, *self._judge(b, call, spent)) for b in mine]
            found = [(b.decision, why) for b, _, why in rows if why is not None]
            decision = max((d for d, _ in found), default=None)
            if decision is None or decision is Decision.ESCALATE:  # allowed, or a human may let it run: counted
                for b, add, _ in rows:
                    spent.calls[b.name] = spent.calls.get(b.name, 0) + 1
                    spent.totals[b.name] = spent.totals.get(b.name, Fraction(0)) + (add or 0)
        if decision is None:
            return Verdict.allow(self.name)
        reasons = [r for d, r in found if d is decision]
        return Verdict(decision, reasons[0], self.name, details={"violations": [r for _, r in found]})

    @staticmethod
    def _judge(b: Budget, call: Any, spent: _Spent) -> tuple[Fraction | None, str | None]:
        """(what the call adds to the budget's total, None when unreadable; why it is over the budget, or None)."""
        add: Fraction | None = Fraction(0)
        if b.max_total is not None:
            amount = b.amount(call.arguments)
            if isinstance(amount, str):
                return None, f"budget {b.name!r}: {call.name} cannot be counted: {amount}"
            add = amount
            total = spent.totals.get(b.name, Fraction(0)) + amount
            if total > Fraction(b.max_total):
                return add, (f"budget {b.name!r}: {call.name} would bring the run's {b.argument} to {float(total):g} "
                             f"(at most {b.max_total:g})")
        calls = spent.calls.get(b.name, 0) + 1
        if b.max_calls is not None and calls > b.max_calls:
            return add, f"budget {b.name!r}: {call.name} would be call {calls} of the run (at most {b.max_calls})"
        return add, None

    def end_run(self, run_id: str) -> None:
        """Forget a finished run's spending."""
        self._runs.end_run(run_id)
