"""Learning a DTMC from agent traces (Algorithm 1 and Eq. 1 of the Pro2Guard paper).

:class:`DTMCLearner` is incremental: feed it traces (concrete states, abstracted by an
:class:`~agentguard.spec.predicates.Abstraction`) or abstract paths, one at a time or in batches;
it keeps the transition counts ``n_ij``, and

* :meth:`DTMCLearner.model` returns the DTMC with valid-transition-aware Laplace smoothing,
  exactly Eq. 1::

      P(s_i, s_j) = (n_ij + alpha) / (n_i + k_i * alpha)   if valid_transition(s_i, s_j)
                  = 0                                        otherwise

  with ``n_i = sum_j n_ij`` and ``k_i`` the number of valid successors of ``s_i`` among the learned
  states (line 6 of Algorithm 1: the state space is the set of observed states). ``alpha = 0`` is
  the plain frequency estimate.
  *Empty rows* (``n_i + k_i alpha = 0``, i.e. a state never left in the data and ``alpha = 0``):
  the row is the ``alpha -> 0+`` limit of Eq. 1, uniform over the valid successors
  (``empty_row="uniform"``, default), or a self-loop (``empty_row="absorbing"``); a state with no
  valid successor at all is always made absorbing (a self-loop), so every row sums to 1.
  *Observed transitions that valid_transition forbids*: ``on_invalid="error"`` (default: InputError
  naming the pair, since Eq. 1 would give a row that does not sum to 1), ``"drop"`` (not counted).
* :attr:`DTMCLearner.done` is the PAC stopping rule of Algorithm 1 line 11 (see
  :mod:`agentguard.predictive.pac`), re-evaluated on the current counts; :meth:`pac_report`
  gives per-state counts, required counts and whether the rule holds.

Counting is vectorised: a batch's transitions become integer pairs ``src * n + dst`` counted by
``np.bincount`` (or ``np.unique`` for large ``n``) and added to a sparse count matrix; there is no
Python loop per transition. (Turning state *names* into indices is one C-level ``map`` over a
dict; abstracting *concrete* states evaluates the user's predicates once per state.)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..core.errors import InputError
from ..core.types import Trace
from ..spec.predicates import Abstraction
from ..spec.history import NO_STATE_HINT
from ._learn_rows import _exact_rows, _whole, constant_labels, sample_paths
from .dtmc import DTMC
from .pac import PAC_VARIANTS, PACReport, pac_report

__all__ = ["DTMCLearner", "constant_labels", "count_transitions", "learn_dtmc", "sample_paths", "smoothed_matrix"]


def count_transitions(flat: np.ndarray, lengths: np.ndarray, n: int) -> sp.csr_matrix:
    """Transition counts of paths given as one flat index array and per-path lengths (vectorised).

    ``flat`` holds the state indices of all paths back to back; ``lengths[k]`` is the number of
    states of path ``k``. Returns the n x n count matrix ``C[i, j] = #(i -> j)``.
    """
    flat, lengths = _whole(flat, "state indices"), _whole(lengths, "path lengths")
    if lengths.size and lengths.min() < 0:  # a negative length shifts every path boundary after it
        raise InputError("path lengths must be >= 0")
    if flat.size != int(lengths.sum()):
        raise InputError(f"paths: {flat.size} states but lengths sum to {int(lengths.sum())}")
    if flat.size and (flat.min() < 0 or flat.max() >= n):
        raise InputError(f"state index out of range 0..{n - 1}")
    if flat.size < 2:
        return sp.csr_matrix((n, n), dtype=np.float64)
    keep = np.ones(flat.size - 1, dtype=bool)
    ends = np.cumsum(lengths)[:-1] - 1  # last state of each path but the final one
    ends = ends[(ends >= 0) & (ends < flat.size - 1)]
    keep[ends] = False
    src, dst = flat[:-1][keep], flat[1:][keep]
    codes = src * n + dst
    if n * n <= 1 << 22:
        c = np.bincount(codes, minlength=n * n)
        nz = np.flatnonzero(c)
        vals = c[nz]
    else:
        nz, vals = np.unique(codes, return_counts=True)
    return sp.csr_matrix((vals.astype(np.float64), (nz // n, nz % n)), shape=(n, n))


def smoothed_matrix(
    counts: sp.csr_matrix, valid: np.ndarray, alpha: float = 1.0, empty_row: str = "uniform"
) -> sp.csr_matrix:
    """Eq. 1 of the Pro2Guard paper on a count matrix and a valid-successor mask (see module doc).

    Counts on invalid pairs must have been removed (or rejected) by the caller.
    """
    if alpha < 0 or not math.isfinite(alpha):
        raise InputError(f"alpha must be a finite number >= 0, got {alpha}")
    if empty_row not in ("uniform", "absorbing"):
        raise InputError(f"empty_row must be 'uniform' or 'absorbing', got {empty_row!r}")
    n = counts.shape[0]
    valid = np.asarray(valid, dtype=bool).copy()
    C = sp.csr_matrix(counts)
    n_i = np.asarray(C.sum(axis=1)).ravel()
    k = valid.sum(axis=1)
    denom = n_i + k * alpha
    empty = denom == 0
    rows, cols = np.nonzero(valid)
    vals = np.asarray(C[rows, cols]).ravel() + alpha
    with np.errstate(invalid="ignore", divide="ignore"):
        vals = vals / denom[rows]
    keep = ~empty[rows]
    rows, cols, vals = rows[keep], cols[keep], vals[keep]
    # empty rows: uniform over valid successors (alpha -> 0+ limit) or a self-loop
    e_rows = np.flatnonzero(empty & (k > 0)) if empty_row == "uniform" else np.empty(0, np.int64)
    if e_rows.size:
        er, ec = np.nonzero(valid[e_rows])
        rows = np.concatenate([rows, e_rows[er]])
        cols = np.concatenate([cols, ec])
        vals = np.concatenate([vals, 1.0 / k[e_rows[er]]])
    loops = np.flatnonzero(empty & ((k == 0) | (empty_row == "absorbing")))
    rows = np.concatenate([rows, loops])
    cols = np.concatenate([cols, loops])
    vals = np.concatenate([vals, np.ones(loops.size)])
    P = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    P.sum_duplicates()
    P.eliminate_zeros()
    return P


class DTMCLearner:
    """Incremental DTMC learner with Eq. 1 smoothing and the PAC stopping rule (Algorithm 1).

    Args:
        abstraction: maps concrete states to bit strings and supplies ``valid_transition``, the
            labels (each predicate, ``unsafe``) and the terminal state. Optional when you feed
            abstract paths (:meth:`add_paths`); then use ``valid``/``terminal``/``labels``.
        alpha: Laplace constant of Eq. 1 (0 = plain frequency).
        epsilon, delta: the PAC accuracy and confidence of the stopping rule.
        target: the label whose reachability the PAC rule protects (default ``unsafe``).
        valid: without an abstraction: ``"any"``, a callable ``(a, b) -> bool`` on state names, or a
            boolean matrix over ``states``.
        states: optional fixed list of state names, in index order (states observed later are
            appended); needed when ``valid`` is a matrix.
        terminal: without an abstraction: name of an absorbing end state appended to each path.
        labels: extra labels, name -> set of state names (or a callable name -> bool).
        on_invalid: ``"error"`` or ``"drop"`` for observed transitions ``valid`` forbids.
        empty_row: ``"uniform"`` or ``"absorbing"`` (see the module docstring).
        pac_variant: ``"conservative"`` (default), ``"appendix"`` or ``"line11"`` (see pac.py).

    Scale: counts are sparse; the valid-successor mask is a dense n x n boolean matrix over the
    learned abstract states (fine for thousands of states; abstractions are usually far smaller).
    """

    def __init__(
        self,
        abstraction: Abstraction | None = None,
        *,
        alpha: float | Fraction = 1,
        epsilon: float = 0.05,
        delta: float = 0.05,
        target: str = "unsafe",
        valid: str | Callable[[str, str], bool] | np.ndarray = "any",
        states: Sequence[str] | None = None,
        terminal: str | None = None,
        labels: dict[str, Any] | None = None,
        on_invalid: str = "error",
        empty_row: str = "uniform",
        pac_variant: str = "conservative",
    ) -> None:
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float, Fraction)) or alpha < 0 \
                or not math.isfinite(float(alpha)):
            raise InputError(f"alpha must be a finite number >= 0, got {alpha!r}")
        for nm, v in (("epsilon", epsilon), ("delta", delta)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
                raise InputError(f"{nm} must lie in (0, 1), got {v!r}")
        if on_invalid not in ("error", "drop"):
            raise InputError(f"on_invalid must be 'error' or 'drop', got {on_invalid!r}")
        if pac_variant not in PAC_VARIANTS:
            raise InputError(f"pac_variant must be one of {PAC_VARIANTS}, got {pac_variant!r}")
        if empty_row not in ("uniform", "absorbing"):
            raise InputError(f"empty_row must be 'uniform' or 'absorbing', got {empty_row!r}")
        self.abstraction = abstraction
        self.alpha = alpha
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.target = target
        self.terminal = abstraction.terminal if abstraction is not None else terminal
        self._valid = valid
        self._labels = dict(labels or {})
        self.on_invalid = on_invalid
        self.empty_row = empty_row
        self.pac_variant = pac_variant
        self.states: list[str] = []
        self.index: dict[str, int] = {}
        self.counts = sp.csr_matrix((0, 0), dtype=np.float64)
        self.initial_counts = np.zeros(0, dtype=np.int64)
        self.n_traces = 0
        self._cache: dict[str, Any] = {}
        self.last_stats: dict[str, Any] = {}
        if isinstance(valid, np.ndarray) and (states is None or valid.shape != (len(states), len(states))):
            raise InputError("a valid-transition matrix needs 'states' of matching size")
        for s in states or []:
            if abstraction is not None:
                abstraction.check_state(s)
            self._register(s)

    # --- state registry ---------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.states)

    def _register(self, name: str) -> int:
        i = self.index.get(name)
        if i is None:
            i = len(self.states)
            self.states.append(name)
            self.index[name] = i
        return i

    def _grow(self) -> None:
        n = self.n
        if self.counts.shape[0] != n:
            c = self.counts.tolil()
            c.resize((n, n))
            self.counts = c.tocsr()
            ic = np.zeros(n, dtype=np.int64)
            ic[: self.initial_counts.size] = self.initial_counts
            self.initial_counts = ic

    # --- feeding data --------------------------------------------------------------------------
    def add_trace(self, trace: Trace | Sequence[Any]) -> DTMCLearner:
        """Add one trace (Algorithm 1, lines 4-9); see :meth:`add`."""
        return self.add([trace])

    def add(self, traces: Iterable[Trace | Sequence[Any]]) -> DTMCLearner:
        """Add traces of concrete states: :class:`Trace` objects (each step's ``state``) or lists.

        Each concrete state is abstracted; errors name the trace and step.
        """
        runs = ((tr.run_id, tr.states) if isinstance(tr, Trace) else (str(t_no), list(tr))
                for t_no, tr in enumerate(traces))
        return self.add_runs(runs, batch_states=None)

    def add_runs(self, runs: Iterable[tuple[str, Sequence[Any]]], batch_states: int | None = 200_000,
                 abstracted: bool = False) -> DTMCLearner:
        """Add ``(run_id, concrete states)`` pairs, abstracting each run as it comes.

        Paths are counted every ``batch_states`` states (None: once at the end), so memory stays
        bounded by one batch whatever the number of runs. ``abstracted``: the states are already
        bit strings from this learner's abstraction (as :func:`iter_parquet_runs` gives them).
        """
        if self.abstraction is None:
            raise InputError("add() needs an abstraction for concrete states; use add_paths() for abstract ones")
        abstract = self.abstraction.abstractor()
        paths: list[list[str]] = []
        pending = 0
        for rid, states in runs:
            if not states:
                raise InputError(f"trace {rid} has no steps")
            path = []
            for s_no, st in enumerate(states):
                if st is None:
                    raise InputError(f"trace {rid} step {s_no} has no 'state'{NO_STATE_HINT}")
                if abstracted:
                    path.append(st)
                    continue
                try:
                    path.append(abstract(st))
                except InputError as exc:
                    raise InputError(f"trace {rid} step {s_no}: {exc}") from None
            paths.append(path)
            pending += len(path)
            if batch_states is not None and pending >= batch_states:
                self.add_paths(paths)
                paths, pending = [], 0
        return self.add_paths(paths) if paths else self

    def add_file(self, path: str, batch_states: int = 200_000, engine: str = "rows") -> DTMCLearner:
        """Learn from a trace file, streamed: JSON Lines, or Parquet (a ``.parquet`` file or a folder
        of them, the service's trace store). Memory is bounded by one batch, not the file size; see
        :mod:`agentguard.predictive.trace_stream`.

        ``engine``: ``"rows"`` (each state parsed and abstracted in Python) or ``"columnar"``
        (Parquet only: predicates evaluated column-wise by :mod:`.columnar_learn`, the same model;
        its statistics, fallback rows included, land in :attr:`last_stats`)."""
        from pathlib import Path

        from .trace_stream import add_jsonl_runs, iter_parquet_runs

        if self.abstraction is None:
            raise InputError("add_file() needs an abstraction")
        if engine not in ("rows", "columnar"):
            raise InputError(f"engine must be 'rows' or 'columnar', got {engine!r}")
        p = Path(path)
        parquet = p.is_dir() or p.suffix.lower() in (".parquet", ".pq")
        if engine == "columnar":
            if not parquet:
                raise InputError("the columnar engine reads Parquet (a .parquet file or a folder of them)")
            from .columnar_learn import learn_parquet_columnar

            self.last_stats = learn_parquet_columnar(self, p)
            return self
        if parquet:
            runs = iter_parquet_runs(p, self.abstraction.abstractor())
            return self.add_runs(runs, batch_states, abstracted=True)
        return add_jsonl_runs(self.add_runs, p, batch_states)  # a run it refuses is named by FILE:LINE

    def add_counts(self, src: Sequence[str], dst: Sequence[str], counts: Sequence[int],
                   initial: dict[str, int], runs: int) -> DTMCLearner:
        """Add transition counts computed elsewhere (e.g. :func:`duckdb_counts` over Parquet):
        ``counts[k]`` transitions ``src[k] -> dst[k]``, ``initial[s]`` runs starting in ``s``,
        ``runs`` runs in all. The terminal state must already be in the pairs."""
        names = list(dict.fromkeys([*src, *dst, *initial]))
        for u in names:
            if not isinstance(u, str):
                raise InputError(f"state names must be strings, got {u!r}")
            if self.abstraction is not None:
                self.abstraction.check_state(u)
            self._register(u)
        self._grow()
        n = self.n
        c = np.asarray(counts, dtype=np.float64)
        if c.size != len(src) or c.size != len(dst) or (c.size and not (np.isfinite(c).all() and c.min() >= 0)):
            raise InputError("add_counts needs src, dst and non-negative counts of the same length")
        rows = np.fromiter(map(self.index.__getitem__, src), np.int64, len(src))
        cols = np.fromiter(map(self.index.__getitem__, dst), np.int64, len(dst))
        self.counts = (self.counts + sp.csr_matrix((c, (rows, cols)), shape=(n, n))).tocsr()
        for s, k in initial.items():
            self.initial_counts[self.index[s]] += int(k)
        self.n_traces += int(runs)
        self._cache.clear()
        return self

    def add_paths(self, paths: Iterable[Sequence[str]]) -> DTMCLearner:
        """Add abstract paths (sequences of state names); counting is vectorised over the batch."""
        names: list[str] = []
        lengths: list[int] = []
        for p in paths:
            p = list(p)
            if not p:
                raise InputError(f"path {len(lengths)} is empty: a path needs at least one state")
            if self.terminal is not None and p[-1] != self.terminal:
                p.append(self.terminal)
            if self.abstraction is not None:
                for s in set(p):
                    try:
                        self.abstraction.check_state(s)
                    except InputError as exc:
                        raise InputError(f"path {len(lengths)}: {exc}") from None
            names.extend(p)
            lengths.append(len(p))
        if not lengths:
            return self
        for u in dict.fromkeys(names):  # distinct names in order of first appearance (C-level)
            if u not in self.index:
                if not isinstance(u, str):
                    raise InputError(f"state names must be strings, got {u!r}")
                self._register(u)
        flat = np.fromiter(map(self.index.__getitem__, names), dtype=np.int64, count=len(names))
        return self.add_index_paths(flat, np.asarray(lengths))

    def add_index_paths(self, flat: np.ndarray, lengths: np.ndarray) -> DTMCLearner:
        """Add paths already given as state indices (flat array + lengths); fully vectorised."""
        self._grow()
        flat, lengths = _whole(flat, "state indices"), _whole(lengths, "path lengths")
        if lengths.size == 0:
            return self
        if np.any(lengths <= 0):
            raise InputError("every path needs at least one state")
        C = count_transitions(flat, lengths, self.n)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self.initial_counts += np.bincount(flat[starts], minlength=self.n)
        self.counts = (self.counts + C).tocsr()
        self.n_traces += int(lengths.size)
        self._cache.clear()
        return self

    # --- the model -------------------------------------------------------------------------------
    def valid_matrix(self) -> np.ndarray:
        """V[i, j] = valid_transition(states[i], states[j]) over the current states."""
        v = self._cache.get("valid")
        if v is not None:
            return v
        n = self.n
        if self.abstraction is not None:
            v = self.abstraction.valid_matrix(self.states)
        elif isinstance(self._valid, np.ndarray):
            m = self._valid.shape[0]
            v = np.ones((n, n), dtype=bool)
            v[:m, :m] = self._valid
        elif self._valid == "any":
            v = np.ones((n, n), dtype=bool)
        elif callable(self._valid):
            v = np.array([[bool(self._valid(a, b)) for b in self.states] for a in self.states], bool).reshape(n, n)
        else:
            raise InputError(f"valid must be 'any', a callable or a matrix, got {self._valid!r}")
        if self.terminal is not None and self.abstraction is None and self.terminal in self.index:
            t = self.index[self.terminal]
            v[:, t] = True
            v[t, :] = False
            v[t, t] = True
        self._cache["valid"] = v
        return v

    def _clean_counts(self) -> sp.csr_matrix:
        self._grow()
        C = self.counts
        V = self.valid_matrix()
        coo = C.tocoo()
        bad = ~V[coo.row, coo.col]
        if bad.any():
            if self.on_invalid == "error":
                i, j = int(coo.row[bad][0]), int(coo.col[bad][0])
                raise InputError(
                    f"observed transition {self.states[i]} -> {self.states[j]} "
                    f"({int(coo.data[bad][0])}x) is not a valid transition ({int(bad.sum())} such pairs)"
                )
            C = sp.csr_matrix((coo.data[~bad], (coo.row[~bad], coo.col[~bad])), shape=C.shape)
        return C

    def matrix(self) -> sp.csr_matrix:
        """The smoothed transition matrix of Eq. 1 over the current states."""
        P = self._cache.get("P")
        if P is None:
            self._grow()
            if self.n == 0:
                raise InputError("no traces learned yet")
            P = smoothed_matrix(self._clean_counts(), self.valid_matrix(), float(self.alpha), self.empty_row)
            self._cache["P"] = P
        return P

    def label_vectors(self) -> dict[str, np.ndarray]:
        if self.abstraction is not None:
            d = self.abstraction.all_labels(self.states)
        else:
            d = {}
            if self.terminal is not None:
                d[self.terminal] = np.array([s == self.terminal for s in self.states])
        for name, spec in self._labels.items():
            d[name] = np.array([bool(spec(s)) if callable(spec) else s in spec for s in self.states], dtype=bool)
        d.setdefault("unsafe", np.zeros(self.n, dtype=bool))
        return d

    def model(self, exact: bool | None = None) -> DTMC:
        """The learned DTMC (Eq. 1), with counts, labels, state names and the PAC report in meta.

        ``exact``: also store exact rational rows (default: when alpha is an int/Fraction and the
        model has at most 100,000 transitions).
        """
        P = self.matrix()
        C = self._clean_counts()
        valid = self.valid_matrix()
        init = int(np.argmax(self.initial_counts)) if self.initial_counts.any() else 0
        if exact is None:
            exact = isinstance(self.alpha, (int, Fraction)) and P.nnz <= 100_000
        ex = _exact_rows(C, P, valid, Fraction(self.alpha), self.empty_row) if exact else None
        report = self.pac_report()
        meta: dict[str, Any] = {
            "learner": "agentguard.predictive.learn (Eq. 1 of Pro2Guard)",
            "alpha": float(self.alpha),
            "traces": self.n_traces,
            "transitions": int(C.sum()),
            "empty_row": self.empty_row,
            "initial_distribution": {self.states[i]: int(c) for i, c in enumerate(self.initial_counts) if c},
            "valid_successors": [int(x) for x in valid.sum(axis=1)],
            "pac": report.to_dict(),
        }
        if self.abstraction is not None:
            meta["abstraction"] = self.abstraction.describe()
            meta["warnings"] = constant_labels(self.abstraction, self.states, self.label_vectors())
        if self.terminal is not None:
            meta["terminal"] = self.terminal
        return DTMC(
            P, init, self.label_vectors(), {"s": np.arange(self.n)}, list(self.states), C, ex, meta
        ).validate()

    # --- the PAC stopping rule ---------------------------------------------------------------------
    def pac_report(self) -> PACReport:
        """Algorithm 1 line 11 on the current counts (see :mod:`agentguard.predictive.pac`)."""
        rep = self._cache.get("pac")
        if rep is None:
            P = self.matrix()
            labels = self.label_vectors()
            if self.target not in labels:
                raise InputError(f"PAC target label {self.target!r} is not defined")
            det = np.zeros(self.n, dtype=bool)
            if self.terminal is not None and self.terminal in self.index:
                det[self.index[self.terminal]] = True
            rep = pac_report(self._clean_counts(), P, self.valid_matrix(), labels[self.target], self.epsilon,
                             self.delta, self.states, det, self.pac_variant)
            rep.traces = self.n_traces
            self._cache["pac"] = rep
        return rep

    @property
    def done(self) -> bool:
        """True once every state satisfies the PAC stopping rule (Algorithm 1, line 11)."""
        if self.n_traces == 0:
            return False
        return self.pac_report().done


def learn_dtmc(traces: Iterable[Trace | Sequence[Any]], abstraction: Abstraction, **kwargs: Any) -> DTMC:
    """One-shot convenience: learn a DTMC from concrete-state traces with ``abstraction``."""
    return DTMCLearner(abstraction, **kwargs).add(traces).model()
