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
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph
from scipy.sparse import linalg as spla

from ..core.errors import InputError, ModelError

if TYPE_CHECKING:  # pragma: no cover
    from ..spec.pctl import Property
    from .dtmc import DTMC

__all__ = [
    "CheckResult",
    "SolveInfo",
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

#: systems up to this many unknowns are always solved directly (LU is exact and fast there)
DIRECT_MAX = 300
#: relative residual (max-norm) the iterative path must reach, otherwise the direct solve is used
ITER_TOL = 1e-12
#: iteration cap of BiCGSTAB (random graphs need ~30) and of GMRES before falling back to LU
ITER_MAX = 300
#: after a Krylov failure, systems whose banded LU costs at most this many flops go straight to LU
BAND_FLOPS = 1e8


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


try:  # the C kernel behind ``csr @ vector``, called directly to skip ~80 us of Python dispatch per call
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
except ImportError:  # pragma: no cover - private scipy API; fall back to the public operator
    _csr_matvec = None


def _matvec_fn(A: sp.csr_matrix):
    """``v -> A @ v`` for a CSR matrix, with the least overhead available."""
    if _csr_matvec is None:
        return lambda v: A @ v
    n_row, n_col = A.shape
    indptr, indices, data = A.indptr, A.indices, A.data

    def mv(v: np.ndarray) -> np.ndarray:
        y = np.zeros(n_row)
        _csr_matvec(n_row, n_col, indptr, indices, data, np.ascontiguousarray(v, dtype=np.float64), y)
        return y

    return mv


#: frontier (matrix-vector) BFS steps before switching to the C-level BFS of scipy.sparse.csgraph
FRONTIER_STEPS = 32


def _backward_reach(P: sp.csr_matrix, targets: np.ndarray, through: np.ndarray) -> np.ndarray:
    """States that reach ``targets`` along paths whose states before the target all lie in ``through``.

    Targets themselves are included. First up to ``FRONTIER_STEPS`` vectorised BFS layers (a state is
    a predecessor of the frontier iff ``(P @ 1_frontier) > 0``, exact since entries are positive);
    this finishes shallow graphs (random/expander-like: depth ~ log n) with no graph construction.
    Deeper graphs (chains) then get one C-level BFS on the reversed graph restricted to edges leaving
    ``through`` states, from a virtual source linked to every state reached so far.
    """
    if not targets.any():
        return targets.copy()
    reached = targets.copy()
    allowed = through & ~targets
    frontier = targets
    mv = _matvec_fn(P)
    for _ in range(FRONTIER_STEPS):
        new = (mv(frontier.astype(np.float64)) > 0) & allowed & ~reached
        if not new.any():
            return reached
        reached |= new
        frontier = new
    return _bfs_reach(P, reached, through)


def _bfs_reach(P: sp.csr_matrix, targets: np.ndarray, through: np.ndarray) -> np.ndarray:
    """:func:`_backward_reach` by one :func:`scipy.sparse.csgraph.breadth_first_order` call."""
    n = P.shape[0]
    coo = P.tocoo()
    keep = (coo.data > 0) & through[coo.row] & ~targets[coo.row]
    src = np.concatenate([coo.col[keep], np.full(int(targets.sum()), n)])
    dst = np.concatenate([coo.row[keep], np.flatnonzero(targets)])
    g = sp.csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n + 1, n + 1))
    order = csgraph.breadth_first_order(g, n, directed=True, return_predecessors=False)
    out = np.zeros(n + 1, dtype=bool)
    out[order] = True
    return out[:n]


def prob0(P, phi1, phi2) -> np.ndarray:
    """States where ``P[phi1 U phi2] = 0`` (Algorithm Prob0, Baier & Katoen 10.1): the complement of
    the backward closure of ``phi2`` through ``phi1`` states."""
    P = _as_csr(P)
    n = P.shape[0]
    phi1, phi2 = _as_mask(phi1, n, "phi1"), _as_mask(phi2, n, "phi2")
    return ~_backward_reach(P, phi2, phi1)


def prob1(P, phi1, phi2, no: np.ndarray | None = None) -> np.ndarray:
    """States where ``P[phi1 U phi2] = 1`` (Algorithm Prob1): those that cannot reach a Prob0 state
    through ``phi1 & !phi2`` states."""
    P = _as_csr(P)
    n = P.shape[0]
    phi1, phi2 = _as_mask(phi1, n, "phi1"), _as_mask(phi2, n, "phi2")
    if no is None:
        no = prob0(P, phi1, phi2)
    return ~_backward_reach(P, no, phi1 & ~phi2)


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    # einsum: single-threaded and allocation-free; BLAS ddot was 5x slower on a busy 2-core machine
    return float(np.einsum("i,i->", a, b))


