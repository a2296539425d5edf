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
    "solve_system",
    "system_matvec",
]

#: systems up to this many unknowns are always solved directly (LU is exact and fast there)
DIRECT_MAX = 300
#: relative residual (max-norm) the iterative path must reach, otherwise the direct solve is used
ITER_TOL = 1e-12
#: iteration cap of BiCGSTAB (random graphs need ~30) and of GMRES before falling back to LU
ITER_MAX = 300
#: after a Krylov failure, systems whose banded LU costs at most this many flops go straight to LU
BAND_FLOPS = 1e8


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



def _dot(a: np.ndarray, b: np.ndarray) -> float:
    # einsum: single-threaded and allocation-free; BLAS ddot was 5x slower on a busy 2-core machine
    return float(np.einsum("i,i->", a, b))


def bicgstab(matvec, b: np.ndarray, x0: np.ndarray, tol: float, maxiter: int):
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


def solve_full(P: sp.csr_matrix, yes: np.ndarray, maybe: np.ndarray) -> tuple[np.ndarray, str, float]:
    """The S? system written over all n states, with no index remapping (cheaper than extracting the
    submatrix): ``x_i - sum_{j in S?} P_ij x_j = sum_{j in S_yes} P_ij`` for i in S?, ``x_i = 1`` on
    S_yes and ``x_i = 0`` on S_no (identity rows). Same unknowns, same solution; see :func:`solve_system`.
    The matrix ``I - A`` is never formed: ``(I - A) v = v - A v``."""
    n = P.shape[0]
    row_of = np.repeat(np.arange(n, dtype=P.indices.dtype), np.diff(P.indptr))
    keep = maybe[row_of] & maybe[P.indices]
    A = sp.csr_matrix((np.where(keep, P.data, 0.0), P.indices, P.indptr), shape=(n, n))
    b = P @ yes.astype(np.float64)
    b[~maybe] = 0.0
    b[yes] = 1.0

    matvec = system_matvec(A)
    bnorm = max(float(np.abs(b).max()), 1e-300)
    x, ok = bicgstab(matvec, b, b.copy(), ITER_TOL, ITER_MAX)
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
    out[idx], method, r = solve_system(rows[:, idx].tocsr(), np.asarray(rows[:, yes].sum(axis=1)).ravel(), "fallback")
    return out, method, r


def solve_system(A: sp.csr_matrix, b: np.ndarray, method: str) -> tuple[np.ndarray, str, float]:
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

    if method == "auto":
        method = "direct" if m <= DIRECT_MAX else "iterative"
    if method == "iterative":
        x0 = b.copy()  # A x + b with x = 0: one Jacobi step, a good start on transient-heavy chains
        x, ok = bicgstab(system_matvec(A.tocsr()), b, x0, ITER_TOL, ITER_MAX)
        if ok and np.all(np.isfinite(x)) and (r := resid(x)) <= ITER_TOL:
            return np.clip(x, 0.0, 1.0), "bicgstab", r
        method = "fallback"
    if method == "fallback" and band_cost(M) <= BAND_FLOPS:
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
