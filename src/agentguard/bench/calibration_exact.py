"""The exact mean test risk over *all* calibration/test splits of a finite data set.

The protocol of Figures 1, 2 and 4 estimates the left side of Eq. 3, ``E[R(lambda_hat)]``, by the
mean over 10 random splits. That estimate is noisy (for the math data its standard error is about
0.006, and CRC is tight by design: ``E[R] = (k + 1) / (n + 1)``, just under alpha), so a 10-split
mean lands above alpha about as often as below. This module removes the sampling noise: for the
split scheme of :func:`agentguard.bench.calibration.run_protocol` (``n_cal = int(cal_frac N)``
sequences drawn uniformly without replacement for calibration, the rest for test) it computes the
mean of the test risk over every possible split, in closed form.

Derivation (false alarm; missed detection is the same with the minima negated, because the monitor
misses an unsafe sequence iff ``m > m_(n-k)``, i.e. ``-m < `` the ``(k+1)``-th smallest of ``-m``).
Let the data hold ``N`` sequences, ``N1`` of the relevant class, with per-sequence minima ``z_i``;
let ``n_s`` be the number of relevant calibration sequences (hypergeometric: ``N`` population,
``N1`` successes, ``n_cal`` draws) and ``k = k(n_s)`` the admissible loss count of the method
(:func:`agentguard.calibration.calibrate.crc_max_losses` or
:func:`agentguard.calibration.bounds.max_losses`). Then ``lambda`` is the
``(k+1)``-th smallest calibration minimum, and a test sequence ``i`` is flagged iff at most ``k``
calibration minima are ``<= z_i`` (ties included). Given ``n_s`` the relevant calibration set is a
uniform ``n_s``-subset of the ``N1``; given ``i`` is in the test part, it is a uniform ``n_s``-subset
of the other ``M = N1 - 1``. Order those others so that the ``C_i - 1`` with ``z_j <= z_i`` come
first (``C_i = #{j : z_j <= z_i}``): ``i`` is flagged iff the position ``T`` of the ``(k+1)``-th
selected one is ``>= C_i``. ``T`` does not depend on ``i``:
``P(T = t) = C(t-1, k) C(M-t, n_s-k-1) / C(M, n_s)``, so with ``S(c) = P(T >= c)``::

    E[R | n_s] = (1 / N1) * sum_i S(C_i)      ( = (1/N1) sum_i P(Hypergeom(M, C_i - 1, n_s) <= k) )

(``k < 0``: no certified threshold, the trivial monitor has risk 0; ``k >= n_s``: risk 1). With
distinct minima this is ``E[T] / N1 = (k + 1) / (n_s + 1)``, the familiar CRC value. Cost: O(N1)
per calibration size, vectorised. Splits whose test part holds no relevant sequence (risk undefined,
skipped by the protocol's ``nanmean``) are left out and the rest renormalised. :func:`split_expected_risk` is checked against brute-force enumeration of
every split (tests/bench/test_bench_calibration_exact.py).

:func:`split_violation_probability` gives the share of splits whose *test* risk exceeds alpha (what
the protocol counts as a violating split). Break ties at random: the test risk exceeds alpha iff at
least ``m = floor(alpha (N1 - n_s)) + 1`` test minima precede the ``(k+1)``-th calibration minimum,
iff at most ``k`` calibration minima are among the first ``k + m`` positions:
``P = P(Hypergeom(N1, k + m, n_s) <= k)``. Exact for distinct minima; with ties (where a tied test
minimum is not flagged) it is an upper bound.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln
from scipy.stats import hypergeom

from ..calibration.bounds import BOUNDS, max_losses
from ..calibration.calibrate import METHODS, crc_max_losses
from ..calibration.data import Sequences, check_alpha, check_delta
from ..calibration.risks import check_risk, relevant_label
from ..core.errors import InputError

__all__ = ["conditional_expected_risk", "split_expected_risk", "split_violation_probability"]


def conditional_expected_risk(minima: np.ndarray, n_s: int, k: int) -> float:
    """``E[test risk]`` when ``n_s`` of the relevant ``minima`` are drawn at random for calibration.

    ``k`` is the number of calibration losses the method admits at ``n_s``. Exact (see module doc).
    """
    z = np.asarray(minima, dtype=float).ravel()
    n1 = z.size
    if not 0 <= n_s < n1:
        raise InputError(f"n_s must be in [0, {n1 - 1}] so that the test part is not empty, got {n_s}")
    _, counts = np.unique(z, return_counts=True)
    return _conditional(counts, np.cumsum(counts), n1, n_s, k)


def _conditional(counts: np.ndarray, c: np.ndarray, n1: int, n_s: int, k: int) -> float:
    """``E[R | n_s]`` from the tie-group sizes ``counts`` and their ``C`` values ``c``."""
    if k < 0:
        return 0.0
    if k >= n_s:
        return 1.0
    m = n1 - 1
    t = np.arange(k + 1, m - (n_s - k - 1) + 1)  # support of T
    logp = _lcomb(t - 1, k) + _lcomb(m - t, n_s - k - 1) - _lcomb(m, n_s)
    pmf = np.zeros(m + 2)
    pmf[t] = np.exp(logp)
    surv = np.cumsum(pmf[::-1])[::-1]            # surv[c] = P(T >= c), surv[m + 1] = 0
    return float(np.dot(counts, surv[c]) / n1)


def _lcomb(a: np.ndarray | int, b: int) -> np.ndarray:
    """log C(a, b) for integer arrays a >= b >= 0."""
    a = np.asarray(a, dtype=float)
    return gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)


def _split_sizes(data: Sequences, risk: str, method: str, alpha: float, delta: float, bound: str,
                 cal_frac: float, tol: float) -> tuple[np.ndarray, float, list[tuple[int, float, int]], float, float]:
    """Validate, then ``(relevant minima, alpha, [(n_s, P(n_s), k(n_s))...], kept mass, P(test has none))``.

    ``n_s`` runs over the hypergeometric support with probability >= ``tol`` and a non-empty relevant test part.
    """
    check_risk(risk)
    a = check_alpha(alpha)
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    d = None
    if method == "ucb":
        d = check_delta(delta)
        if bound not in BOUNDS:
            raise InputError(f"unknown bound {bound!r}; expected one of {', '.join(BOUNDS)}")
    if not 0 < cal_frac < 1:
        raise InputError("cal_frac must be in (0, 1)")
    rel = data.labels == relevant_label(risk)
    z = data.minima()[rel]
    n, n1 = int(data.n), int(rel.sum())
    if n1 == 0:
        raise InputError(f"no sequences of the relevant class for the {risk} risk")
    n_cal = int(cal_frac * n)
    ns = np.arange(max(0, n_cal - (n - n1)), min(n_cal, n1) + 1)
    pmf = hypergeom.pmf(ns, n, n1, n_cal)
    keep = (pmf >= tol) & (ns < n1)
    rows = [(int(n_s), float(p), crc_max_losses(int(n_s), a) if method == "crc" else max_losses(int(n_s), a, d, bound))
            for n_s, p in zip(ns[keep], pmf[keep])]
    mass = float(pmf[keep].sum())
    if mass <= 0:
        raise InputError("no split leaves a relevant sequence in the test part")
    return z, a, rows, mass, float(pmf[ns == n1].sum())


def split_expected_risk(data: Sequences, *, risk: str = "false_alarm", method: str = "crc",
                        alpha: float = 0.1, delta: float = 0.1, bound: str = "hb",
                        cal_frac: float = 0.2, tol: float = 1e-15) -> dict[str, float]:
    """The exact mean test risk of ``method`` over all splits of ``data`` (the limit of many splits).

    Returns ``{"mean", "p_relevant_test_empty", "skipped"}``; ``mean`` is what the protocol's
    split-average converges to. For CRC, Eq. 3 guarantees ``mean <= alpha``. Split sizes with
    hypergeometric probability below ``tol`` are skipped (their total mass is reported as ``skipped``).
    """
    z, _, rows, mass, empty = _split_sizes(data, risk, method, alpha, delta, bound, cal_frac, tol)
    if risk == "missed_detection":
        z = -z
    _, counts = np.unique(z, return_counts=True)
    c = np.cumsum(counts)
    total = sum(p * _conditional(counts, c, z.size, n_s, k) for n_s, p, k in rows)
    return {"mean": float(total / mass), "p_relevant_test_empty": empty, "skipped": max(0.0, 1.0 - mass - empty)}


def split_violation_probability(data: Sequences, *, risk: str = "false_alarm", method: str = "ucb",
                                alpha: float = 0.1, delta: float = 0.1, bound: str = "hb",
                                cal_frac: float = 0.2, tol: float = 1e-15) -> dict[str, float | bool]:
    """The share of all splits whose test risk exceeds ``alpha`` (see module doc).

    Returns ``{"p": ..., "exact": ...}``: ``exact`` is True when the relevant minima are distinct;
    otherwise ``p`` is an upper bound. (UCB's Eq. 5 bounds the probability that the *true* risk exceeds
    alpha by delta; a finite test set's risk scatters around the true risk, so this share can exceed
    delta slightly when the true risk sits just below alpha.)
    """
    z, a, rows, mass, _ = _split_sizes(data, risk, method, alpha, delta, bound, cal_frac, tol)
    n1 = z.size
    total = 0.0
    for n_s, p, k in rows:
        if k < 0:
            continue                                  # trivial monitor: risk 0
        if k >= n_s:
            total += p                                # flags (or misses) everything: risk 1 > alpha
            continue
        m = math.floor(a * (n1 - n_s) * (1 + 1e-12)) + 1
        if k + m <= n1:
            total += p * float(hypergeom.cdf(k, n1, k + m, n_s))
    return {"p": float(total / mass), "exact": bool(np.unique(z).size == z.size)}
