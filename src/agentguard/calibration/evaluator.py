"""The e-valuator baselines (Sadhuka et al. 2025) as summarised in Appendix C of the
online-safety-monitoring paper, streaming and vectorised.

For each step ``t`` a probabilistic classifier ``g_t`` is trained on the calibration prefixes
``s_1..s_t`` (of the sequences that reach step ``t``) to predict the label (Y = 1 safe). By Bayes'
rule the sequential density ratio of unsafe to safe is estimated as

    M_t = [P(Y=0 | s_1..t) / P(Y=1 | s_1..t)] * [P(Y=1) / P(Y=0)]

with the base rate ``P(Y=1)`` of the step-1 training set (as in the e-valuator code). Steps with
fewer than ``min_per_class`` sequences of either class get no classifier; there ``M_t`` keeps its
last value (step 1 must have a classifier).

* **anytime** (the Ville variant): models fitted on the whole calibration set; alarm (reject) at the
  first ``t`` with ``M_t > 1/alpha`` (Ville's inequality, if the estimated ratio were exact).
* **PAC**: the calibration set is split (``split_fraction`` for the classifiers, the rest for the
  threshold); the threshold is a distribution-free ``(1 - delta)`` upper confidence bound on the
  ``(1 - alpha)`` quantile of the running maximum ``max_t M_t`` over the held-out safe sequences:
  the order statistic ``X_(k)`` with the smallest ``k`` such that ``P(Bin(n, 1-alpha) >= k) <= delta``.
  If no such ``k`` exists the guarantee cannot be met (GuaranteeError, or the flag-nothing monitor
  with ``on_infeasible="trivial"``, as the e-valuator code's ``inf`` threshold).

Classifier: L2-regularised logistic regression on standardised prefixes, the objective of
scikit-learn's default ``LogisticRegression`` (``0.5 ||w||^2 + C sum log-loss``, C = 1, intercept not
penalised), solved here by Newton's method in numpy (no scikit-learn needed; tests compare).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import binom

from ..core.errors import GuaranteeError, InputError, LifecycleError
from ..core.types import Decision, Verdict
from .data import Sequences, check_alpha, check_delta
from .monitor import _SequenceMonitor, first_alarm_steps

__all__ = ["EValuator", "EValuatorMonitor", "StepModels", "fit_logistic", "fit_step_models",
           "pac_threshold"]

_CLIP = math.log((1 - 1e-6) / 1e-6)  # the e-valuator code clips probabilities to [1e-6, 1 - 1e-6]


def fit_logistic(X: np.ndarray, y: np.ndarray, C: float = 1.0, iters: int = 50, tol: float = 1e-10):
    """Minimise ``0.5 ||w||^2 + C sum_i logloss(y_i, x_i w + b)`` by Newton's method -> (w, b)."""
    n, d = X.shape
    A = np.hstack([X, np.ones((n, 1))])
    theta = np.zeros(d + 1)
    reg = np.ones(d + 1)
    reg[-1] = 0.0
    for _ in range(iters):
        z = A @ theta
        p = 1.0 / (1.0 + np.exp(-z))
        g = reg * theta + C * (A.T @ (p - y))
        H = np.diag(reg) + C * (A.T * (p * (1 - p))) @ A
        H[-1, -1] += 1e-12
        step = np.linalg.solve(H, g)
        theta -= step
        if np.max(np.abs(step)) < tol:
            break
    return theta[:-1], float(theta[-1])


@dataclass
class StepModels:
    """Per-step standardised logistic models: ``log P(Y=1|prefix)/P(Y=0|prefix) = ((x - mu)/sd) w + b``."""

    mu: dict[int, np.ndarray] = field(default_factory=dict)
    sd: dict[int, np.ndarray] = field(default_factory=dict)
    w: dict[int, np.ndarray] = field(default_factory=dict)
    b: dict[int, float] = field(default_factory=dict)
    log_prior_odds: float = 0.0   # log P(Y=1)/P(Y=0) at step 1

    @property
    def steps(self) -> list[int]:
        return sorted(self.w)

    def log_ratio(self, t: int, X: np.ndarray) -> np.ndarray:
        """``log M_t`` for prefixes ``X`` (rows, ``t`` columns) at a step with a model."""
        z = ((X - self.mu[t]) / self.sd[t]) @ self.w[t] + self.b[t]
        return -np.clip(z, -_CLIP, _CLIP) + self.log_prior_odds

    def e_values(self, data: Sequences) -> np.ndarray:
        """``M_t`` for every flat score of ``data`` (forward-filled over steps without a model)."""
        T = int(data.lengths.max())
        P = _padded(data, T)
        logM = np.full((data.n, T), np.nan)
        for t in range(1, T + 1):
            if t not in self.w:
                continue
            sel = data.lengths >= t
            if sel.any():
                logM[sel, t - 1] = self.log_ratio(t, P[sel, :t])
        # forward fill: the last step with a model
        idx = np.where(np.isnan(logM), 0, np.arange(T)[None, :])
        np.maximum.accumulate(idx, axis=1, out=idx)
        logM = logM[np.arange(data.n)[:, None], idx]
        mask = np.arange(T)[None, :] < data.lengths[:, None]
        return np.exp(logM[mask])


