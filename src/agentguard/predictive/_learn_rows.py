"""Helpers of the DTMC learner: exact rational rows of Eq. 1 and path sampling (internal module;
``sample_paths`` and ``constant_labels`` are public through :mod:`agentguard.predictive.learn`)."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..core.errors import InputError
from ..spec.predicates import Abstraction

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


def constant_labels(abstraction: Abstraction, states: Sequence[str], labels: dict[str, np.ndarray]) -> list[str]:
    """Warnings for each predicate with one value in every learned state, and for an ``unsafe`` label
    no learned state has. Inside ``exists``/``forall`` a field no item has makes the item fail the
    condition (the spec language's rule for heterogeneous objects), so a misspelt field
    (``objectTyp == "Fork"``) gives a predicate that is false everywhere, and a model that calls
    every run safe: the learner cannot tell a typo from a rare event, but it says so."""
    keep = np.array([s != abstraction.terminal for s in states], dtype=bool)
    if not keep.any():
        return []
    out = []
    for name in abstraction.names:
        v = labels[name][keep]
        if v.all() or not v.any():
            out.append(f"predicate {name!r} is {'true' if v.all() else 'false'} in every learned state: "
                       "check its field names against the traces")
    if not labels["unsafe"][keep].any():
        out.append("no learned state is unsafe: every run of this model is predicted safe")
    return out
