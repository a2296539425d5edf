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

from ..core.errors import InputError
from .linsolve import BAND_FLOPS, DIRECT_MAX, ITER_MAX, ITER_TOL
from .reachability import (
    SolveInfo,
    bounded_until,
    error_bound,
    globally,
    last_solve_info,
    next_,
    prob0,
    prob1,
    reach,
    until,
)
from .result import CheckResult, compare

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
    "until",
]


def check(model: DTMC, prop: str | Property, engine: str = "native", method: str = "auto") -> CheckResult:
    """Check a PCTL property on every state of ``model``; ``engine`` is 'native' or 'storm'."""
    from ..spec.pctl import Property, parse_property

    p = parse_property(prop) if isinstance(prop, str) else prop
    if not isinstance(p, Property):
        raise InputError(f"expected a property or its text, got {type(prop).__name__}")
    if engine == "storm":
        from .storm_engine import check_storm

        return check_storm(model, p)
    if engine != "native":
        raise InputError(f"unknown engine {engine!r} (use native or storm)")
    t0 = time.perf_counter()
    path = p.path
    rhs = path.right.evaluate(model)
    lhs = path.left.evaluate(model) if path.left is not None else None
    P = model.matrix
    info: dict[str, Any] = {}
    if path.op == "X":
        values = next_(P, rhs)
    elif path.op == "G":
        if path.bound is None:
            values = globally(P, rhs, method)
        else:
            values = 1.0 - bounded_until(P, None, ~rhs, path.bound)
    else:  # F or U
        if path.bound is None:
            values = until(P, lhs, rhs, method)
            li = last_solve_info()
            info = {"yes": li.n_yes, "no": li.n_no, "maybe": li.n_maybe, "solver": li.method,
                    "residual": li.residual}
        else:
            values = bounded_until(P, lhs, rhs, path.bound)
    seconds = time.perf_counter() - t0
    sat = compare(values, p.comparison, p.threshold) if not p.is_query else None  # type: ignore[arg-type]
    res = CheckResult(values, float(values[model.initial]), seconds, str(p), "native", sat, info)
    res._initial_index = model.initial
    return res