def _padded(data: Sequences, T: int) -> np.ndarray:
    P = np.full((data.n, T), np.nan)
    mask = np.arange(T)[None, :] < data.lengths[:, None]
    P[mask] = data.scores      # row-major order of mask matches the flat layout
    return P


def fit_step_models(data: Sequences, *, min_per_class: int = 5, C: float = 1.0) -> StepModels:
    """Fit one logistic model per step on the calibration prefixes (step 1 needs both classes)."""
    T = int(data.lengths.max())
    P = _padded(data, T)
    models = StepModels()
    for t in range(1, T + 1):
        sel = data.lengths >= t
        y = data.labels[sel].astype(float)
        n1 = int(y.sum())
        n0 = len(y) - n1
        if min(n0, n1) < min_per_class:
            if t == 1:
                raise GuaranteeError(f"the e-valuator needs at least {min_per_class} calibration sequences of "
                                     f"each class, got {n1} safe and {n0} unsafe")
            continue
        X = P[sel, :t]
        mu = X.mean(axis=0)
        sd = X.std(axis=0)
        sd[sd == 0] = 1.0
        w, b = fit_logistic((X - mu) / sd, y, C=C)
        models.mu[t], models.sd[t], models.w[t], models.b[t] = mu, sd, w, b
        if t == 1:
            models.log_prior_odds = math.log(n1 / n0)
    return models


def pac_threshold(maxima: np.ndarray, alpha: float, delta: float) -> float:
    """Smallest order statistic ``X_(k)`` with ``P(Bin(n, 1 - alpha) >= k) <= delta``; ``inf`` if none.

    With probability >= 1 - delta it upper-bounds the (1 - alpha)-quantile of the running maximum,
    so a fresh safe sequence exceeds it with probability <= alpha.
    """
    alpha, delta = check_alpha(alpha), check_delta(delta)
    x = np.sort(np.asarray(maxima, dtype=float))
    if np.isnan(x).any():  # sorted last, a NaN could be the order statistic: M_t > NaN never alarms
        raise InputError("pac_threshold: the running maxima contain NaN")
    n = x.size
    if n == 0:
        return math.inf
    k = np.arange(1, n + 1)
    ok = binom.sf(k - 1, n, 1.0 - alpha) <= delta
    if not ok.any():
        return math.inf
    return float(x[int(np.argmax(ok))])


def _running_max(values: np.ndarray, data: Sequences) -> np.ndarray:
    return np.maximum.reduceat(values, data.starts)


class EValuator:
    """The e-valuator monitor, variant ``"anytime"`` or ``"pac"``, with the calibrate -> monitor lifecycle.

    Fitted: ``models_`` (:class:`StepModels`), ``threshold_`` (alarm when ``M_t > threshold_``),
    ``trivial_`` (PAC only: too few held-out safe sequences, never alarms).
    """

    def __init__(self, variant: str = "anytime", alpha: float = 0.1, delta: float = 0.1, *,
                 split_fraction: float = 0.5, min_per_class: int = 5, random_state: int = 0,
                 on_infeasible: str = "raise", decision: Decision | str = Decision.HALT):
        if variant not in ("anytime", "pac"):
            raise InputError(f"unknown e-valuator variant {variant!r}; expected 'anytime' or 'pac'")
        self.variant = variant
        self.alpha = check_alpha(alpha)
        self.delta = check_delta(delta)
        if not 0 < split_fraction < 1:
            raise InputError("split_fraction must be in (0, 1)")
        self.split_fraction = split_fraction
        self.min_per_class = int(min_per_class)
        self.random_state = random_state
        if on_infeasible not in ("raise", "trivial"):
            raise InputError("on_infeasible must be 'raise' or 'trivial'")
        self.on_infeasible = on_infeasible
        self.decision = Decision.parse(decision)
        self.models_: StepModels | None = None

    def __repr__(self) -> str:
        st = f"threshold_={self.threshold_:.4g}" if self.models_ is not None else "not calibrated"
        return f"EValuator(variant={self.variant!r}, alpha={self.alpha:g}, delta={self.delta:g}; {st})"

    def calibrate(self, data: Sequences) -> EValuator:
        if self.variant == "anytime":
            self.models_ = fit_step_models(data, min_per_class=self.min_per_class)
            self.cal_maxima_ = None
            self._set_threshold()
            return self
        if data.n < 2:  # the PAC variant splits the data in two parts, each needing a sequence
            raise InputError(f"the PAC e-valuator splits its calibration data in two: it needs at least 2 "
                             f"sequences, got {data.n}")
        rng = np.random.default_rng(self.random_state)
        perm = rng.permutation(data.n)
        n_log = min(data.n - 1, max(1, int(data.n * self.split_fraction)))
        log_part = data.subset(np.sort(perm[:n_log]))
        cal_part = data.subset(np.sort(perm[n_log:]))
        self.models_ = fit_step_models(log_part, min_per_class=self.min_per_class)
        safe = cal_part.subset(np.flatnonzero(cal_part.labels == 1)) if (cal_part.labels == 1).any() else None
        self.cal_maxima_ = (_running_max(self.models_.e_values(safe), safe) if safe is not None
                            else np.zeros(0))
        self._set_threshold()
        return self

    def _set_threshold(self) -> None:
        self.trivial_ = False
        if self.variant == "anytime":
            self.threshold_ = 1.0 / self.alpha
            return
        thr = pac_threshold(self.cal_maxima_, self.alpha, self.delta)
        if math.isinf(thr):
            need = math.ceil(math.log(self.delta) / math.log(1.0 - self.alpha))
            if self.on_infeasible == "raise":
                raise GuaranteeError(
                    f"too few held-out safe sequences for the e-valuator PAC threshold at alpha={self.alpha:g}, "
                    f"delta={self.delta:g}: need at least {need}, got {len(self.cal_maxima_)}")
            self.trivial_ = True
        self.threshold_ = thr

    def with_alpha(self, alpha: float) -> EValuator:
        """A copy at another alpha sharing the fitted models (the threshold is recomputed)."""
        self._need()
        other = EValuator(self.variant, alpha, self.delta, split_fraction=self.split_fraction,
                          min_per_class=self.min_per_class, random_state=self.random_state,
                          on_infeasible=self.on_infeasible, decision=self.decision)
        other.models_, other.cal_maxima_ = self.models_, self.cal_maxima_
        other._set_threshold()
        return other

    def _need(self) -> StepModels:
        if self.models_ is None:
            raise LifecycleError("call calibrate(...) before monitoring with the e-valuator")
        return self.models_

    def e_values(self, data: Sequences) -> np.ndarray:
        return self._need().e_values(data)

    def alarm_steps(self, data: Sequences, e_values: np.ndarray | None = None) -> np.ndarray:
        """1-based step of the first ``M_t > threshold_`` per sequence, 0 where none (vectorised)."""
        ev = self.e_values(data) if e_values is None else e_values
        # M_t > thr  <=>  -M_t < -thr : reuse the "below threshold" kernel
        return first_alarm_steps(-ev, data.starts, data.lengths, -self.threshold_)

    def monitor(self, name: str | None = None) -> EValuatorMonitor:
        self._need()
        return EValuatorMonitor(self.models_, self.threshold_, decision=self.decision,
                                name=name or f"e-valuator-{self.variant}")


