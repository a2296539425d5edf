"""The native probabilistic model checker: PCTL reachability on a DTMC, for every state at once.

Algorithm (Baier & Katoen, *Principles of Model Checking*, section 10.1, as implemented in PRISM):

1. Graph precomputation, no arithmetic. For ``P[phi1 U phi2]``:
   ``S_no``  = states that cannot reach ``phi2`` through ``phi1`` states (Prob0, backward BFS from
   ``phi2``), ``S_yes`` = states that cannot reach ``S_no`` through ``phi1 & !phi2`` states (Prob1,
   backward BFS from ``S_no``). Both BFS run in C through :func:`scipy.sparse.csgraph.breadth_first_order`
   on the reversed, restricted graph with one virtual source, O(n + nnz).
2. One sparse linear solve for the remaining states ``S?``: ``(I - A) x = b`` with ``A = P[S?, S?]`` and
   ``b = P[S?, S_yes] 1``. ``I - A`` is a non-singular M-matrix because every ``S?`` state reaches
   ``S_no`` with positive probability. Small systems (<= ``DIRECT_MAX`` unknowns) use a direct sparse
   LU (SuperLU via :func:`splu`, plus one refinement step); larger ones a Krylov solver (BiCGSTAB,
   then GMRES) whose true residual is checked, falling back to LU if it is not below ``ITER_TOL``
   (see :func:`_solve` for why). :func:`error_bound` turns a residual into a certified error bound.
3. Bounded until ``P[phi1 U<=k phi2]``: k sparse matrix-vector products (exact up to rounding).

Guarantee: for a valid DTMC the returned vectors equal the exact probabilities up to floating-point
rounding of the linear solve (direct) or a residual of at most 1e-12 (iterative; the error is then
at most ``1e-12 * max expected steps`` in S?, which :func:`error_bound` certifies). Checked against
exact rational arithmetic and Storm's exact mode in the tests (|error| < 1e-9). ``G phi`` is
``1 - P[F !phi]``.

The code lives in small modules: :mod:`~agentguard.predictive.reachability` (Prob0/Prob1 and the
path operators), :mod:`~agentguard.predictive.linsolve` (the linear solve),
:mod:`~agentguard.predictive.result` (:class:`CheckResult`); this module checks a parsed PCTL
property on a model (:func:`check`) and re-exports them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import InputError, ModelError
from .linsolve import BAND_FLOPS, DIRECT_MAX, ITER_MAX, ITER_TOL
from .reachability import (
    SolveInfo,
    bounded_until,
    error_bound,
    globally,
    interval_until,
    last_solve_info,
    next_,
    prob0,
    prob1,
    reach,
    until,
)
from .result import CheckResult, compare, filter_value
from .rewards import cumulative_reward, expected_reward, long_run

if TYPE_CHECKING:  # pragma: no cover
    from ..spec.pctl import Property
    from .dtmc import DTMC

__all__ = [
    "CheckResult",
    "bounded_until",
    "check",
    "error_bound",
    "globally",
    "next_",
    "prob0",
    "prob1",
    "reach",
    "sat_states",
    "until",
]


def check(model: DTMC, prop: str | Property, engine: str = "native", method: str = "auto") -> CheckResult:
    """Check a PCTL property on every state of ``model``; ``engine`` is 'native' or 'storm'.

    ``P`` (all path operators, bounds ``<=k``, ``[a,b]``, ``>=a``), ``R=? [F phi]`` / ``R=? [C<=k]``
    (the model's reward structures), ``S=? [phi]`` (long-run), nested ``P~p`` in state formulas and
    ``filter(op, prop, states)``; constants of the model (``meta['constants']``) may be used.
    The model is validated first (:meth:`DTMC.validate`: a ModelError when it is not a DTMC)."""
    from ..spec.pctl import Property, parse_property

    model.validate()  # a matrix that is not stochastic has no probabilities to check

    p = parse_property(prop, model.meta.get("constants")) if isinstance(prop, str) else prop
    if not isinstance(p, Property):
        raise InputError(f"expected a property or its text, got {type(prop).__name__}")
    if engine == "storm":
        from .storm_engine import check_storm

        return check_storm(model, p)
    if engine != "native":
        raise InputError(f"unknown engine {engine!r} (use native or storm)")
    t0 = time.perf_counter()
    values, info = _values(model, p, method)
    sat = compare(values, p.comparison, p.threshold) if not p.is_query else None  # type: ignore[arg-type]
    initial = float(values[model.initial])
    if p.filter is not None:
        initial = _filter(model, p, values, sat, method)
        info["filter"] = p.filter[0]
    seconds = time.perf_counter() - t0
    res = CheckResult(values, initial, seconds, str(p), "native", sat, info)
    res._initial_index = model.initial
    return res


def sat_states(model: DTMC, f, method: str = "auto") -> np.ndarray:
    """The states satisfying state formula ``f``, nested ``P~p``/``R~r`` atoms checked first."""
    from ..spec.pctl_state import nested_atoms

    extra = {}
    for atom in nested_atoms(f):
        vals, _ = _values(model, atom.prop, method)
        extra[atom.key] = compare(vals, atom.prop.comparison, atom.prop.threshold)
    return f.evaluate(model, extra)


def _values(model: DTMC, p, method: str) -> tuple[np.ndarray, dict[str, Any]]:
    P = model.matrix
    info: dict[str, Any] = {}
    if p.kind == "S":
        return long_run(P, sat_states(model, p.state, method)), info
    path = p.path
    if p.kind == "R":
        r = _reward(model, p.reward)
        if path.op == "C":
            return cumulative_reward(P, r, path.bound), info
        return expected_reward(P, sat_states(model, path.right, method), r, method), info
    rhs = sat_states(model, path.right, method)
    lhs = sat_states(model, path.left, method) if path.left is not None else None
    if path.op == "X":
        return next_(P, rhs), info
    if path.op == "G":
        if path.lower:
            return 1.0 - interval_until(P, None, ~rhs, path.lower, path.bound, method), info
        if path.bound is None:
            return globally(P, rhs, method), info
        return 1.0 - bounded_until(P, None, ~rhs, path.bound), info
    if path.lower:
        return interval_until(P, lhs, rhs, path.lower, path.bound, method), info
    if path.bound is not None:
        return bounded_until(P, lhs, rhs, path.bound), info
    values = until(P, lhs, rhs, method)
    li = last_solve_info()
    return values, {"yes": li.n_yes, "no": li.n_no, "maybe": li.n_maybe, "solver": li.method,
                    "residual": li.residual}


def _reward(model: DTMC, name: str | None) -> np.ndarray:
    rw = model.rewards
    if name is not None:
        if name not in rw:
            raise ModelError(f"unknown reward structure {name!r} (model has: "
                             f"{', '.join(repr(k) for k in rw) or 'none'})")
        return rw[name]
    if "" in rw:
        return rw[""]
    if len(rw) == 1:
        return next(iter(rw.values()))
    if not rw:
        raise ModelError("the model has no reward structure (add a rewards block to the PRISM file)")
    raise ModelError(f"the model has several reward structures ({', '.join(repr(k) for k in rw)}): "
                     'name one, R{"name"}=? [...]')


def _filter(model: DTMC, p, values: np.ndarray, sat: np.ndarray | None, method: str) -> float:
    """PRISM's ``filter(op, prop, states)`` over the selected states (all states if none given)."""
    op, states = p.filter
    sel = sat_states(model, states, method) if states is not None else np.ones(model.n, dtype=bool)
    if not sel.any():
        raise ModelError(f"the filter states of {p} are empty")
    return filter_value(op, values, sat, sel, str(p))
