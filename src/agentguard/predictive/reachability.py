"""Reachability on a DTMC, for every state at once: graph precomputation and the PCTL path operators.

Prob0/Prob1 (Baier & Katoen, *Principles of Model Checking*, section 10.1, as in PRISM) find the
states with probability exactly 0 or 1 by backward BFS; the remaining states S? need one linear
solve (:mod:`agentguard.predictive.linsolve`). :func:`until`, :func:`reach`, :func:`globally`,
:func:`bounded_until` and :func:`next_` take a transition matrix and boolean state masks;
:func:`error_bound` certifies a computed vector. See :mod:`agentguard.predictive.checker` for the
guarantees and for checking a parsed PCTL property on a model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph
from scipy.sparse import linalg as spla

from ..core.errors import InputError, ModelError
from .linsolve import DIRECT_MAX, ITER_MAX, bicgstab, matvec_fn, solve_full, solve_system, system_matvec

__all__ = [
    "SolveInfo",
    "bounded_until",
    "error_bound",
    "globally",
    "interval_until",
    "last_solve_info",
    "next_",
    "prob0",
    "prob1",
    "reach",
    "until",
]


@dataclass
class SolveInfo:
    """How the last linear system was solved (for reports and benchmarks)."""

    n_yes: int = 0
    n_no: int = 0
    n_maybe: int = 0
    method: str = "none"
    residual: float = 0.0


_last_info = SolveInfo()


def last_solve_info() -> SolveInfo:
    """Details of the most recent :func:`until` call in this process (for benchmarks)."""
    return _last_info


# --- helpers -----------------------------------------------------------------------------------
def _as_csr(P) -> sp.csr_matrix:
    if type(P) is sp.csr_matrix and P.dtype == np.float64 and P.shape[0] == P.shape[1]:
        return P  # already in shape: no copy, no conversion
    if not sp.issparse(P):
        P = sp.csr_matrix(np.asarray(P, dtype=np.float64))
    P = P.tocsr()
    if P.dtype != np.float64:
        P = P.astype(np.float64)
    if P.shape[0] != P.shape[1]:
        raise ModelError(f"transition matrix is not square: {P.shape}")
    return P


def _as_mask(v, n: int, what: str) -> np.ndarray:
    if v is None:
        return np.ones(n, dtype=bool)
    a = np.asarray(v)
    if a.dtype != bool:
        raise InputError(f"{what} must be a boolean vector, got dtype {a.dtype}")
    if a.shape != (n,):
        raise InputError(f"{what} has shape {a.shape}, expected ({n},)")
    return a



#: frontier (matrix-vector) BFS steps before switching to the C-level BFS of scipy.sparse.csgraph
FRONTIER_STEPS = 32


class _Graph:
    """The transposed structure of ``P`` (CSC: column j lists the predecessors of j) and its COO
    edge list, built at most once per :func:`until` call and shared by Prob0 and Prob1."""

    __slots__ = ("P", "_csc", "_coo", "deep")

    def __init__(self, P: sp.csr_matrix) -> None:
        self.P, self._csc, self._coo, self.deep = P, None, None, False

    def csc(self):
        if self._csc is None:
            T = self.P.tocsc()
            self._csc = (T.indptr, T.indices, T.data)
        return self._csc

    def coo(self):
        if self._coo is None:
            c = self.P.tocoo()
            pos = c.data > 0
            self._coo = (c.row[pos], c.col[pos])
        return self._coo


def _backward_reach(g: _Graph, targets: np.ndarray, through: np.ndarray, frontier_steps: int = FRONTIER_STEPS
                    ) -> np.ndarray:
    """States that reach ``targets`` along paths whose states before the target all lie in ``through``.

    Targets themselves are included. First up to ``frontier_steps`` vectorised BFS layers (a state is
    a predecessor of the frontier iff it has a positive entry in a frontier column); this finishes
    shallow graphs (random/expander-like: depth ~ log n) with no graph construction. Deeper graphs
    (chains) then get one C-level BFS on the reversed graph restricted to edges leaving ``through``
    states, from a virtual source linked to every state reached so far; ``g.deep`` records that.
    """
    if not targets.any():
        return targets.copy()
    n = targets.size
    reached = targets.copy()
    allowed = through & ~targets
    if frontier_steps:
        indptr, indices, data = g.csc()
        frontier = np.flatnonzero(targets)
    flat, count = 0, int(frontier.size) if frontier_steps else 0
    for _ in range(frontier_steps):
        # a frontier that stops growing while little is reached is a long path (chain, grid): the C BFS
        # below finishes it at once, where more vectorised layers would cost one numpy pass per state
        flat = flat + 1 if frontier.size <= 2 else 0
        if flat >= 3 and count * 8 < n:
            break
        starts, lens = indptr[frontier], indptr[frontier + 1] - indptr[frontier]
        total = int(lens.sum())
        if total == 0:
            return reached
        offs = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(total)
        pred = indices[offs[data[offs] > 0]]
        pred = pred[allowed[pred] & ~reached[pred]]
        if pred.size == 0:
            return reached
        if pred.size * 16 < n:  # few new states: sort them; many: one pass over a mask is cheaper
            frontier = np.unique(pred)
            reached[frontier] = True
        else:
            new = np.zeros(n, dtype=bool)
            new[pred] = True
            frontier = np.flatnonzero(new)
            reached |= new
        count += int(frontier.size)
    g.deep = True  # more than frontier_steps layers: a long-path graph (chain, grid), see solve_full
    return _bfs_reach(g, reached, through)


def _bfs_reach(g: _Graph, targets: np.ndarray, through: np.ndarray) -> np.ndarray:
    """:func:`_backward_reach` by one :func:`scipy.sparse.csgraph.breadth_first_order` call."""
    n = targets.size
    row, col = g.coo()
    keep = through[row] & ~targets[row]
    src = np.concatenate([col[keep], np.full(int(targets.sum()), n)])
    dst = np.concatenate([row[keep], np.flatnonzero(targets)])
    graph = sp.csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n + 1, n + 1))
    order = csgraph.breadth_first_order(graph, n, directed=True, return_predecessors=False)
    out = np.zeros(n + 1, dtype=bool)
    out[order] = True
    return out[:n]


def _prob01(P: sp.csr_matrix, phi1: np.ndarray, phi2: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Prob0 and Prob1 on validated input sharing one graph; the third value says whether the graph
    is deep (Prob0 needed more than ``FRONTIER_STEPS`` layers; Prob1 then goes straight to the C BFS)."""
    g = _Graph(P)
    no = ~_backward_reach(g, phi2, phi1)
    deep = g.deep
    yes = ~_backward_reach(g, no, phi1 & ~phi2, 0 if deep else FRONTIER_STEPS)
    return no, yes, deep