def _bicgstab(matvec, b: np.ndarray, x0: np.ndarray, tol: float, maxiter: int):
    """BiCGSTAB (van der Vorst 1992) as a lean numpy loop with preallocated buffers and in-place
    vector updates (scipy's loop has ~0.3 ms/iteration overhead and allocates every vector).

    ``matvec(v, out)`` writes the system matrix times ``v`` into ``out``. Stops when the recurrence
    residual satisfies ``||r||_2 <= tol * max|b|`` (which implies ``max|r| <= tol * max|b|``);
    returns (x, converged). Callers re-check the true residual."""
    x = x0.copy()
    r = np.empty_like(b)
    matvec(x, r)
    np.subtract(b, r, out=r)
    rhat = r.copy()
    bmax = float(np.abs(b).max()) or 1.0
    limit = (tol * bmax) ** 2
    rho = alpha = omega = 1.0
    v = np.zeros_like(b)
    p = np.zeros_like(b)
    s_ = np.empty_like(b)
    t = np.empty_like(b)
    tmp = np.empty_like(b)
    for _ in range(maxiter):
        rho_new = _dot(rhat, r)
        if rho_new == 0.0 or omega == 0.0:
            return x, False
        beta = (rho_new / rho) * (alpha / omega)
        np.multiply(v, omega, out=tmp)  # p = r + beta (p - omega v)
        np.subtract(p, tmp, out=p)
        np.multiply(p, beta, out=p)
        np.add(p, r, out=p)
        matvec(p, v)
        denom = _dot(rhat, v)
        if denom == 0.0:
            return x, False
        alpha = rho_new / denom
        np.multiply(v, alpha, out=tmp)  # s = r - alpha v
        np.subtract(r, tmp, out=s_)
        if _dot(s_, s_) <= limit:
            np.multiply(p, alpha, out=tmp)
            np.add(x, tmp, out=x)
            return x, True
        matvec(s_, t)
        tt = _dot(t, t)
        if tt == 0.0:
            return x, False
        omega = _dot(t, s_) / tt
        np.multiply(p, alpha, out=tmp)  # x += alpha p + omega s
        np.add(x, tmp, out=x)
        np.multiply(s_, omega, out=tmp)
        np.add(x, tmp, out=x)
        np.multiply(t, omega, out=tmp)  # r = s - omega t
        np.subtract(s_, tmp, out=r)
        if _dot(r, r) <= limit:
            return x, True
        rho = rho_new
    return x, False


def _system_matvec(A: sp.csr_matrix):
    """``(v, out) -> out = v - A v`` in one pass of the C kernel (``I - A`` is never formed)."""
    n_row, n_col = A.shape
    indptr, indices, neg = A.indptr, A.indices, -A.data
    if _csr_matvec is None:  # pragma: no cover
        def mv_slow(v, out):
            out[:] = v - A @ v
        return mv_slow

    def mv(v, out):
        out[:] = v
        _csr_matvec(n_row, n_col, indptr, indices, neg, v, out)  # out += (-A) v

    return mv


def _solve_full(P: sp.csr_matrix, yes: np.ndarray, maybe: np.ndarray) -> tuple[np.ndarray, str, float]:
    """The S? system written over all n states, with no index remapping (cheaper than extracting the
    submatrix): ``x_i - sum_{j in S?} P_ij x_j = sum_{j in S_yes} P_ij`` for i in S?, ``x_i = 1`` on
    S_yes and ``x_i = 0`` on S_no (identity rows). Same unknowns, same solution; see :func:`_solve`.
    The matrix ``I - A`` is never formed: ``(I - A) v = v - A v``."""
    n = P.shape[0]
    row_of = np.repeat(np.arange(n, dtype=P.indices.dtype), np.diff(P.indptr))
    keep = maybe[row_of] & maybe[P.indices]
    A = sp.csr_matrix((np.where(keep, P.data, 0.0), P.indices, P.indptr), shape=(n, n))
    b = P @ yes.astype(np.float64)
    b[~maybe] = 0.0
    b[yes] = 1.0

    matvec = _system_matvec(A)
    bnorm = max(float(np.abs(b).max()), 1e-300)
    x, ok = _bicgstab(matvec, b, b.copy(), ITER_TOL, ITER_MAX)
    if ok and np.all(np.isfinite(x)):
        res = np.empty_like(x)
        matvec(x, res)
        r = float(np.abs(res - b).max()) / bnorm
        if r <= ITER_TOL:
            x[~maybe] = b[~maybe]
            return np.clip(x, 0.0, 1.0), "bicgstab", r
    idx = np.flatnonzero(maybe)  # fall back to the extracted system (GMRES, then LU)
    rows = P[idx]
    out = yes.astype(np.float64)
    out[idx], method, r = _solve(rows[:, idx].tocsr(), np.asarray(rows[:, yes].sum(axis=1)).ravel(), "fallback")
    return out, method, r


