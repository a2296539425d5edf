"""Kernel-averager fitted Q-iteration on the discounted safety Bellman equation (Eq. 5 of the ReGuard paper).

Over a fixed set of *anchor* latents ``z_1..z_n`` (the encoded training states), with one transition
``(z_i, a, l(s+), z+, done)`` for every anchor and action, the Q-function is a table ``T[i, a]`` read
through a k-nearest-neighbour averager::

    Q(z, a)   = (1/k) sum_{j in kNN(z)} T[j, a]                  (Euclidean neighbours among the anchors)
    T_m[i, a] = (1 - gamma_m) l(s+) + gamma_m min{ l(s+), max_a+ Q_{m-1}(z+, a+) }      (Eq. 5)
    T_m[i, a] = l(s+)                                               where s+ is a failure

The Bellman target is Eq. 5 exactly as written; only the function class differs from the paper's neural
network. A k-NN average is a non-expansion in the sup norm, so each iteration is a gamma-contraction
and the iteration converges to its unique fixed point for any gamma < 1 (Gordon, "Stable function
approximation in dynamic programming", ICML 1995; Ormoneit & Sen, "Kernel-based reinforcement
learning", 2002). A neural regressor carries no such guarantee, and on a noisy text latent the neural
FQI of :mod:`.fqi` drifts towards "safe" as gamma grows (``docs/control.md``). The table starts at the
optimistic ``T_0[i, a] = l(s+)`` and ``gamma`` anneals towards ``gamma_end`` (``1 - gamma`` halves every
``gamma_period`` iterations); iteration stops when ``gamma = gamma_end`` and the sup-norm change is below
``tol``.

A decision is one matrix-vector product against the anchors plus a partial sort (no network).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..core.errors import InputError
from .bellman import discounted_safety_target
from .ddqn import Transitions, _annealed_gamma

__all__ = ["KernelFQIConfig", "KernelQ", "kernel_fitted_q_iteration", "nearest_anchors"]


@dataclass
class KernelFQIConfig:
    """Neighbours, discount schedule and stopping rule of :func:`kernel_fitted_q_iteration`."""

    k: int = 10
    gamma_start: float = 0.9
    gamma_end: float = 0.999
    gamma_period: int = 20
    tol: float = 1e-7
    max_iterations: int = 200_000

    def gamma(self, m: int) -> float:
        return _annealed_gamma(self.gamma_start, self.gamma_end, self.gamma_period, m)


def nearest_anchors(anchors: np.ndarray, z: np.ndarray, k: int, cells: int = 16_000_000) -> np.ndarray:
    """Indices (m, k) of the ``k`` anchors nearest to each row of ``z`` (Euclidean), each row sorted by
    distance, then index. Brute force in float64, at most ``cells`` distances (128 MB) at a time;
    deterministic."""
    a = np.asarray(anchors, np.float64)
    z = np.atleast_2d(np.asarray(z, np.float64))
    if a.ndim != 2 or z.shape[1] != a.shape[1]:
        raise InputError(f"latent has dimension {z.shape[1]}, the anchors have {a.shape[1]}")
    if not 1 <= k <= len(a):
        raise InputError(f"k must be in 1..{len(a)}, got {k}")
    a2 = np.einsum("ij,ij->i", a, a)
    out = np.empty((len(z), k), np.int64)
    chunk = max(1, cells // len(a))
    for s in range(0, len(z), chunk):
        zz = z[s:s + chunk]
        d = a2[None, :] - 2.0 * zz @ a.T  # |z|^2 is constant per row: it does not change the order
        part = np.argpartition(d, k - 1, axis=1)[:, :k] if k < len(a) else np.tile(np.arange(len(a)), (len(zz), 1))
        dk = np.take_along_axis(d, part, axis=1)
        order = np.lexsort((part, dk), axis=1)
        out[s:s + chunk] = np.take_along_axis(part, order, axis=1)
    return out


@dataclass
class KernelQ:
    """``q_values(z) -> (n, n_actions)``: the mean of the table rows of the ``k`` nearest anchors of ``z``.

    Satisfies :class:`~agentguard.control.filter.QFunction`, so :class:`SafetyFilter` uses it like a
    Q-network. ``meta`` may hold numpy arrays (e.g. a text encoder's projection); :meth:`save` writes them
    as arrays of a compressed ``.npz``, everything else as JSON.
    """

    anchors: np.ndarray
    table: np.ndarray
    k: int
    history: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.anchors = np.asarray(self.anchors, np.float32)
        self.table = np.asarray(self.table, np.float64)
        if self.anchors.ndim != 2 or self.table.ndim != 2 or len(self.anchors) != len(self.table):
            raise InputError("anchors (n, d) and table (n, n_actions) must have the same n")
        if not 1 <= self.k <= len(self.anchors):
            raise InputError(f"k must be in 1..{len(self.anchors)}")

    @property
    def in_dim(self) -> int:
        return int(self.anchors.shape[1])

    @property
    def n_actions(self) -> int:
        return int(self.table.shape[1])

    def q_values(self, z: np.ndarray) -> np.ndarray:
        z = np.atleast_2d(np.asarray(z, np.float32))
        if z.shape[1] != self.in_dim:
            raise InputError(f"latent has dimension {z.shape[1]}, the kernel Q expects {self.in_dim}")
        if not np.isfinite(z).all():
            raise InputError("latent contains NaN or infinity")
        return self.table[nearest_anchors(self.anchors, z, self.k)].mean(axis=1)

    def save(self, path: str) -> None:
        arrays = {f"meta__{k}": np.asarray(v, np.float32) for k, v in self.meta.items() if isinstance(v, np.ndarray)}
        plain = {k: v for k, v in self.meta.items() if not isinstance(v, np.ndarray)}
        header = json.dumps({"k": self.k, "history": self.history, "seconds": self.seconds, "meta": plain},
                            default=float)
        np.savez_compressed(path, anchors=self.anchors, table=self.table, header=np.array(header), **arrays)

    @classmethod
    def load(cls, path: str) -> KernelQ:
        try:
            with np.load(path, allow_pickle=False) as d:
                head = json.loads(str(d["header"]))
                meta = {**head["meta"], **{k[len("meta__"):]: d[k] for k in d.files if k.startswith("meta__")}}
                return cls(d["anchors"], d["table"], int(head["k"]), head.get("history", []),
                           float(head.get("seconds", 0.0)), meta)
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"cannot load kernel Q {path}: {exc}") from None


def _table_index(state_index: np.ndarray, actions: np.ndarray, n: int, n_actions: int) -> np.ndarray:
    flat = np.asarray(state_index, np.int64) * n_actions + np.asarray(actions, np.int64)
    if flat.min(initial=0) < 0 or flat.max(initial=0) >= n * n_actions:
        raise InputError("state_index / actions out of range")
    if len(flat) != n * n_actions or len(np.unique(flat)) != n * n_actions:
        raise InputError("kernel FQI needs exactly one transition per (anchor, action) pair")
    return flat


def kernel_fitted_q_iteration(anchors: np.ndarray, state_index: np.ndarray, data: Transitions, n_actions: int,
                              config: KernelFQIConfig | None = None) -> KernelQ:
    """Iterate Eq. 5 on the k-NN averager over ``anchors`` until convergence (see the module docstring).

    ``data`` holds one transition per (anchor, action); ``state_index[t]`` is the anchor of transition
    ``t``. Deterministic. ``history`` records the sup-norm change every 50 iterations and at the end.
    """
    cfg = config or KernelFQIConfig()
    if not 0.0 < cfg.gamma_end < 1.0 or not 0.0 < cfg.gamma_start < 1.0:
        raise InputError("gamma must be in (0, 1): the kernel iteration is a gamma-contraction")
    anchors = np.asarray(anchors, np.float32)
    n = len(anchors)
    flat = _table_index(state_index, data.a, n, n_actions)
    done = np.asarray(data.done, bool)
    l_next = np.asarray(data.l_next, np.float64)
    t0 = time.perf_counter()
    nbr = np.zeros((len(flat), cfg.k), np.int64)
    if (~done).any():
        nbr[~done] = nearest_anchors(anchors, np.asarray(data.z_next, np.float32)[~done], cfg.k)
    t_nn = time.perf_counter() - t0
    table = np.empty(n * n_actions)
    table[flat] = l_next  # T_0 = l(s+): the optimistic start
    table = table.reshape(n, n_actions)
    history: list[dict[str, Any]] = []
    delta, gamma, m = np.inf, cfg.gamma(0), 0
    for m in range(1, cfg.max_iterations + 1):
        gamma = cfg.gamma(m)
        v_next = table.max(axis=1)[nbr].mean(axis=1)
        new = np.empty(n * n_actions)
        new[flat] = discounted_safety_target(l_next, v_next, done, gamma)
        new = new.reshape(n, n_actions)
        delta = float(np.abs(new - table).max())
        table = new
        if m % 50 == 0:
            history.append({"iteration": m, "gamma": gamma, "sup_change": delta})
        if gamma >= cfg.gamma_end and delta < cfg.tol:
            break
    history.append({"iteration": m, "gamma": gamma, "sup_change": delta, "converged": bool(delta < cfg.tol)})
    model = KernelQ(anchors, table, cfg.k, history, time.perf_counter() - t0,
                    {"algorithm": "kernel-averager-fitted-q-iteration", "kernel_fqi_config": asdict(cfg),
                     "neighbour_seconds": t_nn, "iterations": m, "converged": bool(delta < cfg.tol)})
    return model