def prob0(P, phi1, phi2) -> np.ndarray:
    """States where ``P[phi1 U phi2] = 0`` (Algorithm Prob0, Baier & Katoen 10.1): the complement of
    the backward closure of ``phi2`` through ``phi1`` states."""
    P = _as_csr(P)
    n = P.shape[0]
    phi1, phi2 = _as_mask(phi1, n, "phi1"), _as_mask(phi2, n, "phi2")
    return ~_backward_reach(_Graph(P), phi2, phi1)


def prob1(P, phi1, phi2, no: np.ndarray | None = None) -> np.ndarray:
    """States where ``P[phi1 U phi2] = 1`` (Algorithm Prob1): those that cannot reach a Prob0 state
    through ``phi1 & !phi2`` states."""
    P = _as_csr(P)
    n = P.shape[0]
    phi1, phi2 = _as_mask(phi1, n, "phi1"), _as_mask(phi2, n, "phi2")
    if no is None:
        return _prob01(P, phi1, phi2)[1]
    return ~_backward_reach(_Graph(P), _as_mask(no, n, "no"), phi1 & ~phi2)


def error_bound(P, phi1, phi2, x: np.ndarray) -> float:
    """A certified bound on ``max|x - P[phi1 U phi2]|`` for a computed vector ``x``.

    On the S? states the exact solution x* satisfies ``M x* = b`` with ``M = I - A`` a non-singular
    M-matrix, so ``M^{-1} >= 0`` and ``|x - x*| <= M^{-1} |r| <= ||r||_inf * M^{-1} 1`` with
    ``r = M x - b``; ``M^{-1} 1`` (expected steps spent in S?) is itself solved and checked, and a
    10% margin covers its own error. Prob0/Prob1 states are exact (graph algorithms)."""
    P = _as_csr(P)
    n = P.shape[0]
    phi1, phi2 = _as_mask(phi1, n, "phi1"), _as_mask(phi2, n, "phi2")
    no, yes, _ = _prob01(P, phi1, phi2)
    idx = np.flatnonzero(~(no | yes))
    if idx.size == 0:
        return float(np.max(np.abs(x[yes] - 1.0), initial=0.0) + np.max(np.abs(x[no]), initial=0.0))
    rows = P[idx]
    A = rows[:, idx].tocsr()
    b = np.asarray(rows[:, yes].sum(axis=1)).ravel()
    mv = system_matvec(A)
    res = np.empty(idx.size)
    mv(np.ascontiguousarray(x[idx], dtype=np.float64), res)
    r = float(np.abs(res - b).max())
    ones = np.ones(idx.size)
    z, ok = bicgstab(mv, ones, ones.copy(), 1e-10, ITER_MAX)
    if ok:
        mv(z, res)
    if not (ok and np.all(np.isfinite(z)) and float(np.abs(res - ones).max()) < 1e-6):
        z = spla.splu((sp.identity(idx.size, format="csc") - A).tocsc()).solve(ones)
    return 1.1 * r * float(np.abs(z).max())


