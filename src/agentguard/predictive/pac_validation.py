"""The empirical check of Algorithm 1's (epsilon, delta) guarantee (Pro2Guard, Thm. 1).

:func:`simulate_guarantee` learns, many times over, from paths sampled from a known ground-truth
DTMC, stops each time the PAC rule of :mod:`agentguard.predictive.pac` holds, and counts how often
the learned reachability probability is off by more than epsilon. It uses the learner, so it lives
apart from the rule itself (dependencies go one way: pac <- learn <- pac_validation).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .learn import DTMCLearner, sample_paths
from .reachability import reach as reach_probabilities

__all__ = ["simulate_guarantee"]


def simulate_guarantee(
    P_true: np.ndarray,
    start: int,
    target: np.ndarray,
    valid: np.ndarray,
    epsilon: float,
    delta: float,
    repetitions: int,
    *,
    alpha: float = 1.0,
    variant: str = "conservative",
    seed: int = 0,
    first_batch: int = 10,
    growth: float = 0.05,
    max_traces: int = 2_000_000,
    reach: Any = None,
    progress: Any = None,
) -> dict[str, Any]:
    """Empirical check of Algorithm 1's (epsilon, delta) guarantee on a known ground-truth DTMC.

    Each repetition learns incrementally from paths sampled from ``P_true`` (from ``start`` until
    absorption) and stops when the learner's PAC rule holds; the rule is re-checked after every
    batch (first ``first_batch`` paths, then ``growth`` times the paths so far, so a stop overshoots
    the first sufficient sample by at most that fraction). It records the reachability error of
    ``F target`` at ``start`` and the largest over all states. ``reach(P, target)`` defaults to
    :func:`agentguard.predictive.checker.reach`.

    Returns failure fractions (error > epsilon), errors, traces used and the B values per run.
    """
    if reach is None:
        reach = reach_probabilities

    P_true = np.asarray(P_true, dtype=float)
    n = P_true.shape[0]
    truth = np.asarray(reach(sp.csr_matrix(P_true), target), dtype=float)
    rng = np.random.default_rng(seed)
    names = [str(i) for i in range(n)]
    errs0, errs_max, used, Bs, trans = [], [], [], [], []
    for r in range(repetitions):
        learner = DTMCLearner(alpha=alpha, epsilon=epsilon, delta=delta, valid=valid, states=names,
                              labels={"unsafe": {names[i] for i in np.flatnonzero(target)}},
                              pac_variant=variant)
        batch = first_batch
        while True:
            flat, lengths = sample_paths(P_true, start, batch, rng)
            learner.add_index_paths(flat, lengths)
            if learner.done or learner.n_traces >= max_traces:
                break
            batch = max(first_batch, int(growth * learner.n_traces))
        est = np.asarray(reach(learner.matrix(), target), dtype=float)
        errs0.append(abs(est[start] - truth[start]))
        errs_max.append(float(np.max(np.abs(est - truth))))
        used.append(learner.n_traces)
        rep = learner.pac_report()
        Bs.append(rep.B)
        trans.append(rep.transitions)
        if progress is not None:
            progress(r + 1, repetitions)
    errs0_a, errs_max_a = np.array(errs0), np.array(errs_max)
    return {
        "epsilon": epsilon, "delta": delta, "alpha": alpha, "variant": variant, "repetitions": repetitions,
        "truth_at_start": float(truth[start]),
        "failure_rate_start": float(np.mean(errs0_a > epsilon)),
        "failure_rate_all_states": float(np.mean(errs_max_a > epsilon)),
        "error_start": errs0, "error_all_states": errs_max,
        "traces": used, "transitions": trans, "B": Bs,
        "max_traces_hit": int(sum(u >= max_traces for u in used)),
    }
