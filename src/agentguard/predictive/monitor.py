"""Bounded-response rules G(phi_s -> F[0,K] phi_t) (Definition 5 of the Pro2Guard paper), their
monitor automaton (Definition 6) and the synchronous product with a DTMC.

Monitor ``A_K = (Q, q0, delta)``: ``Q = {idle} u {wait(i) | i = 0..c} u {viol}``, ``q0 = idle``, and
for the label ``l`` of the state just entered::

    delta(q, l) = wait(c)     if q = idle,    l |= phi_s and not phi_t
                = idle        if q = wait(i), l |= phi_t
                = wait(i-1)   if q = wait(i), i > 0, l |/= phi_t
                = viol        if q = wait(0), l |/= phi_t
                = q           otherwise (viol is absorbing)

Countdown start ``c``: Definition 6 uses ``c = K``; with it, a trigger at step t is violated only if
phi_t fails at every step t..t+K+1 (the monitor reads one more label after wait(0)), i.e. it checks
F[0,K+1]. ``semantics="exact"`` (default) uses ``c = K - 1`` so that a path is flagged exactly when
it violates G(phi_s -> F[0,K] phi_t) on its finite prefix (for K = 0 the trigger itself goes to
``viol``); ``semantics="definition6"`` reproduces the paper's monitor literally. Either way the
transition function is the one above; only the start value of the countdown differs.

Product ``M' = M x A``: states ``(s, q)``; ``(s, q) -> (s', delta(q, L(s')))`` with probability
``P(s, s')``; the initial product state of a DTMC state s is ``(s, delta(idle, L(s)))`` (the monitor
reads the first label too). Guarantees of :func:`product`: every product state has exactly one
distribution, the DTMC row of its s (so rows sum to 1: complete, deterministic, deadlock-free); only
the part reachable from the chosen start states is built; ``viol`` is a label; and
:meth:`Product.index` / :meth:`Product.advance` give the runtime guard the (s, q) lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..core.errors import InputError, ModelError
from .dtmc import DTMC

__all__ = ["BoundedResponse", "MonitorAutomaton", "Product", "product", "state_formula_vector"]

Formula = str | np.ndarray | Callable[[DTMC], np.ndarray]


def state_formula_vector(model: DTMC, phi: Formula) -> np.ndarray:
    """Truth of a state formula at every state of ``model`` (boolean array of length n).

    ``phi``: a boolean array, a callable ``model -> array``, or text. Text is parsed by
    :func:`agentguard.spec.pctl.parse_state_formula` (PRISM syntax: ``"unsafe" & s=3``) when that
    module is installed; a bare label name always works.
    """
    if isinstance(phi, np.ndarray):
        v = np.asarray(phi, dtype=bool)
    elif callable(phi):
        v = np.asarray(phi(model), dtype=bool)
    elif isinstance(phi, str):
        name = phi.strip().strip('"')
        if name in model.labels:
            v = model.labels[name]
        elif name in ("true", "false"):
            v = np.full(model.n, name == "true")
        else:
            try:
                from ..spec.pctl import parse_state_formula  # provided by the model-checking module
            except ImportError:
                raise InputError(f"unknown label {name!r} (known labels: {', '.join(sorted(model.labels))})") from None
            v = np.asarray(parse_state_formula(phi).evaluate(model), dtype=bool)
    else:
        raise InputError(f"a state formula must be text, a boolean array or a callable, got {type(phi).__name__}")
    if v.shape != (model.n,):
        raise InputError(f"state formula gives {v.shape}, expected ({model.n},)")
    return v


@dataclass(frozen=True)
class BoundedResponse:
    """The rule ``G(trigger -> F[0,K] response)`` (Definition 5)."""

    trigger: Formula
    response: Formula
    K: int
    semantics: str = "exact"

    def __post_init__(self) -> None:
        if isinstance(self.K, bool) or not isinstance(self.K, (int, np.integer)) or self.K < 0:
            raise InputError(f"K must be an integer >= 0, got {self.K!r}")
        if self.semantics not in ("exact", "definition6"):
            raise InputError(f"semantics must be 'exact' or 'definition6', got {self.semantics!r}")

    def monitor(self) -> MonitorAutomaton:
        return MonitorAutomaton(self.K - 1 if self.semantics == "exact" else self.K)

    def __str__(self) -> str:
        def s(x: Any) -> str:
            return x if isinstance(x, str) else "<phi>"

        return f"G({s(self.trigger)} -> F[0,{self.K}] {s(self.response)})"


@dataclass(frozen=True)
class MonitorAutomaton:
    """Definition 6 with countdown start ``c`` (``c = -1``: a trigger violates at once).

    State indices: ``0 = idle``, ``1 + i = wait(i)`` for ``i = 0..c``, ``last = viol``.
    """

    c: int

    @property
    def size(self) -> int:
        return max(self.c, -1) + 3

    @property
    def idle(self) -> int:
        return 0

    @property
    def viol(self) -> int:
        return self.size - 1

    def wait(self, i: int) -> int:
        if not 0 <= i <= self.c:
            raise InputError(f"wait({i}) does not exist (countdown 0..{self.c})")
        return 1 + i

    def name(self, q: int) -> str:
        if q == 0:
            return "idle"
        if q == self.viol:
            return "viol"
        return f"wait({q - 1})"

    def step(self, q: int, trigger: bool, response: bool) -> int:
        """``delta(q, l)`` for one label (the runtime monitor)."""
        return int(self.step_vec(np.array([q]), np.array([trigger]), np.array([response]))[0])

    def step_vec(self, q: np.ndarray | int, trigger: np.ndarray, response: np.ndarray) -> np.ndarray:
        """``delta`` element-wise over arrays of monitor states and labels (vectorised)."""
        trigger = np.asarray(trigger, dtype=bool)
        response = np.asarray(response, dtype=bool)
        q = np.broadcast_to(np.asarray(q, dtype=np.int64), trigger.shape)
        out = q.copy()
        start = self.wait(self.c) if self.c >= 0 else self.viol
        waiting = (q >= 1) & (q < self.viol)
        out = np.where((q == 0) & trigger & ~response, start, out)
        out = np.where(waiting & response, 0, out)
        out = np.where(waiting & ~response & (q > 1), q - 1, out)
        out = np.where(waiting & ~response & (q == 1), self.viol, out)
        return out


@dataclass
class Product:
    """The reachable synchronous product ``M x A`` as a DTMC, plus the (s, q) indexing."""

    model: DTMC
    pairs: np.ndarray  # (N, 2): product index -> (DTMC state s, monitor state q)
    monitor: MonitorAutomaton
    trigger: np.ndarray
    response: np.ndarray
    base_n: int
    _lookup: dict[tuple[int, int], int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._lookup = {(int(s), int(q)): i for i, (s, q) in enumerate(self.pairs)}

    @property
    def n(self) -> int:
        return self.model.n

    def index(self, s: int, q: int) -> int:
        """Product index of ``(s, q)``; ModelError when that pair is not in the built product."""
        try:
            return self._lookup[(int(s), int(q))]
        except KeyError:
            raise ModelError(
                f"product state (s={s}, q={self.monitor.name(int(q)) if 0 <= q < self.monitor.size else q}) "
                "is not in the product (build it with states='all' to cover every pair)"
            ) from None

    def start(self, s: int) -> tuple[int, int]:
        """The product state ``(s, delta(idle, L(s)))`` a run entering s first is in."""
        return int(s), self.advance(self.monitor.idle, s)

    def advance(self, q: int, s_next: int) -> int:
        """Monitor state after entering DTMC state ``s_next`` from monitor state ``q``."""
        return self.monitor.step(q, bool(self.trigger[s_next]), bool(self.response[s_next]))

    def safe_probability(self) -> np.ndarray:
        """``P[G !viol]`` from every product state (uses agentguard.predictive.checker)."""
        from .checker import globally  # the model-checking module

        return np.asarray(globally(self.model.matrix, ~self.model.labels["viol"]), dtype=float)


def _bfs(M: sp.csr_matrix, starts: np.ndarray) -> np.ndarray:
    seen = np.zeros(M.shape[0], dtype=bool)
    seen[starts] = True
    frontier = np.unique(starts)
    while frontier.size:
        sub = M[frontier]
        nxt = np.unique(sub.indices)
        nxt = nxt[~seen[nxt]]
        seen[nxt] = True
        frontier = nxt
    return seen


def product(
    model: DTMC,
    rule: BoundedResponse,
    states: str | Sequence[int] = "all_starts",
) -> Product:
    """Build the synchronous product of ``model`` and the monitor of ``rule`` (module docstring).

    ``states``: which start states the reachable part is built from: ``"initial"`` (only
    ``(initial, delta(idle, L(initial)))``), ``"all_starts"`` (default: that pair for every DTMC state,
    so a run starting anywhere is covered), ``"all"`` (every pair (s, q), reachable or not), or a list
    of DTMC state indices.
    """
    model.validate()
    mon = rule.monitor()
    trig = state_formula_vector(model, rule.trigger)
    resp = state_formula_vector(model, rule.response)
    n, Qn = model.n, mon.size
    P = model.matrix.tocoo()
    # delta(q, L(s')) for every (q, s'): (Qn, n)
    qs = np.arange(Qn)[:, None]
    nxt = mon.step_vec(np.broadcast_to(qs, (Qn, n)), np.broadcast_to(trig, (Qn, n)), np.broadcast_to(resp, (Qn, n)))
    # full product: (s, q) -> (s', nxt[q, s']) with P(s, s'); id = s * Qn + q
    e = P.nnz
    src_s = np.repeat(P.row, Qn)
    dst_s = np.repeat(P.col, Qn)
    prob = np.repeat(P.data, Qn)
    q = np.tile(np.arange(Qn), e)
    src = src_s * Qn + q
    dst = dst_s * Qn + nxt[q, dst_s]
    full = sp.csr_matrix((prob, (src, dst)), shape=(n * Qn, n * Qn))
    first_q = nxt[0]  # delta(idle, L(s)) for every s
    if isinstance(states, str):
        if states == "initial":
            starts = np.array([model.initial * Qn + first_q[model.initial]])
        elif states == "all_starts":
            starts = np.arange(n) * Qn + first_q
        elif states == "all":
            starts = np.arange(n * Qn)
        else:
            raise InputError(f"states must be 'initial', 'all_starts', 'all' or a list, got {states!r}")
    else:
        idx = np.asarray(list(states), dtype=np.int64)
        if idx.size == 0 or idx.min() < 0 or idx.max() >= n:
            raise InputError("start states out of range")
        starts = idx * Qn + first_q[idx]
    keep = np.flatnonzero(_bfs(full, starts))
    sub = full[keep][:, keep].tocsr()
    pairs = np.stack([keep // Qn, keep % Qn], axis=1)
    s_of, q_of = pairs[:, 0], pairs[:, 1]
    labels = {k: v[s_of] for k, v in model.labels.items() if k != "viol"}
    labels["viol"] = q_of == mon.viol
    labels["idle"] = q_of == 0
    variables = {"s": s_of, "q": q_of}
    base_names = model.state_names or [str(i) for i in range(n)]
    names = [f"({base_names[s]},{mon.name(q)})" for s, q in pairs]
    pos = {int(k): i for i, k in enumerate(keep)}
    init_key = model.initial * Qn + int(first_q[model.initial])
    init = pos.get(init_key, 0)
    meta = {"product_of": model.meta.get("name", ""), "rule": str(rule), "semantics": rule.semantics,
            "monitor_states": [mon.name(i) for i in range(Qn)], "K": int(rule.K)}
    pm = DTMC(sub, init, labels, variables, names, None, None, meta)
    sums = np.asarray(sub.sum(axis=1)).ravel()
    if np.any(np.abs(sums - 1) > 1e-9) or np.any(np.diff(sub.indptr) == 0):
        raise ModelError("product is not complete (a row does not sum to 1)")  # cannot happen for a valid DTMC
    return Product(pm.validate(), pairs, mon, trig, resp, n)