# --- the public algorithms ---------------------------------------------------------------------
def until(P, phi1, phi2, method: str = "auto") -> np.ndarray:
    """``P[phi1 U phi2]`` for every state (``phi1=None`` means true): Prob0/Prob1 then one solve."""
    global _last_info
    P = _without_self_loops(_as_csr(P))
    n = P.shape[0]
    phi1, phi2 = _as_mask(phi1, n, "phi1"), _as_mask(phi2, n, "phi2")
    no, yes, deep = _prob01(P, phi1, phi2)
    maybe = ~(no | yes)
    x = np.zeros(n)
    x[yes] = 1.0
    info = SolveInfo(int(yes.sum()), int(no.sum()), int(maybe.sum()))
    m = int(maybe.sum())
    if m:
        if method == "direct" or (method == "auto" and m <= DIRECT_MAX):
            idx = np.flatnonzero(maybe)
            rows = P[idx]
            A = rows[:, idx]
            b = np.asarray(rows[:, yes].sum(axis=1)).ravel()
            x[idx], info.method, info.residual = solve_system(A.tocsr(), b, "direct")
        elif method == "iterative":
            x, info.method, info.residual = solve_full(P, yes, maybe, False)
        else:
            x, info.method, info.residual = solve_full(P, yes, maybe, deep)
    _last_info = info
    return x


def _without_self_loops(P: sp.csr_matrix) -> sp.csr_matrix:
    """``P`` with each self-loop ``0 < P[i, i]`` of a state that can leave removed and the row's other
    entries divided by their sum ``s_i`` (the jump chain: the same unbounded-until probabilities).

    Why: the solve divides by ``1 - P[i, i]`` and a near-absorbing loop loses it to cancellation:
    with ``P[i, i] = 1 - 1e-12`` (the float ``0.999999999999000022``) and ``P[i, j] = 1e-12``,
    ``1 - P[i, i]`` is ``0.99998e-12`` and ``P[F ...]`` came out 0.3750083 for the exact 0.375 (found
    in session 21 against exact rational elimination); ``s_i`` holds the leaving mass without it."""
    d = P.diagonal()
    if not np.any((d > 0) & (d < 1)):
        return P
    off = sp.csr_matrix(P - sp.diags(d))
    off.eliminate_zeros()
    s = np.asarray(off.sum(axis=1)).ravel()  # the leaving mass, summed without the loop
    fix = (d > 0) & (s > 0)
    scale = np.ones(d.size)
    scale[fix] = 1.0 / s[fix]
    out = sp.csr_matrix(sp.diags(scale) @ off + sp.diags(np.where(fix, 0.0, d)))  # absorbing loops stay
    out.eliminate_zeros()
    return out


def reach(P, target, method: str = "auto") -> np.ndarray:
    """``P[F target]`` for every state."""
    return until(P, None, target, method)


def globally(P, phi, method: str = "auto") -> np.ndarray:
    """``P[G phi] = 1 - P[F !phi]`` for every state."""
    P = _as_csr(P)
    phi = _as_mask(phi, P.shape[0], "phi")
    return 1.0 - reach(P, ~phi, method)


