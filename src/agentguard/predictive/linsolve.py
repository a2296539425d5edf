"""The linear-algebra half of the model checker: solving ``(I - A) x = b`` for the S? states.

``I - A`` is a non-singular M-matrix (every S? state reaches S_no with positive probability).
Small systems (<= ``DIRECT_MAX`` unknowns) use a direct sparse LU (SuperLU plus one refinement
step); larger ones BiCGSTAB, then GMRES, whose *true* residual must be at most ``ITER_TOL``, with
the direct solve as the last resort (see :func:`solve_system` for why). Used by
:mod:`agentguard.predictive.reachability`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph
from scipy.sparse import linalg as spla

from ..core.errors import InputError

__all__ = [
    "BAND_FLOPS",
    "DIRECT_MAX",
    "ITER_MAX",
    "ITER_TOL",
    "band_cost",
    "bicgstab",
    "matvec_fn",
    "solve_full",
    "solve_reordered",
    "solve_system",
    "system_matvec",
]

#: systems up to this many unknowns are always solved directly (LU is exact and fast there)
DIRECT_MAX = 300
#: relative residual (max-norm) the iterative path must reach, otherwise the direct solve is used
ITER_TOL = 1e-12
#: iteration cap of BiCGSTAB (random graphs need ~30) and of GMRES before falling back to LU
ITER_MAX = 300
#: systems whose banded LU costs at most this many flops (n (bandwidth+1)^2) are solved banded
BAND_FLOPS = 3e8


try:  # the C kernel behind ``csr @ vector``, called directly to skip ~80 us of Python dispatch per call
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
except ImportError:  # pragma: no cover - private scipy API; fall back to the public operator
    _csr_matvec = None


def matvec_fn(A: sp.csr_matrix):
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



#: vectors up to this length use ``np.dot`` (BLAS ddot runs single-threaded there, ~1 us a call)
DOT_SMALL = 8192


def _dot_any(a: np.ndarray, b: np.ndarray) -> float:
    # small: np.dot (einsum's Python dispatcher costs ~3 us a call, 9 dots per BiCGSTAB iteration);
    # large: einsum, single-threaded and allocation-free (BLAS ddot may go multi-threaded there and
    # was 5x slower on a busy 2-core machine)
    if a.size <= DOT_SMALL:
        return float(np.dot(a, b))
    return float(np.einsum("i,i->", a, b))


def bicgstab(matvec, b: np.ndarray, x0: np.ndarray, tol: float, maxiter: int):
    """BiCGSTAB (van der Vorst 1992) as a lean numpy loop with preallocated buffers and in-place
    vector updates (scipy's loop has ~0.3 ms/iteration overhead and allocates every vector).

    ``matvec(v, out)`` writes the system matrix times ``v`` into ``out``. Stops when the recurrence
    residual satisfies ``||r||_2 <= tol * max|b|`` (which implies ``max|r| <= tol * max|b|``);
    returns (x, converged). Callers re-check the true residual."""
    # the dot product bound once: ndarray.dot on small vectors (no Python dispatch), _dot otherwise
    _dot = np.ndarray.dot if b.size <= DOT_SMALL else _dot_any
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
    if b.size <= DOT_SMALL and b.dtype == np.float64:
        return _bicgstab_small(matvec, b, x, r, rhat, limit, maxiter)
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


def _bicgstab_small(matvec, b, x, r, rhat, limit, maxiter):
    """The same iteration for small vectors, with BLAS ``daxpy`` fusing each ``y += a x`` into one call
    (per-call overhead is what a small system's iteration costs; single-threaded at these sizes)."""
    from scipy.linalg.blas import daxpy

    dot = np.ndarray.dot
    rho = alpha = omega = 1.0
    v = np.zeros_like(b)
    p = np.zeros_like(b)
    s_ = np.empty_like(b)
    t = np.empty_like(b)
    for _ in range(maxiter):
        rho_new = dot(rhat, r)
        if rho_new == 0.0 or omega == 0.0:
            return x, False
        p = daxpy(v, p, a=-omega)  # p = r + beta (p - omega v)
        p *= (rho_new / rho) * (alpha / omega)
        p = daxpy(r, p)
        matvec(p, v)
        denom = dot(rhat, v)
        if denom == 0.0:
            return x, False
        alpha = rho_new / denom
        np.copyto(s_, r)  # s = r - alpha v
        s_ = daxpy(v, s_, a=-alpha)
        if dot(s_, s_) <= limit:
            return daxpy(p, x, a=alpha), True
        matvec(s_, t)
        tt = dot(t, t)
        if tt == 0.0:
            return x, False
        omega = dot(t, s_) / tt
        x = daxpy(p, x, a=alpha)  # x += alpha p + omega s
        x = daxpy(s_, x, a=omega)
        np.copyto(r, s_)  # r = s - omega t
        r = daxpy(t, r, a=-omega)
        if dot(r, r) <= limit:
            return x, True
        rho = rho_new
    return x, False


def system_matvec(A: sp.csr_matrix):
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


def solve_full(P: sp.csr_matrix, yes: np.ndarray, maybe: np.ndarray,
               deep: bool = False) -> tuple[np.ndarray, str, float]:
    """The S? system written over all n states, with no index remapping (cheaper than extracting the
    submatrix): ``x_i - sum_{j in S?} P_ij x_j = sum_{j in S_yes} P_ij`` for i in S?, ``x_i = 1`` on
    S_yes and ``x_i = 0`` on S_no (identity rows). Same unknowns, same solution.

    The solver is chosen from the structure, not by trial and error:

    * **banded** -- if the system's bandwidth ``w`` in the given state order has ``n (w+1)^2 <=
      BAND_FLOPS`` (chains, birth-death models, counters): LAPACK's banded LU (``gbsv``), exact up
      to rounding, O(n w^2);
    * **Krylov** -- if the graph is *shallow* (``deep=False``: the backward search of Prob0 finished
      within a few vectorised layers, as on random/expander-like graphs, where LU fills in and
      BiCGSTAB converges in ~30 iterations): BiCGSTAB over all states, accepted only with a true
      residual <= ``ITER_TOL``, else the extracted system (GMRES, then LU);
    * **reordered direct** -- *deep* graphs (long paths: chains in another order, grids): reverse
      Cuthill-McKee, then the banded LU if the band is narrow, else SuperLU with the
      minimum-degree ordering of ``A^T + A`` (nested-dissection-like fill on grid-like graphs).
    """
    n = P.shape[0]
    row_of = np.repeat(np.arange(n, dtype=P.indices.dtype), np.diff(P.indptr))
    keep = maybe[row_of] & maybe[P.indices] & (P.data != 0)
    A = sp.csr_matrix((np.where(keep, P.data, 0.0), P.indices, P.indptr), shape=(n, n))
    b = P @ yes.astype(np.float64)
    b[~maybe] = 0.0
    b[yes] = 1.0
    d = P.indices[keep].astype(np.int64) - row_of[keep]
    lower, upper = (int(max(-d.min(), 0)), int(max(d.max(), 0))) if d.size else (0, 0)
    if n * float(lower + upper + 1) ** 2 <= BAND_FLOPS:
        x = _banded(A, b, lower, upper, None)
        return x, "banded", _resid(A, b, x)
    if not deep:
        x, ok, r = _krylov(A, b)
        if ok:
            x[~maybe] = b[~maybe]
            return np.clip(x, 0.0, 1.0), "bicgstab", r
    idx = np.flatnonzero(maybe)
    rows = P[idx]
    sub = rows[:, idx].tocsr()
    bs = np.asarray(rows[:, yes].sum(axis=1)).ravel()
    out = yes.astype(np.float64)
    if deep:
        out[idx], method, r = solve_reordered(sub, bs)
    else:
        out[idx], method, r = solve_system(sub, bs, "fallback")
    return out, method, r


def _krylov(A: sp.csr_matrix, b: np.ndarray) -> tuple[np.ndarray, bool, float]:
    matvec = system_matvec(A)
    bnorm = max(float(np.abs(b).max()), 1e-300)
    x, ok = bicgstab(matvec, b, b.copy(), ITER_TOL, ITER_MAX)
    if ok and np.all(np.isfinite(x)):
        res = np.empty_like(x)
        matvec(x, res)
        r = float(np.abs(res - b).max()) / bnorm
        return x, r <= ITER_TOL, r
    return x, False, float("inf")


def _resid(A: sp.csr_matrix, b: np.ndarray, x: np.ndarray) -> float:
    """Relative max-norm residual of ``(I - A) x = b``."""
    return float(np.abs(x - A @ x - b).max()) / max(float(np.abs(b).max()), 1e-300)


def _banded(A: sp.csr_matrix, b: np.ndarray, lower: int, upper: int, perm: np.ndarray | None,
            clip: bool = True) -> np.ndarray:
    """Solve ``(I - A) x = b`` by LAPACK's banded LU (with one refinement step when it helps)."""
    from scipy.linalg import solve_banded

    m = A.shape[0]
    if not A.has_canonical_format:  # duplicate entries would overwrite each other in the band
        A = A.copy()
        A.sum_duplicates()
    M = A.tocoo()  # I - A written straight into the band: no sparse identity, no sparse subtraction
    rows, cols, vals = M.row, M.col, -M.data
    if perm is not None:
        pos = np.empty(m, dtype=np.int64)
        pos[perm] = np.arange(m)
        rows, cols, b = pos[rows], pos[cols], b[perm]
    ab = np.zeros((lower + upper + 1, m))
    ab[upper + rows - cols, cols] = vals  # -A
    ab[upper] += 1.0  # the identity's diagonal (the band's row ``upper``)
    x = solve_banded((lower, upper), ab, b, check_finite=False)
    if perm is not None:
        y = np.empty(m)
        y[perm] = x
        x = y
        b_orig = np.empty(m)
        b_orig[perm] = b
        b = b_orig
    # one step of refinement with the residual in extended precision: long chains are ill-conditioned
    # (condition ~ n^2) and their double-precision residual is mostly cancellation noise
    AL = A.astype(np.longdouble)
    xl = x.astype(np.longdouble)
    r = (b.astype(np.longdouble) - (xl - AL @ xl)).astype(np.float64)
    d = solve_banded((lower, upper), ab, r[perm] if perm is not None else r, check_finite=False)
    if perm is not None:
        dd = np.empty(m)
        dd[perm] = d
        d = dd
    x = (xl + d.astype(np.longdouble)).astype(np.float64)
    return np.clip(x, 0.0, 1.0) if clip else x


def solve_reordered(A: sp.csr_matrix, b: np.ndarray, clip: bool = True) -> tuple[np.ndarray, str, float]:
    """``(I - A) x = b`` on a deep graph: RCM, then banded LU if narrow, else SuperLU (MMD on A^T+A)."""
    m = A.shape[0]
    M = (sp.identity(m, format="csr") - A).tocsr()
    perm = csgraph.reverse_cuthill_mckee(M, symmetric_mode=False)
    pos = np.empty(m, dtype=np.int64)
    pos[perm] = np.arange(m)
    coo = M.tocoo()
    d = pos[coo.col] - pos[coo.row]
    lower, upper = (int(max(-d.min(), 0)), int(max(d.max(), 0))) if d.size else (0, 0)
    if m * float(lower + upper + 1) ** 2 <= BAND_FLOPS:
        x = _banded(A, b, lower, upper, perm, clip)
        return x, "banded-rcm", _resid(A, b, x)
    lu = spla.splu(M.tocsc(), permc_spec="MMD_AT_PLUS_A")
    x = lu.solve(b)
    x = x + lu.solve(b - M @ x)
    x = np.clip(x, 0.0, 1.0) if clip else x
    return x, "splu-mmd", _resid(A, b, x)


def solve_system(A: sp.csr_matrix, b: np.ndarray, method: str, clip: bool = True) -> tuple[np.ndarray, str, float]:
    """Solve ``(I - A) x = b`` for the S? states; return x, method used, relative residual.

    ``direct``: sparse LU (SuperLU, COLAMD ordering) plus one step of iterative refinement.
    ``iterative``: BiCGSTAB (Krylov, no preconditioner), accepted only if the *true* residual
    ``max|b - (I-A)x| / max|b|`` is at most ``ITER_TOL``; otherwise restarted GMRES, and if that
    fails too, the direct solve; systems with a narrow band after reordering skip GMRES (see
    :func:`band_cost`). ``auto``: direct up to ``DIRECT_MAX`` unknowns, iterative above.
    Why not always LU: on random-graph DTMCs the LU factors fill in (10^4 states took ~100 s),
    while Krylov methods converge in ~30 iterations there; on chain-like models where Krylov
    stalls, LU has little fill, so the fallback is cheap exactly when it is needed.
    """
    m = A.shape[0]
    M = (sp.identity(m, format="csr") - A).tocsr()
    bnorm = max(float(np.abs(b).max()), 1e-300)

    def resid(x):
        return float(np.abs(M @ x - b).max()) / bnorm

    def fin(x: np.ndarray) -> np.ndarray:
        return np.clip(x, 0.0, 1.0) if clip else x

    if method == "auto":
        method = "direct" if m <= DIRECT_MAX else "iterative"
    if method == "iterative":
        x0 = b.copy()  # A x + b with x = 0: one Jacobi step, a good start on transient-heavy chains
        x, ok = bicgstab(system_matvec(A.tocsr()), b, x0, ITER_TOL, ITER_MAX)
        if ok and np.all(np.isfinite(x)) and (r := resid(x)) <= ITER_TOL:
            return fin(x), "bicgstab", r
        method = "fallback"
    if method == "fallback" and band_cost(M) <= BAND_FLOPS:
        method = "direct"  # narrow band after reordering (chains, countdowns): LU is cheap and exact
    if method == "fallback":
        x0 = b.copy()
        x, info = spla.gmres(M, b, x0=x0, rtol=ITER_TOL / 10, atol=0.0, restart=50, maxiter=ITER_MAX // 50)
        if info == 0 and np.all(np.isfinite(x)) and (r := resid(x)) <= ITER_TOL:
            return fin(x), "gmres", r
        method = "direct"
    if method == "direct":
        lu = spla.splu(M.tocsc(), permc_spec="COLAMD")
        x = lu.solve(b)
        x = x + lu.solve(b - M @ x)  # one step of iterative refinement
        return fin(x), "splu", resid(x)
    raise InputError(f"unknown solver method {method!r} (use auto, direct or iterative)")


def band_cost(M: sp.csr_matrix) -> float:
    """``m * bandwidth^2`` after reverse Cuthill-McKee reordering: the flop count of a banded LU,
    an upper bound for SuperLU on such matrices (used only after the Krylov solver failed)."""
    m = M.shape[0]
    perm = csgraph.reverse_cuthill_mckee(M.tocsr(), symmetric_mode=False)
    pos = np.empty(m, dtype=np.int64)
    pos[perm] = np.arange(m)
    coo = M.tocoo()
    bw = int(np.abs(pos[coo.row] - pos[coo.col]).max(initial=0))
    return float(m) * float(bw + 1) ** 2
