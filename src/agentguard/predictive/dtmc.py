"""The DTMC container shared by learning, model checking, PRISM import/export and the runtime guard.

A :class:`DTMC` is ``M = (S, P)`` (Definition 3 of the Pro2Guard paper) plus what the rest of the
package needs around it: an initial state, named Boolean labels (atomic propositions), integer state
variables (for PRISM models, e.g. ``s``), human-readable state names (abstract bit-vectors), and the
transition counts it was learned from (kept so a saved model can be re-learned or audited).

Guarantee: a DTMC that passed :meth:`DTMC.validate` has a square CSR matrix with entries in [0, 1],
every row summing to 1 within ``tol``, an initial state in range, and labels/variables of length n.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import scipy.sparse as sp

from ..core.errors import InputError, ModelError

__all__ = ["DTMC"]


@dataclass
class DTMC:
    """A finite discrete-time Markov chain with labels.

    Attributes:
        matrix: n x n transition matrix (``scipy.sparse.csr_matrix``, float64), rows sum to 1.
        initial: index of the initial state.
        labels: atomic propositions, name -> boolean array of length n.
        variables: integer state variables, name -> int array of length n (PRISM ``s``).
        state_names: optional names of the states (abstract bit-vectors such as ``"01001000"``).
        counts: optional n x n transition counts the matrix was estimated from.
        exact: optional exact rational rows (``{i: {j: "151/184"}}``) when read from PRISM.
        meta: free-form metadata (predicates, smoothing alpha, PAC report, source file).
        rewards: reward structures, name -> expected reward per state and step (``""`` is PRISM's
            unnamed structure); what ``R=? [F phi]`` accumulates.
    """

    matrix: sp.csr_matrix
    initial: int = 0
    labels: dict[str, np.ndarray] = field(default_factory=dict)
    variables: dict[str, np.ndarray] = field(default_factory=dict)
    state_names: list[str] | None = None
    counts: sp.csr_matrix | None = None
    exact: dict[int, dict[int, str]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    rewards: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rewards = {k: np.asarray(v, dtype=np.float64) for k, v in self.rewards.items()}
        self.matrix = sp.csr_matrix(self.matrix, dtype=np.float64)
        self.labels = {k: _mask(v, k) for k, v in self.labels.items()}
        self.variables = {k: np.asarray(v, dtype=np.int64) for k, v in self.variables.items()}
        if self.counts is not None:
            self.counts = sp.csr_matrix(self.counts, dtype=np.float64)

    @property
    def n(self) -> int:
        """Number of states."""
        return int(self.matrix.shape[0])

    def validate(self, tol: float = 1e-9) -> "DTMC":
        """Check the contract stated in the module docstring; raise ModelError naming the problem."""
        m = self.matrix
        if m.shape[0] != m.shape[1]:
            raise ModelError(f"transition matrix is not square: {m.shape}")
        if m.nnz and (m.data.min() < 0 or m.data.max() > 1 + tol or not np.all(np.isfinite(m.data))):
            raise ModelError("transition probabilities must be finite numbers in [0, 1] (none negative)")
        sums = np.asarray(m.sum(axis=1)).ravel()
        bad = np.flatnonzero(np.abs(sums - 1.0) > tol)
        if bad.size:
            i = int(bad[0])
            name = self.state_names[i] if self.state_names else str(i)
            raise ModelError(f"row of state {name} sums to {sums[i]:.12g}, not 1 ({bad.size} bad rows)")
        if not 0 <= self.initial < self.n:
            raise ModelError(f"initial state {self.initial} out of range 0..{self.n - 1}")
        for kind, d in (("label", self.labels), ("variable", self.variables), ("reward structure", self.rewards)):
            for k, v in d.items():
                if v.shape != (self.n,):
                    raise ModelError(f"{kind} {k!r} has length {v.shape[0] if v.ndim else 0}, expected {self.n}")
        if self.state_names is not None and len(self.state_names) != self.n:
            raise ModelError(f"{len(self.state_names)} state names for {self.n} states")
        if self.state_names is not None and len(set(self.state_names)) != self.n:
            # a guard looks states up by name: with two states of one name, one of them is never seen
            dup = next(s for i, s in enumerate(self.state_names) if s in self.state_names[:i])
            raise ModelError(f"state name {dup!r} names two states")
        return self

    def builtin_labels(self) -> dict[str, np.ndarray]:
        """The labels every PRISM model has: ``"init"`` (the initial state(s): ``meta['initial_states']``
        or ``initial``) and ``"deadlock"`` (states without a successor in the source, given a self-loop:
        ``meta['deadlock_states']``), unless the model defines labels of these names itself."""
        init = np.zeros(self.n, dtype=bool)
        init[np.asarray(self.meta.get("initial_states", [self.initial]), dtype=np.int64)] = True
        dead = np.zeros(self.n, dtype=bool)
        dead[np.asarray(self.meta.get("deadlock_states", []), dtype=np.int64)] = True
        out = {"init": init, "deadlock": dead}
        out.update(self.labels)
        return out

    def label(self, name: str) -> np.ndarray:
        """The boolean vector of label ``name``; ModelError listing the known labels otherwise."""
        try:
            return self.labels[name]
        except KeyError:
            known = ", ".join(sorted(self.labels)) or "none"
            raise ModelError(f"unknown label {name!r} (known labels: {known})") from None

    def index_of(self, state_name: str) -> int:
        """Index of a named state; ModelError if the model has no such state."""
        if self.state_names is None:
            raise ModelError("this model has no state names")
        try:
            return self.state_names.index(state_name)
        except ValueError:
            raise ModelError(f"unknown state {state_name!r}") from None

    # --- persistence (JSON; counts kept) -------------------------------------------------------
    def to_json_dict(self) -> dict[str, Any]:
        m = self.matrix.tocoo()
        d: dict[str, Any] = {
            "format": "agentguard-dtmc/1",
            "n": self.n,
            "initial": self.initial,
            "transitions": [[int(i), int(j), float(p)] for i, j, p in zip(m.row, m.col, m.data)],
            "labels": {k: np.flatnonzero(v).tolist() for k, v in self.labels.items()},
            "variables": {k: v.tolist() for k, v in self.variables.items()},
            "state_names": self.state_names,
            "meta": self.meta,
        }
        if self.rewards:
            d["rewards"] = {k: v.tolist() for k, v in self.rewards.items()}
        if self.counts is not None:
            c = self.counts.tocoo()
            d["counts"] = [[int(i), int(j), float(x)] for i, j, x in zip(c.row, c.col, c.data)]
        if self.exact is not None:
            d["exact"] = {str(i): {str(j): s for j, s in row.items()} for i, row in self.exact.items()}
        return d

    @classmethod
    def from_json_dict(cls, d: Mapping[str, Any]) -> "DTMC":
        if d.get("format") != "agentguard-dtmc/1":
            raise ModelError("not an agentguard model file (missing format 'agentguard-dtmc/1')")
        try:
            n = _index(d["n"], None, "n")
            if n < 1:
                raise ValueError(f"n must be >= 1, got {n}")
            tr = _numbers(d["transitions"], "transitions").reshape(-1, 3)
            if len(tr) < n:  # every row needs a transition to sum to 1: refuse before allocating n states
                src = np.unique(tr[:, 0])
                gap = int(np.flatnonzero(src != np.arange(src.size))[0]) if (src != np.arange(src.size)).any() \
                    else src.size
                raise ModelError(f"row of state {gap} sums to 0, not 1 ({len(tr)} transitions for {n} states: "
                                 "every state needs one)")
            mat = sp.csr_matrix((tr[:, 2], (_indices(tr[:, 0], n, "transition source"),
                                            _indices(tr[:, 1], n, "transition target"))), shape=(n, n))
            labels = {}
            for k, idx in d.get("labels", {}).items():
                v = np.zeros(n, bool)
                v[_indices(idx, n, f"label {k!r}")] = True
                labels[k] = v
            counts = None
            if d.get("counts") is not None:
                c = _numbers(d["counts"], "counts").reshape(-1, 3)
                if not np.all(np.isfinite(c[:, 2]) & (c[:, 2] >= 0)):
                    raise ValueError("counts must be finite and non-negative")
                counts = sp.csr_matrix((c[:, 2], (_indices(c[:, 0], n, "count source"),
                                                  _indices(c[:, 1], n, "count target"))), shape=(n, n))
            initial = _index(d.get("initial", 0), n, "initial")
            exact = None
            if d.get("exact") is not None:
                exact = {int(i): {int(j): s for j, s in row.items()} for i, row in d["exact"].items()}
            variables = {k: _whole(v, f"variable {k!r}") for k, v in d.get("variables", {}).items()}
            rewards = {k: _numbers(v, f"reward structure {k!r}") for k, v in (d.get("rewards") or {}).items()}
            meta = d.get("meta") or {}
            if not isinstance(meta, Mapping):
                raise TypeError("meta must be an object")
        except (KeyError, TypeError, ValueError, IndexError, OverflowError, AttributeError) as exc:
            raise ModelError(f"malformed model file: {exc}") from None
        return cls(mat, initial, labels, variables, d.get("state_names"), counts, exact, dict(meta),
                   rewards).validate()

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json_dict()))

    @classmethod
    def load(cls, path: str | Path) -> "DTMC":
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise InputError(f"cannot read model {path}: {exc.strerror}") from None
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ModelError(f"{path} is not JSON ({exc.msg})") from None
        return cls.from_json_dict(d)


def _mask(values: Any, name: str) -> np.ndarray:
    """A label's Boolean vector: Booleans, or numbers 0/1; indices ``[0, 2, 5]`` (read as ``[F, T, T]``
    by a plain cast) or text are a ModelError."""
    a = np.asarray(values)
    if a.dtype == bool:
        return a
    if a.size and (a.dtype.kind not in "iuf" or not np.all((a == 0) | (a == 1))):
        raise ModelError(f"label {name!r} must be a Boolean vector (or 0/1), got values such as "
                         f"{str(a.ravel()[0])[:40]!r}")
    return a.astype(bool)


def _numbers(values: Any, what: str) -> np.ndarray:
    """A flat float array of the numbers of a model file (ValueError for text, Booleans, objects):
    ``np.asarray(["1"], dtype=float)`` would read text, and a Boolean mask ``[false, false, true]``
    read as indices would label states 0 and 0 (and never state 2)."""
    a = np.asarray(values)
    if a.size and a.dtype.kind not in "iuf":
        raise ValueError(f"{what} must be numbers, got {str(a.ravel()[0])[:30]!r}")
    return a.astype(float).ravel()


def _whole(values: Any, what: str) -> np.ndarray:
    """Whole numbers (a state variable's values): 1.7 would otherwise be truncated to 1."""
    a = _numbers(values, what)
    if a.size and (not np.all(np.isfinite(a)) or np.any(a != np.floor(a)) or np.abs(a).max() >= 2**63):
        raise ValueError(f"{what} must hold whole numbers")
    return a.astype(np.int64)


def _indices(values: Any, n: int, what: str) -> np.ndarray:
    """State indices read from a model file: whole numbers in ``0..n-1`` (ValueError otherwise).

    ``astype(int)`` would truncate 0.7 to 0 and numpy would read -1 as the last state, so a malformed
    file would silently label or connect the wrong state."""
    a = _numbers(values, f"{what} indices")
    if a.size and (not np.all(np.isfinite(a)) or np.any(a != np.floor(a)) or a.min() < 0 or a.max() >= n):
        raise ValueError(f"{what} indices must be whole numbers in 0..{n - 1}")
    return a.astype(np.int64)


def _index(value: Any, n: int | None, what: str) -> int:
    """One whole number (``bool`` and fractions refused), in ``0..n-1`` when ``n`` is given."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"{what} must be a whole number, got {value!r}")
    i = int(value)
    if n is not None and not 0 <= i < n:
        raise ValueError(f"{what} {i} out of range 0..{n - 1}")
    return i