def _solve(A: sp.csr_matrix, b: np.ndarray, method: str) -> tuple[np.ndarray, str, float]:
    """Solve ``(I - A) x = b`` for the S? states; return x, method used, relative residual.

    ``direct``: sparse LU (SuperLU, COLAMD ordering) plus one step of iterative refinement.
    ``iterative``: BiCGSTAB (Krylov, no preconditioner), accepted only if the *true* residual
    ``max|b - (I-A)x| / max|b|`` is at most ``ITER_TOL``; otherwise restarted GMRES, and if that
    fails too, the direct solve; systems with a narrow band after reordering skip GMRES (see
    :func:`_band_cost`). ``auto``: direct up to ``DIRECT_MAX`` unknowns, iterative above.
    Why not always LU: on random-graph DTMCs the LU factors fill in (10^4 states took ~100 s),
    while Krylov methods converge in ~30 iterations there; on chain-like models where Krylov
    stalls, LU has little fill, so the fallback is cheap exactly when it is needed.
    """
    m = A.shape[0]
    M = (sp.identity(m, format="csr") - A).tocsr()
    bnorm = max(float(np.abs(b).max()), 1e-300)

    def resid(x):
        return float(np.abs(M @ x - b).max()) / bnorm

    if method == "auto":
        method = "direct" if m <= DIRECT_MAX else "iterative"
    if method == "iterative":
        x0 = b.copy()  # A x + b with x = 0: one Jacobi step, a good start on transient-heavy chains
        x, ok = _bicgstab(_system_matvec(A.tocsr()), b, x0, ITER_TOL, ITER_MAX)
        if ok and np.all(np.isfinite(x)) and (r := resid(x)) <= ITER_TOL:
            return np.clip(x, 0.0, 1.0), "bicgstab", r
        method = "fallback"
    if method == "fallback" and _band_cost(M) <= BAND_FLOPS:
        method = "direct"  # narrow band after reordering (chains, countdowns): LU is cheap and exact
    if method == "fallback":
        x0 = b.copy()
        x, info = spla.gmres(M, b, x0=x0, rtol=ITER_TOL / 10, atol=0.0, restart=50, maxiter=ITER_MAX // 50)
        if info == 0 and np.all(np.isfinite(x)) and (r := resid(x)) <= ITER_TOL:
            return np.clip(x, 0.0, 1.0), "gmres", r
        method = "direct"
    if method == "direct":
        lu = spla.splu(M.tocsc(), permc_spec="COLAMD")
        x = lu.solve(b)
        x = x + lu.solve(b - M @ x)  # one step of iterative refinement
        return np.clip(x, 0.0, 1.0), "splu", resid(x)
    raise InputError(f"unknown solver method {method!r} (use auto, direct or iterative)")


def _band_cost(M: sp.csr_matrix) -> float:
    """``m * bandwidth^2`` after reverse Cuthill-McKee reordering: the flop count of a banded LU,
    an upper bound for SuperLU on such matrices (used only after the Krylov solver failed)."""
    m = M.shape[0]
    perm = csgraph.reverse_cuthill_mckee(M.tocsr(), symmetric_mode=False)
    pos = np.empty(m, dtype=np.int64)
    pos[perm] = np.arange(m)
    coo = M.tocoo()
    bw = int(np.abs(pos[coo.row] - pos[coo.col]).max(initial=0))
    return float(m) * float(bw + 1) ** 2


def error_bound(P, phi1, phi2, x: np.ndarray) -> float:
    """A certified bound on ``max|x - P[phi1 U phi2]|`` for a computed vector ``x``.

    On the S? states the exact solution x* satisfies ``M x* = b`` with ``M = I - A`` a non-singular
    M-matrix, so ``M^{-1} >= 0`` and ``|x - x*| <= M^{-1} |r| <= ||r||_inf * M^{-1} 1`` with
    ``r = M x - b``; ``M^{-1} 1`` (expected steps spent in S?) is itself solved and checked, and a
    10% margin covers its own error. Prob0/Prob1 states are exact (graph algorithms)."""
    P = _as_csr(P)
    n = P.shape[0]
    phi1, phi2 = _as_mask(phi1, n, "phi1"), _as_mask(phi2, n, "phi2")
    no = prob0(P, phi1, phi2)
    yes = prob1(P, phi1, phi2, no)
    idx = np.flatnonzero(~(no | yes))
    if idx.size == 0:
        return float(np.max(np.abs(x[yes] - 1.0), initial=0.0) + np.max(np.abs(x[no]), initial=0.0))
    rows = P[idx]
    A = rows[:, idx].tocsr()
    b = np.asarray(rows[:, yes].sum(axis=1)).ravel()
    mv = _system_matvec(A)
    res = np.empty(idx.size)
    mv(np.ascontiguousarray(x[idx], dtype=np.float64), res)
    r = float(np.abs(res - b).max())
    ones = np.ones(idx.size)
    z, ok = _bicgstab(mv, ones, ones.copy(), 1e-10, ITER_MAX)
    if ok:
        mv(z, res)
    if not (ok and np.all(np.isfinite(z)) and float(np.abs(res - ones).max()) < 1e-6):
        z = spla.splu((sp.identity(idx.size, format="csc") - A).tocsc()).solve(ones)
    return 1.1 * r * float(np.abs(z).max())


# --- the public algorithms ---------------------------------------------------------------------
def until(P, phi1, phi2, method: str = "auto") -> np.ndarray:
    """``P[phi1 U phi2]`` for every state (``phi1=None`` means true): Prob0/Prob1 then one solve."""
    global _last_info
    P = _as_csr(P)
    n = P.shape[0]
    phi1, phi2 = _as_mask(phi1, n, "phi1"), _as_mask(phi2, n, "phi2")
    no = prob0(P, phi1, phi2)
    yes = prob1(P, phi1, phi2, no)
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
            x[idx], info.method, info.residual = _solve(A.tocsr(), b, "direct")
        else:
            x, info.method, info.residual = _solve_full(P, yes, maybe)
    _last_info = info
    return x


def reach(P, target, method: str = "auto") -> np.ndarray:
    """``P[F target]`` for every state."""
    return until(P, None, target, method)


def globally(P, phi, method: str = "auto") -> np.ndarray:
    """``P[G phi] = 1 - P[F !phi]`` for every state."""
    P = _as_csr(P)
    phi = _as_mask(phi, P.shape[0], "phi")
    return 1.0 - reach(P, ~phi, method)


def bounded_until(P, phi1, phi2, k: int) -> np.ndarray:
    """``P[phi1 U<=k phi2]`` for every state by k sparse matrix-vector products.

    ``x_0 = [phi2]``; ``x_{i+1} = [phi2] + [phi1 & !phi2 & !S_no] * (P x_i)``; the Prob0 states are
    fixed at 0 (they cannot reach phi2 at all). ``phi1=None`` means true, i.e. ``F<=k phi2``.
    """
    P = _as_csr(P)
    n = P.shape[0]
    if int(k) != k or k < 0:
        raise InputError(f"step bound must be a non-negative integer, got {k!r}")
    phi1, phi2 = _as_mask(phi1, n, "phi1"), _as_mask(phi2, n, "phi2")
    live = phi1 & ~phi2 & ~prob0(P, phi1, phi2)
    x = phi2.astype(np.float64)
    idx = np.flatnonzero(live)
    if idx.size == 0 or k == 0:
        return x
    R = P[idx]  # only the live rows are ever updated
    for _ in range(int(k)):
        x[idx] = R @ x
    return x


def next_(P, phi) -> np.ndarray:
    """``P[X phi]`` for every state: one matrix-vector product."""
    P = _as_csr(P)
    return P @ _as_mask(phi, P.shape[0], "phi").astype(np.float64)


# --- properties on models -----------------------------------------------------------------------
@dataclass
class CheckResult:
    """The result of checking a property on every state of a model.

    ``values[i]`` is the probability from state i (state-index order); ``initial`` the value at the
    model's initial state; ``satisfied`` the Boolean verdict per state for ``P~p`` properties.
    """

    values: np.ndarray
    initial: float
    seconds: float
    property: str
    engine: str = "native"
    satisfied: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "property": self.property,
            "engine": self.engine,
            "initial": float(self.initial) if np.isfinite(self.initial) else None,
            "values": [float(v) if np.isfinite(v) else None for v in self.values],
            "seconds": self.seconds,
        }
        if self.satisfied is not None:
            d["satisfied"] = [bool(v) for v in self.satisfied]
            d["initial_satisfied"] = bool(self.satisfied[self._initial_index])
        if self.info:
            d["info"] = self.info
        return d

    _initial_index: int = 0


def _compare(values: np.ndarray, comparison: str, threshold: float) -> np.ndarray:
    return {"<": values < threshold, "<=": values <= threshold,
            ">": values > threshold, ">=": values >= threshold}[comparison]


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
            li = _last_info
            info = {"yes": li.n_yes, "no": li.n_no, "maybe": li.n_maybe, "solver": li.method,
                    "residual": li.residual}
        else:
            values = bounded_until(P, lhs, rhs, path.bound)
    seconds = time.perf_counter() - t0
    sat = _compare(values, p.comparison, p.threshold) if not p.is_query else None  # type: ignore[arg-type]
    res = CheckResult(values, float(values[model.initial]), seconds, str(p), "native", sat, info)
    res._initial_index = model.initial
    return res
