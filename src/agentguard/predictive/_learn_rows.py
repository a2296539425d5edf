"""Helpers of the DTMC learner: exact rational rows of Eq. 1 and path sampling (internal module;
``sample_paths`` is public through :mod:`agentguard.predictive.learn`)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..core.errors import InputError

__all__: list[str] = []


def _exact_rows(C: sp.csr_matrix, P: sp.csr_matrix, valid: np.ndarray, alpha: Fraction,
                empty_row: str) -> dict[int, dict[int, str]]:
    """The rows of Eq. 1 as exact rationals (strings "151/184")."""
    out: dict[int, dict[int, str]] = {}
    n_i = np.asarray(C.sum(axis=1)).ravel()
    Cd = C.todok()
    k = valid.sum(axis=1)
    for i in range(P.shape[0]):
        denom = Fraction(int(n_i[i])) + int(k[i]) * alpha
        row: dict[int, str] = {}
        cols = P.indices[P.indptr[i]:P.indptr[i + 1]]
        for j in cols:
            if denom == 0:
                v = Fraction(1, int(k[i])) if (k[i] > 0 and empty_row == "uniform") else Fraction(1)
            else:
                v = (Fraction(int(Cd.get((i, int(j)), 0))) + alpha) / denom
            row[int(j)] = str(v)
        out[i] = row
    return out


def sample_paths(
    P: sp.csr_matrix | np.ndarray,
    start: int,
    n_paths: int,
    rng: np.random.Generator,
    stop: np.ndarray | None = None,
    max_len: int = 10_000,
) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``n_paths`` paths of the DTMC ``P`` from ``start`` (vectorised over paths).

    A path ends when it enters a ``stop`` state (default: absorbing states, i.e. ``P[i, i] == 1``)
    or after ``max_len`` states. Returns ``(flat, lengths)`` as :func:`count_transitions` expects.
    """
    A = P.toarray() if sp.issparse(P) else np.asarray(P, dtype=float)
    n = A.shape[0]
    if stop is None:
        stop = np.isclose(np.diag(A), 1.0)
    cum = np.cumsum(A, axis=1)
    cum[:, -1] = 1.0
    cur = np.full(n_paths, start, dtype=np.int64)
    alive = ~stop[cur]
    cols = [cur.copy()]
    lengths = np.ones(n_paths, dtype=np.int64)
    for _ in range(max_len - 1):
        if not alive.any():
            break
        u = rng.random(n_paths)
        nxt = (u[:, None] >= cum[cur]).sum(axis=1)
        nxt = np.minimum(nxt, n - 1)
        cur = np.where(alive, nxt, cur)
        lengths += alive
        cols.append(np.where(alive, cur, -1))
        alive &= ~stop[cur]
    grid = np.stack(cols, axis=1)  # (n_paths, T) with -1 after the end
    flat = grid[grid >= 0]  # row-major: paths back to back
    return flat, lengths


def _whole(values: Any, what: str) -> np.ndarray:
    """A 1-d int64 array of whole numbers; InputError for fractions, NaN or non-numbers (a cast to int
    would truncate 1.7 to state 1 and count a transition nobody observed)."""
    a = np.asarray(values).ravel()
    if a.dtype.kind in "iub":
        return a.astype(np.int64)
    if a.dtype.kind != "f" or (a.size and not np.all(np.isfinite(a) & (a == np.floor(a)))):
        raise InputError(f"{what} must be whole numbers")
    return a.astype(np.int64)
