"""Reward and long-run properties on a DTMC, for every state at once.

* :func:`expected_reward` -- ``R=? [F phi]``: the expected reward accumulated before first reaching
  ``phi`` (Baier & Katoen, *Principles of Model Checking*, section 10.5; as in PRISM/Storm): 0 on
  ``phi``, infinity where ``P[F phi] < 1`` (decided by the graph algorithm Prob1, exact), and on the
  other states the unique solution of ``x = r + A x`` with ``A = P`` restricted to them (``I - A`` is
  a non-singular M-matrix because each of them reaches ``phi`` almost surely).
* :func:`cumulative_reward` -- ``R=? [C<=k]``: ``x_0 = 0``, ``x_{i+1} = r + P x_i``.
* :func:`long_run` -- ``S=? [phi]``: the long-run fraction of time in ``phi`` (B&K 10.1.3): the bottom
  strongly connected components (BSCCs) of the graph, each one's stationary distribution ``pi_B``
  (``pi_B (P_B - I) = 0``, ``sum pi_B = 1``, sparse LU), ``v_B = pi_B(phi)``, and from a transient state
  ``sum_B P[F B] v_B``, which is one linear system ``x = A x + b`` over the transient states.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph
from scipy.sparse import linalg as spla

from ..core.errors import InputError
from .linsolve import solve_system
from .reachability import _as_csr, _as_mask, prob0, prob1

__all__ = ["bsccs", "cumulative_reward", "expected_reward", "long_run"]


def expected_reward(P, target, reward: np.ndarray, method: str = "auto") -> np.ndarray:
    """``R=? [F target]`` for every state (``inf`` where ``target`` is not reached almost surely)."""
    P = _as_csr(P)
    n = P.shape[0]
    target = _as_mask(target, n, "target")
    r = np.asarray(reward, dtype=np.float64)
    if r.shape != (n,):
        raise InputError(f"reward vector has shape {r.shape}, expected ({n},)")
    if np.any(r < 0) or not np.all(np.isfinite(r)):
        raise InputError("rewards must be finite and non-negative")
    sure = prob1(P, None, target, prob0(P, None, target))
    x = np.full(n, np.inf)
    x[target] = 0.0
    idx = np.flatnonzero(sure & ~target)
    if idx.size:
        rows = P[idx]
        A = rows[:, idx].tocsr()
        b = r[idx]
        scale = float(np.abs(b).max())
        if scale == 0.0:
            x[idx] = 0.0
        else:
            sol, _, _ = solve_system(A, b / scale, "direct" if method == "direct" else "auto", clip=False)
            x[idx] = sol * scale
    return x


def cumulative_reward(P, reward: np.ndarray, k: int) -> np.ndarray:
    """``R=? [C<=k]``: the expected reward of the first ``k`` steps, for every state."""
    P = _as_csr(P)
    if int(k) != k or k < 0:
        raise InputError(f"step bound must be a non-negative integer, got {k!r}")
    r = np.asarray(reward, dtype=np.float64)
    x = np.zeros(P.shape[0])
    for _ in range(int(k)):
        x = r + P @ x
    return x


def bsccs(P) -> list[np.ndarray]:
    """The bottom strongly connected components (index arrays): SCCs with no edge leaving them."""
    P = _as_csr(P)
    n = P.shape[0]
    ncomp, comp = csgraph.connected_components(P, directed=True, connection="strong")
    coo = P.tocoo()
    leaving = np.zeros(ncomp, dtype=bool)
    out_edge = (comp[coo.row] != comp[coo.col]) & (coo.data > 0)
    leaving[comp[coo.row[out_edge]]] = True
    order = np.argsort(comp, kind="stable")
    bounds = np.searchsorted(comp[order], np.arange(ncomp + 1))
    return [order[bounds[c]:bounds[c + 1]] for c in range(ncomp) if not leaving[c] and n]


def _stationary(P: sp.csr_matrix, states: np.ndarray) -> np.ndarray:
    """The stationary distribution of the closed class ``states`` (irreducible, maybe periodic)."""
    m = states.size
    if m == 1:
        return np.ones(1)
    B = P[states][:, states].tocsc()
    M = (B.T - sp.identity(m, format="csc")).tolil()
    M[m - 1, :] = np.ones(m)  # replace one (redundant) balance equation by sum(pi) = 1
    rhs = np.zeros(m)
    rhs[m - 1] = 1.0
    pi = spla.splu(M.tocsc()).solve(rhs)
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def long_run(P, phi) -> np.ndarray:
    """``S=? [phi]`` for every state: the long-run probability of being in a ``phi`` state."""
    P = _as_csr(P)
    n = P.shape[0]
    phi = _as_mask(phi, n, "phi")
    x = np.zeros(n)
    in_bscc = np.zeros(n, dtype=bool)
    for states in bsccs(P):
        pi = _stationary(P, states)
        x[states] = float(pi[phi[states]].sum())
        in_bscc[states] = True
    idx = np.flatnonzero(~in_bscc)
    if idx.size:
        rows = P[idx]
        A = rows[:, idx].tocsr()
        b = rows[:, in_bscc] @ x[in_bscc]
        x[idx], _, _ = solve_system(A, np.asarray(b).ravel(), "auto")
    return x