#: bounds above this many steps are computed by squaring (small live sets) or stop at a fixed point
SQUARING_MIN_STEPS = 64
#: live sets up to this many states may use dense repeated squaring for huge bounds
SQUARING_MAX_STATES = 1500


def bounded_until(P, phi1, phi2, k: int) -> np.ndarray:
    """``P[phi1 U<=k phi2]`` for every state.

    ``x_0 = [phi2]``; ``x_{i+1} = [phi2] + [phi1 & !phi2 & !S_no] * (P x_i)``; the Prob0 states are
    fixed at 0 (they cannot reach phi2 at all). ``phi1=None`` means true, i.e. ``F<=k phi2``.
    Time does not grow with huge ``k``: the iteration stops at an exact fixed point
    (``x_{i+1} == x_i`` bit for bit: every later iterate is the same), and for a live set of at most
    ``SQUARING_MAX_STATES`` states and ``k`` above the live count, the step is an affine map
    ``x -> A x + c`` raised to the ``k``-th power by repeated squaring (O(m^3 log k)).
    """
    P = _as_csr(P)
    n = P.shape[0]
    if int(k) != k or k < 0:
        raise InputError(f"step bound must be a non-negative integer, got {k!r}")
    k = int(k)
    phi1, phi2 = _as_mask(phi1, n, "phi1"), _as_mask(phi2, n, "phi2")
    live = phi1 & ~phi2 & ~prob0(P, phi1, phi2)
    x = phi2.astype(np.float64)
    idx = np.flatnonzero(live)
    if idx.size == 0 or k == 0:
        return x
    R = P[idx]  # only the live rows are ever updated
    if k >= SQUARING_MIN_STEPS and idx.size <= SQUARING_MAX_STATES and k > idx.size:
        x[idx] = _affine_power(R[:, idx].toarray(), R @ x - R[:, idx] @ x[idx], x[idx], k)
        return x
    mv = matvec_fn(R)
    for _ in range(k):
        new = mv(x)
        if np.array_equal(new, x[idx]):
            break  # exact fixed point: all further iterates are identical
        x[idx] = new
    return x


def _affine_power(A: np.ndarray, c: np.ndarray, x0: np.ndarray, k: int) -> np.ndarray:
    """``f^k(x0)`` for ``f(x) = A x + c`` by squaring the augmented matrix ``[[A, c], [0, 1]]``."""
    m = A.shape[0]
    M = np.zeros((m + 1, m + 1))
    M[:m, :m] = A
    M[:m, m] = c
    M[m, m] = 1.0
    result = np.eye(m + 1)
    while k:
        if k & 1:
            result = M @ result
        k >>= 1
        if k:
            M = M @ M
    return np.clip(result[:m, :m] @ x0 + result[:m, m], 0.0, 1.0)


def interval_until(P, phi1, phi2, lo: int, hi: int | None, method: str = "auto") -> np.ndarray:
    """``P[phi1 U[lo,hi] phi2]``: phi2 at some step i with lo <= i <= hi (``hi=None``: unbounded) and
    phi1 at every step before i. ``y = P[phi1 U<=hi-lo phi2]`` (or unbounded until), then ``lo``
    steps that need phi1: ``y <- [phi1] * (P y)`` (phi2 does not count before step lo)."""
    P = _as_csr(P)
    n = P.shape[0]
    phi1 = _as_mask(phi1, n, "phi1")
    y = until(P, phi1, phi2, method) if hi is None else bounded_until(P, phi1, phi2, hi - lo)
    if lo <= 0:
        return y
    w = phi1.astype(np.float64)
    mv = matvec_fn(P)
    if lo >= SQUARING_MIN_STEPS and n <= SQUARING_MAX_STATES:
        A = P.multiply(w[:, None]).toarray()
        return _affine_power(A, np.zeros(n), y, lo)
    for _ in range(lo):
        new = w * mv(y)
        if np.array_equal(new, y):
            break
        y = new
    return y


def next_(P, phi) -> np.ndarray:
    """``P[X phi]`` for every state: one matrix-vector product."""
    P = _as_csr(P)
    return P @ _as_mask(phi, P.shape[0], "phi").astype(np.float64)


