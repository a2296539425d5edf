"""Flow rules as Pro2Guard predicates: the bridge from :mod:`.flow` to a learnable abstraction.

Pro2Guard (../shared/papers, Section 3.2) abstracts each concrete state of a run into a bit-vector of
predicates, learns a DTMC over those bit-vectors and predicts the probability of reaching an ``unsafe``
state. For flow rules the concrete state is the run's history of calls (:func:`flow_state`: the calls so
far, their result labels and the run's facts) and, for each rule ``r`` of a :class:`~.flow.FlowGuard`,
:func:`flow_abstraction` defines two predicates:

- ``<r>_armed``: a trigger of ``r`` (an ``after`` call with the rule's label) is among the last
  ``within`` calls, i.e. a ``then`` call to a recipient outside the grant, proposed now, would violate ``r``;
- ``<r>_violated``: the latest call of the history violates ``r`` given the calls before it (exactly
  :meth:`~.flow.FlowRule.violation`, which the guard uses);

and ``unsafe`` is "some ``<r>_violated``". So a DTMC learned over these bits (``learn_dtmc(states,
abstraction)``) predicts, in every abstract state, the probability that the run goes on to violate a
flow rule, and :class:`~agentguard.predictive.ProactiveGuard` can refuse before the violating call is
proposed. Guarantee (property-tested over random call histories): ``<r>_violated`` holds on the state of
``calls + [c]`` exactly when the flow guard refuses ``c`` after ``calls`` for rule ``r``, and
``<r>_armed`` exactly when the rule's trigger condition holds.

Predicate names are the rule names made identifiers (``inbox-then-mail`` -> ``inbox_then_mail``).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..core.errors import InputError
from ..core.types import Context, ToolCall, Trace
from ..spec.expr import Expr
from ..spec.predicates import Abstraction, Predicate
from .flow import FlowGuard, FlowRule, history
from .rules import as_tool_call

__all__ = ["flow_abstraction", "flow_state", "flow_state_fn", "flow_states", "predicate_name"]


def predicate_name(rule: FlowRule) -> str:
    """The identifier form of a rule's name (letters, digits and ``_``; a leading digit gets ``r_``)."""
    s = re.sub(r"\W+", "_", rule.name).strip("_") or "rule"
    return ("r_" + s if s[0].isdigit() else s).lower()


def flow_state(guard: FlowGuard, calls: Sequence[Any], observations: Sequence[Any] | None = None,
               facts: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The concrete state after ``calls`` (ToolCalls or ``{"name", "arguments"}`` mappings): the calls,
    their result labels (from the guard's ``trusted_tools`` or labeler) and the run's facts."""
    typed = []
    for c in calls:
        t = as_tool_call(c)
        if t is None:
            raise InputError(f"flow_state: {c!r} is not a tool call")
        typed.append(t)
    obs = list(observations) if observations is not None else [None] * len(typed)
    if len(obs) != len(typed):
        raise InputError("flow_state: one observation per call")
    return {"calls": typed, "labels": [guard.label(c, o) for c, o in zip(typed, obs)], "facts": dict(facts or {})}


def flow_states(guard: FlowGuard, trace: Trace | Iterable[Any], facts: Mapping[str, Any] | None = None
                ) -> list[dict[str, Any]]:
    """The state after each call of a recorded run (its trace's tool-call steps), in order: the sequence
    a DTMC learner reads."""
    steps = trace.steps if isinstance(trace, Trace) else list(trace)
    past = history(steps)
    calls, obs = [c for c, _ in past], [o for _, o in past]
    return [flow_state(guard, calls[:i + 1], obs[:i + 1], facts) for i in range(len(calls))]


def flow_state_fn(guard: FlowGuard) -> Callable[[Context, Any], dict[str, Any]]:
    """A ``Pipeline(state_fn=...)``: the flow state of the run so far (its recorded calls and facts), so a
    :class:`~agentguard.predictive.ProactiveGuard` over a DTMC learned with :func:`flow_abstraction` (its
    ``abstraction=flow_abstraction(g).abstract``) judges each proposal by the risk of the state it is made in."""
    def state(context: Context, proposal: Any) -> dict[str, Any]:
        past = history(context.trace.steps)
        return flow_state(guard, [c for c, _ in past], [o for _, o in past], context.metadata)
    return state


def _armed(rule: FlowRule) -> Any:
    def test(state: Mapping[str, Any]) -> bool:
        return rule.armed(state["calls"], state["labels"]) is not None
    return test


def _violated(rule: FlowRule) -> Any:
    def test(state: Mapping[str, Any]) -> bool:
        calls: list[ToolCall] = state["calls"]
        if not calls:
            return False
        return rule.violation(calls[:-1], state["labels"][:-1], calls[-1], state.get("facts") or {}) is not None
    return test


def flow_abstraction(guard: FlowGuard, *, unseen: str = "pessimistic", terminal: str | None = None) -> Abstraction:
    """The Pro2Guard abstraction of ``guard``'s rules (see the module docstring). ``unseen``: what an
    abstract state never seen in training stands for (default ``pessimistic``: the riskiest known state)."""
    preds: list[Predicate] = []
    names: list[str] = []
    for r in guard.rules:
        base = predicate_name(r)
        if base in names:
            raise InputError(f"flow rules {r.name!r} and another have the same predicate name {base!r}")
        names.append(base)
        preds += [Predicate.of(f"{base}_armed", _armed(r)), Predicate.of(f"{base}_violated", _violated(r))]
    unsafe = " or ".join(f"{n}_violated" for n in names)
    return Abstraction(preds, unsafe=Expr(unsafe), unseen=unseen, terminal=terminal, name=f"flow rules of {guard.name}")
