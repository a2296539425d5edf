"""The PAC stopping rule of Algorithm 1 (line 11) of the Pro2Guard paper.

Algorithm 1 stops sampling traces once every state ``p`` satisfies

    n_p >= (11/10 * B(P))^2 * 2/eps^2 * log(2/delta') * [1/4 - (max_q |1/2 - n_pq/n_p| - 2/3 eps)^2],
    delta' = delta / |S|,                                                        (line 11)

where ``n_p`` is the number of observed transitions out of ``p``, ``n_pq`` those into ``q``, and
``B(P)`` the error-amplification factor of Bazille et al. (CAV 2020, "Global PAC bounds for
learning DTMCs") that turns a transition-level error eps/B into a reachability error eps.

Three readings are implemented (``variant=``), and the choice is recorded in every report:

* ``"line11"``: the formula exactly as printed in line 11.
* ``"appendix"``: the rule the appendix proof actually uses, ``n_p >= (11/10 B)^2 H*`` with
  ``H* = max_t H(n_p, n_pt, eps', delta')``: the transition-wise Massart/Okamoto bound
  ``H(n, m, e, d) = 2/e^2 log(2/d) [1/4 - (max(0, |1/2 - m/n| - 2/3 e))^2]`` maximised over the
  successors ``t`` (i.e. at the successor whose estimate is closest to 1/2, where the binomial
  variance is largest) and evaluated with the transition-level error ``eps' = eps / (11/10 B)``
  inside the bracket too. Line 11's ``max_q |1/2 - .|`` picks the successor of *smallest* ``H``
  (for any unobserved successor ``|1/2 - 0| = 1/2`` and the bracket collapses to about ``2/3 eps``),
  which makes the printed rule need only O(1/eps) samples instead of O(1/eps^2).
* ``"conservative"`` (default): the larger of the two requirements, so a learner that stops under
  it also satisfies line 11 as printed and the appendix's condition.

``B``: the paper leaves B(P) open. We use ``B = min_m m / cond_m`` where ``cond_m`` is the smallest
probability, over the states whose reachability probability of the target is strictly between 0
and 1 (``S?``), of leaving ``S?`` within ``m`` steps (the conditioning of Bazille et al.); computed
on the smoothed learned matrix. ``B >= 1``; when ``S?`` is empty, reachability is decided by the
graph alone and ``B = 1``.

States excluded from the rule (reported as ``determined``): the terminal state and any state with at
most one valid successor: their rows are fixed by ``valid_transition`` and need no sampling.

The empirical check of the guarantee (learn from a known DTMC, count the failures) is
:func:`agentguard.predictive.pac_validation.simulate_guarantee`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..core.errors import InputError

__all__ = [
    "PACReport",
    "PAC_VARIANTS",
    "amplification_factor",
    "pac_report",
    "prob01",
    "required_count",
]

PAC_VARIANTS = ("conservative", "appendix", "line11")


def prob01(P: sp.csr_matrix, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Graph precomputation for ``F target``: (states with probability 0, states with probability 1).

    Delegates to the model checker's Prob0/Prob1 (Baier & Katoen 10.1).
    """
    from .reachability import prob0, prob1

    target = np.asarray(target, dtype=bool)
    no = prob0(P, None, target)
    return no, prob1(P, None, target, no)


def amplification_factor(P: sp.csr_matrix, target: np.ndarray, max_steps: int = 100_000) -> tuple[float, dict[str, Any]]:
    """``B = min_m m / cond_m`` (see the module docstring) for the reachability of ``target``.

    Returns ``(B, details)`` with details ``{"uncertain_states", "best_m", "cond_best_m"}``.
    Vectorised: one sparse mat-vec per step ``m``; stops once ``m >= B`` (``m/cond_m >= m``).
    """
    P = sp.csr_matrix(P)
    prob0, prob1 = prob01(P, target)
    unc = ~(prob0 | prob1)
    idx = np.flatnonzero(unc)
    if idx.size == 0:
        return 1.0, {"uncertain_states": 0, "best_m": 0, "cond_best_m": 1.0}
    Q = P[idx][:, idx]  # transitions staying inside S?
    out = 1.0 - np.asarray(Q.sum(axis=1)).ravel()  # leaving S? in one step
    out = np.clip(out, 0.0, 1.0)
    x = np.zeros(idx.size)
    best, best_m, best_c = math.inf, 0, 0.0
    for m in range(1, max_steps + 1):
        x = out + Q @ x
        c = float(x.min())
        if c > 0 and m / c < best:
            best, best_m, best_c = m / c, m, c
        if m >= best:
            break
    if not math.isfinite(best):
        raise InputError("cannot compute B: some uncertain state never leaves the uncertain set")
    return float(best), {"uncertain_states": int(idx.size), "best_m": best_m, "cond_best_m": best_c}


def _massart(n_succ: np.ndarray, n: float, e: float, dp: float, clamp: bool) -> np.ndarray:
    dev = np.abs(0.5 - n_succ / n) - 2.0 / 3.0 * e
    if clamp:
        dev = np.maximum(dev, 0.0)
    return 2.0 / e**2 * math.log(2.0 / dp) * (0.25 - dev**2)


