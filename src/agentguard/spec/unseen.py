"""States never seen in training: the one unseen-state policy of agentguard.

A learned model knows only the abstract states that occurred in its training traces. At run time
the agent can reach another one; the ``unseen`` policy says what then happens. The same five names
mean the same thing in a spec file (:class:`~agentguard.spec.predicates.Abstraction`, key
``unseen``), in :class:`~agentguard.predictive.guard.ProactiveGuard` (``unseen=``) and in guard
configuration files:

* ``"nearest"``: the known state at least Hamming distance stands in for it (ties broken towards the
  highest risk, then the lowest index);
* ``"pessimistic"``: the known state of highest risk stands in for it;
* ``"alarm"``: the state is treated as unsafe (risk 1, ``P_safe = 0``): fail closed;
* ``"allow"``: the state is treated as safe (risk 0, ``P_safe = 1``): fail open;
* ``"error"``: :class:`~agentguard.core.errors.InputError` naming the state.

Only bit-vector states of the same width are candidates for ``nearest`` and ``pessimistic``
(terminal states such as ``finish`` never stand in for an unseen bit state); a state with no
comparable known state is treated as unsafe. With ``unsafe_bit`` (the position of a bit that marks
the state unsafe, e.g. ``-1`` for the last), a state with that bit set is unsafe whatever its
neighbours say and whatever the policy (``allow`` included; ``error`` still raises), and ``nearest``
prefers candidates that agree on that bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError

__all__ = ["DEFAULT_UNSEEN", "Resolution", "UNSEEN_POLICIES", "check_unseen_policy", "resolve_state", "resolve_unseen"]

#: the unseen-state policies, in the order the documentation lists them
UNSEEN_POLICIES = ("nearest", "pessimistic", "alarm", "allow", "error")

#: the policy wherever none is named (spec files, :class:`~agentguard.predictive.guard.ProactiveGuard`):
#: ``pessimistic``, so an unseen state never reads safer than the riskiest comparable state the model
#: knows (``nearest`` could read it as a safe neighbour one bit away); name ``nearest`` for the
#: Pro2Guard release's behaviour
DEFAULT_UNSEEN = "pessimistic"

#: the distance added to a candidate that disagrees on ``unsafe_bit`` (any larger than a width)
_OTHER_SIDE = 10**6


def check_unseen_policy(policy: str) -> str:
    """``policy`` itself when it is one of :data:`UNSEEN_POLICIES`; InputError otherwise."""
    if policy not in UNSEEN_POLICIES:
        raise InputError(f"unseen policy {policy!r}: expected one of {', '.join(UNSEEN_POLICIES)}")
    return policy


@dataclass(frozen=True)
class Resolution:
    """How an abstract state is resolved: ``index`` of the known state standing in for it, or
    ``index=None`` and ``unsafe`` (True: treat as unsafe; False: treat as safe), with the reason."""

    index: int | None
    unsafe: bool = False
    reason: str = ""


def _is_bits(s: str) -> bool:
    return bool(s) and not set(s) - {"0", "1"}


def resolve_unseen(
    bits: str,
    known: Sequence[str],
    policy: str = "nearest",
    risk: Sequence[float] | np.ndarray | None = None,
    *,
    unsafe_bit: int | None = None,
) -> Resolution:
    """Resolve abstract state ``bits`` against the ``known`` model states under ``policy``.

    A known state resolves to itself. ``risk`` (per known state; only its order matters) breaks the
    ties of ``nearest`` and is required by ``pessimistic``. See the module docstring for the policies.
    """
    try:
        return Resolution(list(known).index(bits))
    except ValueError:
        pass
    check_unseen_policy(policy)
    if policy == "error":
        raise InputError(f"unknown state {bits!r}: never seen in training")
    if unsafe_bit is not None and _is_bits(bits) and -len(bits) <= unsafe_bit < len(bits) and bits[unsafe_bit] == "1":
        # before any policy: a state whose own unsafe bit is set is unsafe, even under 'allow'
        return Resolution(None, True, "its unsafe bit is set")
    if policy == "alarm":
        return Resolution(None, True, "never seen in training (policy 'alarm')")
    if policy == "allow":
        return Resolution(None, False, "never seen in training (policy 'allow')")
    if policy == "pessimistic" and risk is None:
        raise InputError("the 'pessimistic' unseen-state policy needs per-state risks")
    cand = [i for i, s in enumerate(known) if len(s) == len(bits) and _is_bits(s)] if _is_bits(bits) else []
    if not cand:
        return Resolution(None, True, "the model has no comparable state")
    r = np.zeros(len(known)) if risk is None else np.asarray(risk, dtype=float)
    if policy == "pessimistic":
        return Resolution(max(cand, key=lambda i: (r[i], -i)))

    def dist(i: int) -> int:
        d = sum(a != b for a, b in zip(known[i], bits))
        if unsafe_bit is not None and -len(bits) <= unsafe_bit < len(bits) and known[i][unsafe_bit] != bits[unsafe_bit]:
            d += _OTHER_SIDE
        return d

    dists = {i: dist(i) for i in cand}
    return Resolution(min(cand, key=lambda i: (dists[i], -r[i], i)))


def resolve_state(
    bits: str,
    known: Sequence[str],
    policy: str = "nearest",
    risk: Sequence[float] | np.ndarray | None = None,
    *,
    unsafe_bit: int | None = None,
) -> int:
    """Index in ``known`` of the model state to use for abstract state ``bits`` (see
    :func:`resolve_unseen`); InputError when the policy names no state (``alarm``, ``allow``, or no
    comparable known state)."""
    res = resolve_unseen(bits, known, policy, risk, unsafe_bit=unsafe_bit)
    if res.index is None:
        raise InputError(f"unknown state {bits!r}: {res.reason}; no model state stands in for it")
    return res.index
