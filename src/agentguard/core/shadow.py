"""Shadow (observe-only) mode: a guard that decides and is audited, but never changes what happens.

A team runs a new guard beside production, sees what it *would* have refused, and only then enforces it.
:class:`Shadowed` is a stack in two parts:

- the **enforced part** (any guard, usually a :class:`~.guard.GuardStack` of the guards whose ``mode`` is
  ``"enforce"``): its verdict is the verdict, exactly as that guard alone gives it;
- the **shadow part** (guards whose ``mode`` is ``"shadow"``, or a whole stack run with ``shadow=True``):
  each is asked *after* the enforced verdict is final, under the same fail-closed runner, and what it
  would have done (every non-ALLOW verdict, flattened to the member guards of a shadow stack) is attached
  to the verdict as ``details["shadow"]``. The Pipeline copies that list into the audit record
  (``extra["shadow"]``), the service stores it (``decisions.shadow``) and ``agentguard report shadow``
  lists it by guard and rule.

Why this cannot weaken an enforcing guard (the tests check each point as a property against the stack
without its shadow guards):

- the enforced verdict is computed before any shadow guard runs and is returned unchanged except for the
  added ``details["shadow"]`` (a shadow guard's error, timeout, HALT or RunEvicted stays inside that list);
- a shadow guard sees a copy of ``context.metadata`` (it cannot plant facts an enforcing guard or a
  strategy reads later) and is invisible to :func:`~.runs.walk_guards` (``shadow_guards`` is not one of
  :data:`~.runs.INNER_ATTRS`), so it never settles a human approval and its ``strategy`` is never used;
- the run's HALT latch is set only by the Pipeline from the outcome, so a shadow HALT never halts a run
  (it is reported as ``would HALT``; later calls keep being decided by the enforced part).

One limit: the shadow part runs inside the guard call, so a *pipeline-wide* ``timeout_s`` covers it too (a
slow shadow guard can make that deadline fail closed: stricter, never weaker). Use the stack's per-guard
``timeout_s`` for shadow guards you do not trust to be fast.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from .errors import InputError
from .limits import time_limit
from .guard import ASK_EVERY, BaseGuard, Guard, _arun_many, _run_member, run_guard
from .runs import end_run
from .types import Context, Decision, Verdict

__all__ = ["MODES", "Shadowed", "shadow_entries", "shadow_report", "would_refuse"]

#: the values of a guard's (or a stack's) ``mode`` key
MODES = ("enforce", "shadow")


def _rule(v: Mapping[str, Any]) -> str:
    d = v.get("details") or {}
    for k in ("rule", "policy_id"):
        if isinstance(d, Mapping) and d.get(k):
            return str(d[k])
    return str(v.get("reason", ""))


def shadow_entries(v: Verdict, mode_guard: str = "") -> list[dict[str, Any]]:
    """The would-be entries of one shadow guard's verdict: each non-ALLOW verdict of its members (a stack's
    ``details['verdicts']`` trail) or of the guard itself, as ``{guard, decision, reason, rule, numbers}``."""
    trail = v.details.get("verdicts") if isinstance(v.details, Mapping) else None
    items: list[Mapping[str, Any]] = [t for t in trail if isinstance(t, Mapping)] if trail else [v.to_dict()]
    out = []
    for t in items:
        if t.get("decision") == Decision.ALLOW.name:
            continue
        out.append({"guard": str(t.get("guard") or mode_guard), "decision": str(t.get("decision")),
                    "reason": str(t.get("reason", "")), "rule": _rule(t),
                    "numbers": dict(t.get("numbers") or {})})
    return out


def _safe_entries(v: Verdict, name: str) -> list[dict[str, Any]]:
    """:func:`shadow_entries`, never raising: a verdict that cannot be read (numbers that are not numbers)
    is reported as such instead of failing the decision (a shadow guard must not change the outcome)."""
    try:
        return shadow_entries(v, name)
    except Exception as exc:  # noqa: BLE001
        return [{"guard": name, "decision": getattr(getattr(v, "decision", None), "name", "HALT"),
                 "reason": f"unreadable shadow verdict ({type(exc).__name__})", "rule": "", "numbers": {}}]


def would_refuse(entries: Iterable[Mapping[str, Any]]) -> bool:
    """True when a would-be entry refuses (REJECT, ESCALATE or HALT)."""
    return any(Decision.parse(e.get("decision", "HALT")).refuses for e in entries)


class Shadowed(BaseGuard):
    """``guard`` enforced, ``shadow_guards`` observed (see the module doc). ``guard=None`` runs the whole
    stack in shadow: the verdict is ALLOW. ``on_error`` and ``timeout_s`` apply to each shadow guard as in
    a :class:`~.guard.GuardStack`."""

    def __init__(self, guard: Guard | None, shadow_guards: Iterable[Guard], *, name: str = "stack",
                 on_error: Decision | str = Decision.HALT, timeout_s: float | None = None) -> None:
        self.guard = guard
        self.shadow_guards = list(shadow_guards)
        if guard is not None and not isinstance(guard, Guard):
            raise InputError(f"{guard!r} is not a Guard (needs name, check and acheck)")
        for g in self.shadow_guards:
            if not isinstance(g, Guard):
                raise InputError(f"{g!r} is not a Guard (needs name, check and acheck)")
        if not self.shadow_guards:
            raise InputError("Shadowed needs at least one shadow guard")
        self.name = name if guard is None else str(getattr(guard, "name", name))
        self.on_error = Decision.parse(on_error)
        if not self.on_error.refuses:
            raise InputError(f"on_error must block (REJECT, ESCALATE or HALT), not {self.on_error.name}")
        self.timeout_s = (None if timeout_s is None  # nan: no verdict would ever be late
                          else time_limit(timeout_s, f"{type(self).__name__} timeout_s", most=math.inf))
        self.strategy = getattr(guard, "strategy", None)  # the enforced stack's own strategy stays in force
        self._allow = Verdict.allow(self.name, "every guard is in shadow mode")

    def __repr__(self) -> str:
        return f"Shadowed({self.guard!r}, shadow=[{', '.join(repr(g) for g in self.shadow_guards)}])"

    def end_run(self, run_id: str) -> None:
        """Forget ``run_id`` in the enforced and the shadow guards."""
        if self.guard is not None:
            end_run(self.guard, run_id)
        for g in self.shadow_guards:
            end_run(g, run_id)

    @staticmethod
    def _isolated(context: Context) -> Context:
        return Context(run_id=context.run_id, trace=context.trace, state=context.state,
                       metadata=dict(context.metadata))

    def _attach(self, enforced: Verdict, observed: list[Verdict]) -> Verdict:
        entries = [e for g, v in zip(self.shadow_guards, observed) for e in _safe_entries(v, str(g.name))]
        if not entries:
            return enforced
        return Verdict(enforced.decision, enforced.reason, enforced.guard, enforced.numbers, enforced.action,
                       {**dict(enforced.details), "shadow": entries})

    def check(self, context: Context, proposal: Any) -> Verdict:
        v = self._allow if self.guard is None else run_guard(self.guard, context, proposal, on_error=self.on_error)
        ctx = self._isolated(context)
        every = ASK_EVERY.set(True)  # a shadow stack asks every member: the report lists each one's verdict
        try:
            observed = [_run_member(g, ctx, proposal, self.timeout_s, self.on_error) for g in self.shadow_guards]
        finally:
            ASK_EVERY.reset(every)
        return self._attach(v, observed)

    async def acheck(self, context: Context, proposal: Any) -> Verdict:
        if self.guard is None:
            v = self._allow
        else:
            v = (await _arun_many([self.guard], context, proposal, None, self.on_error, short_circuit=False))[0]
        every = ASK_EVERY.set(True)
        try:
            observed = await _arun_many(self.shadow_guards, self._isolated(context), proposal, self.timeout_s,
                                        self.on_error, short_circuit=False, traced=True)
        finally:
            ASK_EVERY.reset(every)
        return self._attach(v, observed)


def _field(rec: Any, key: str, default: Any = None) -> Any:
    return rec.get(key, default) if isinstance(rec, Mapping) else getattr(rec, key, default)


def shadow_report(records: Iterable[Any], *, since: float | None = None, until: float | None = None) -> dict[str, Any]:
    """What the shadow guards would have done in ``[since, until)`` (seconds since the epoch; None: open),
    from audit records (:class:`~.audit.AuditRecord`, their ``to_dict()`` lines, or the service's rows with a
    ``shadow`` field): every would-be entry with the decision that was enforced, and the counts by guard
    and rule (``would_refuse``: REJECT, ESCALATE or HALT; ``would_change``: MODIFY or RECOVER)."""
    entries: list[dict[str, Any]] = []
    decisions = 0
    for rec in records:
        t = float(_field(rec, "time", None) or _field(rec, "ts", 0.0) or 0.0)
        if (since is not None and t < since) or (until is not None and t >= until):
            continue
        decisions += 1
        extra = _field(rec, "extra") or {}
        found = _field(rec, "shadow") or (extra.get("shadow") if isinstance(extra, Mapping) else None) or []
        call = _field(rec, "call") or {}
        for e in found:
            if not isinstance(e, Mapping):
                continue
            entries.append({"time": t, "run_id": str(_field(rec, "run_id", "")),
                            "decision_id": str(_field(rec, "decision_id", "") or ""),
                            "tool": str(call.get("name", "")) if isinstance(call, Mapping) else "",
                            "enforced": str(_field(rec, "decision", "")), "would": str(e.get("decision", "")),
                            "guard": str(e.get("guard", "")), "rule": str(e.get("rule", "")),
                            "reason": str(e.get("reason", ""))})
    by: dict[tuple[str, str], dict[str, Any]] = {}
    for e in entries:
        row = by.setdefault((e["guard"], e["rule"]), {"guard": e["guard"], "rule": e["rule"], "would_refuse": 0,
                                                      "would_change": 0, "decisions": {}})
        row["would_refuse" if Decision.parse(e["would"]).refuses else "would_change"] += 1
        row["decisions"][e["would"]] = row["decisions"].get(e["would"], 0) + 1
    return {"since": since, "until": until, "decisions": decisions, "entries": entries,
            "would_refuse": sum(1 for e in entries if Decision.parse(e["would"]).refuses),
            "by_guard_rule": sorted(by.values(), key=lambda r: (-r["would_refuse"], r["guard"], r["rule"]))}