def required_count(
    row_counts: np.ndarray, n_p: float, epsilon: float, delta_prime: float, B: float, variant: str = "conservative"
) -> float:
    """Samples ``n_p`` state ``p`` needs under ``variant`` (see the module docstring).

    ``row_counts``: the counts ``n_pq`` over *all* candidate successors ``q`` (zeros included).
    With ``n_p = 0`` no estimate exists and the requirement is ``inf``.
    """
    if variant not in PAC_VARIANTS:
        raise InputError(f"unknown PAC variant {variant!r}: expected one of {', '.join(PAC_VARIANTS)}")
    if not (0 < epsilon < 1) or not (0 < delta_prime < 1) or not (1 <= B < math.inf):
        raise InputError(f"PAC bound needs epsilon, delta' in (0, 1) and finite B >= 1; got epsilon={epsilon}, "
                         f"delta'={delta_prime}, B={B}")
    if not 0 <= n_p < math.inf:  # NaN included
        raise InputError(f"n_p must be a finite count >= 0, got {n_p}")
    if n_p <= 0:
        return math.inf
    rc = np.asarray(row_counts, dtype=float)
    if rc.size and not (np.all(rc >= 0) and np.all(rc <= n_p)):  # NaN fails both
        # n_pq outside 0..n_p puts n_pq/n_p outside [0, 1]: the bracket goes negative and the
        # requirement below zero, so a state with 5 samples "held" ([10, 20] of 5 needed -1320)
        raise InputError(f"the successor counts n_pq must lie in 0..n_p = {n_p:g}, got {rc.tolist()[:5]}")
    f = (1.1 * B) ** 2
    line11 = f * 2.0 / epsilon**2 * math.log(2.0 / delta_prime) * (
        0.25 - (float(np.max(np.abs(0.5 - rc / n_p))) - 2.0 / 3.0 * epsilon) ** 2
    )
    if variant == "line11":
        return float(line11)
    eps_t = epsilon / (1.1 * B)
    # (1.1B)^2 * 2/eps^2 == 2/eps_t^2, so the appendix requirement is H(n, m, eps_t, delta') itself:
    appendix = float(np.max(_massart(rc, n_p, eps_t, delta_prime, clamp=True)))
    if variant == "appendix":
        return appendix
    return max(float(line11), appendix)


@dataclass
class PACReport:
    """Per-state counts, required counts and whether the stopping rule holds."""

    epsilon: float
    delta: float
    delta_prime: float
    B: float
    variant: str
    states: list[str]
    counts: list[int]
    required: list[float]
    holds: list[bool]
    determined: list[bool]
    done: bool
    B_details: dict[str, Any] = field(default_factory=dict)
    traces: int = 0
    transitions: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "epsilon": self.epsilon, "delta": self.delta, "delta_prime": self.delta_prime,
            "B": self.B, "B_details": self.B_details, "variant": self.variant, "done": self.done,
            "traces": self.traces, "transitions": self.transitions,
            "states": [
                {"state": s, "count": c, "required": (None if not math.isfinite(r) else math.ceil(r)),
                 "holds": h, "determined": d}
                for s, c, r, h, d in zip(self.states, self.counts, self.required, self.holds, self.determined)
            ],
        }

    @property
    def missing(self) -> int:
        """Total further transitions needed at the current estimates (inf if a state is unvisited)."""
        tot = 0.0
        for c, r, h, d in zip(self.counts, self.required, self.holds, self.determined):
            if not (h or d):
                tot += max(0.0, r - c)
        return tot  # type: ignore[return-value]


def pac_report(
    counts: sp.csr_matrix,
    P: sp.csr_matrix,
    valid: np.ndarray,
    target: np.ndarray,
    epsilon: float,
    delta: float,
    states: list[str],
    determined: np.ndarray | None = None,
    variant: str = "conservative",
) -> PACReport:
    """Evaluate the stopping rule on every non-determined state (see the module docstring).

    ``counts``: raw transition counts ``n_pq``; ``P``: the smoothed learned matrix (for B);
    ``valid``: the valid-successor matrix (candidate successors ``q``); ``target``: boolean mask.
    """
    if not (0 < epsilon < 1) or not (0 < delta < 1):
        raise InputError(f"epsilon and delta must lie in (0, 1); got epsilon={epsilon}, delta={delta}")
    n = P.shape[0]
    valid = np.asarray(valid, dtype=bool)
    k = valid.sum(axis=1)
    det = (k <= 1) if determined is None else (np.asarray(determined, bool) | (k <= 1))
    B, info = amplification_factor(P, target)
    dp = delta / max(n, 1)
    C = sp.csr_matrix(counts, dtype=np.float64)
    if C.shape != P.shape or (C.nnz and not (np.all(np.isfinite(C.data)) and C.data.min() >= 0)):
        raise InputError(f"counts must be a {P.shape} matrix of finite counts >= 0")
    n_p = np.asarray(C.sum(axis=1)).ravel()
    req, holds = [], []
    for i in range(n):
        if det[i]:
            req.append(0.0)
            holds.append(True)
            continue
        row = np.zeros(n)
        row[C.indices[C.indptr[i]:C.indptr[i + 1]]] = C.data[C.indptr[i]:C.indptr[i + 1]]
        cand = row[valid[i] | (row > 0)]
        r = required_count(cand, float(n_p[i]), epsilon, dp, B, variant)
        req.append(r)
        holds.append(bool(n_p[i] >= r))
    return PACReport(
        epsilon=epsilon, delta=delta, delta_prime=dp, B=B, variant=variant, states=list(states),
        counts=[int(x) for x in n_p], required=req, holds=holds, determined=[bool(x) for x in det],
        done=bool(all(holds)), B_details=info, transitions=int(n_p.sum()),
    )