class EValuatorMonitor(_SequenceMonitor):
    """Streaming e-valuator: one score per step; alarm at the first ``M_t > threshold`` (latched).

    A guard like :class:`~agentguard.calibration.ThresholdMonitor` (same reading of proposals, same
    fail-closed answer to unreadable input, one sequence per ``context.run_id``, ``end_run``), with
    the e-value rule in place of Eq. 1.
    """

    def __init__(self, models: StepModels, threshold: float, *, decision: Decision | str = Decision.HALT,
                 name: str = "e-valuator", signal: str = "score", max_runs: int = 10_000):
        self.models = models
        self.threshold = float(threshold)
        self.decision = Decision.parse(decision)
        if not self.decision.refuses:
            raise InputError(f"an alarm must block (REJECT, ESCALATE or HALT), not {self.decision.name}")
        self.name = name
        self.signal = signal
        self.info: dict[str, Any] = {}
        self._start(max_runs)

    def __repr__(self) -> str:
        return f"EValuatorMonitor(threshold={self.threshold:.6g}, decision={self.decision.name}, name={self.name!r})"

    def _advance(self, state: Any, s: float) -> Verdict:
        if state.memory is None:
            state.memory = ([], 0.0)   # (prefix, log M_t)
        prefix, log_m = state.memory
        if not math.isfinite(s):
            # the step models are linear in the score: a -inf prefix entry gives log M_t = -inf * w, which
            # reads as "certainly safe" for a negative weight (or NaN): not a score the model reads
            return self._alarm(state, f"score {s} at step {len(prefix) + 1} is not finite: the e-value models "
                                      "read finite scores only; the monitor fails closed",
                               {"step": float(len(prefix) + 1), "threshold": self.threshold}, error="non-finite score")
        prefix.append(s)
        t = len(prefix)
        if t in self.models.w:
            log_m = float(self.models.log_ratio(t, np.asarray(prefix)[None, :])[0])
        state.memory = (prefix, log_m)
        m = math.exp(log_m)
        nums = {"step": float(t), "score": s, "e_value": m, "threshold": self.threshold}
        if math.isnan(m):
            # an undefined e-value (a -inf score gives inf - inf or 0 * inf in the prefix model) compares
            # false with every threshold: it would ALLOW this step and every later one; it alarms
            return self._alarm(state, f"the e-value at step {t} is undefined (NaN) for this prefix; "
                                      "the monitor fails closed", nums, error="NaN e-value")
        if m > self.threshold:
            return self._alarm(state, f"e-value {m:.4g} exceeded {self.threshold:.4g} at step {t}", nums)
        return Verdict(Decision.ALLOW, "e-value below threshold", self.name, nums)
