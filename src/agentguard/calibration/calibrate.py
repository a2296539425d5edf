"""Calibrating the threshold of Eq. 1 by risk control: CRC (Eq. 3-4, 8) and UCB (Eq. 5-6, 9).

All thresholds are closed form: with ``m_(1) <= ... <= m_(n)`` the sorted per-sequence minima of the
relevant class and ``k`` the largest number of losses the guarantee admits,

* false alarm (safe sequences, largest threshold): ``lambda = m_(k+1)``; the monitor then flags the
  safe calibration sequences with ``m < m_(k+1)``, at most ``k`` of them, and no larger threshold
  keeps that count (ties included);
* missed detection (unsafe sequences, smallest threshold): ``lambda = nextafter(m_(n-k), +inf)``,
  the smallest float above ``m_(n-k)``; the monitor misses the ``m > m_(n-k)`` ones, at most ``k``.

For CRC, ``k = max{k : (k + 1) / (n + 1) <= alpha}`` (Eq. 4 / 8 with loss bound B = 1:
``n/(n+1) R_n + 1/(n+1) <= alpha``), giving ``E[R(lambda)] <= alpha`` over calibration draws (Eq. 3).
For UCB, ``k = max{k : p(k) <= delta}`` with p the Hoeffding-Bentkus or exact binomial p-value of
``H0: R > alpha`` (:mod:`.bounds`), giving ``P(R(lambda) <= alpha) >= 1 - delta`` (Eq. 5).

When no ``k >= 0`` is admissible (too few calibration sequences), no threshold is certified:
``on_infeasible="raise"`` (default) raises GuaranteeError naming the sample size needed;
``"trivial"`` returns the monitor that meets the risk trivially (false alarm: never alarm,
``lambda = -inf``; missed detection: alarm at once, ``lambda = +inf``) and sets ``trivial_ = True``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence as Seq
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import GuaranteeError, InputError, LifecycleError
from ..core.types import Decision
from .bounds import BOUNDS, check_draws, exact_level, max_losses, min_n_for_guarantee
from .data import Sequences, check_alpha, check_delta, numbers
from .monitor import ThresholdMonitor
from .risks import check_risk, relevant_label

__all__ = [
    "Calibration",
    "METHODS",
    "ThresholdCalibrator",
    "calibrate_threshold",
    "crc_max_losses",
    "threshold_from_minima",
]

METHODS = ("crc", "ucb")


def crc_max_losses(n: int, alpha: float) -> int:
    """Largest ``k`` with ``(k + 1) / (n + 1) <= alpha`` (Eq. 4 with B = 1), or -1.

    Exact: ``alpha`` is read as the decimal it prints as (:func:`~.bounds.exact_level`: 0.3 is 3/10),
    and the inequality is decided in rational arithmetic, so no ``k`` with ``(k + 1)/(n + 1)``
    above that alpha is ever admitted (a relative rounding slack of 1e-12 admitted ``k = 2`` for
    ``n = 9, alpha = 0.3 - 1e-13``: a risk bound of 0.3 > alpha). ``alpha`` outside (0, 1) or a
    non-integer ``n`` is an InputError (``alpha = 1.5`` admitted every loss)."""
    n = check_draws(n, minimum=0)
    k = math.floor(exact_level(check_alpha(alpha)) * (n + 1)) - 1
    return min(k, n)


def threshold_from_minima(minima: np.ndarray, k: int, risk: str) -> float:
    """The closed-form extreme threshold admitting at most ``k`` losses among ``minima`` (0 <= k)."""
    m = np.asarray(minima, dtype=float)
    n = m.size
    if check_risk(risk) == "false_alarm":
        if k >= n:
            return math.inf
        return float(np.partition(m, k)[k])                   # m_(k+1), 0-based k-th smallest
    if k >= n:
        return -math.inf
    return float(np.nextafter(np.partition(m, n - k - 1)[n - k - 1], np.inf))  # just above m_(n-k)


@dataclass(frozen=True)
class Calibration:
    """The outcome of one calibration (all numbers the guarantee rests on)."""

    threshold: float
    risk: str
    method: str
    alpha: float
    delta: float | None
    bound: str | None
    n: int                 # calibration sequences of the relevant class
    max_losses: int        # k: losses admitted on the calibration set (-1: none admissible)
    empirical_risk: float  # on the calibration set, at the threshold
    trivial: bool          # no certified threshold; the trivially safe monitor was returned

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["threshold"] = self.threshold if math.isfinite(self.threshold) else str(self.threshold)
        return d


def calibrate_threshold(minima: np.ndarray, *, risk: str = "false_alarm", method: str = "crc",
                        alpha: float = 0.1, delta: float | None = 0.1, bound: str = "hb",
                        on_infeasible: str = "raise") -> Calibration:
    """Calibrate Eq. 1's threshold from the per-sequence minima of the relevant class (see module doc).

    ``minima`` are those of the safe calibration sequences for ``risk="false_alarm"`` and of the
    unsafe ones for ``"missed_detection"``. Cost: one O(n) selection (no grid, no sort needed).
    """
    check_risk(risk)
    a = check_alpha(alpha)
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    if on_infeasible not in ("raise", "trivial"):
        raise InputError("on_infeasible must be 'raise' or 'trivial'")
    d = None
    if method == "ucb":
        d = check_delta(delta)
        if bound not in BOUNDS:
            raise InputError(f"unknown bound {bound!r}; expected one of {', '.join(BOUNDS)}")
    if np.ndim(minima) > 1:  # numbers() would flatten it: n would count entries, not sequences
        raise InputError(f"calibration minima must be one number per sequence (1-d), got shape {np.shape(minima)}")
    m = numbers(minima, "calibration minima")
    if np.isnan(m).any():
        raise InputError("calibration minima contain NaN")
    if np.isposinf(m).any():  # below no threshold: a missed-detection threshold of +inf would miss them all
        raise InputError("calibration minima contain +inf (scores are numbers below +inf)")
    n = m.size
    k = crc_max_losses(n, a) if method == "crc" else max_losses(n, a, d, bound)
    if k < 0:
        cls = "safe" if risk == "false_alarm" else "unsafe"
        need = min_n_for_guarantee(a, d, method, bound)
        what = f"alpha={a:g}" + (f", delta={d:g}" if d is not None else "")
        if on_infeasible == "raise":
            raise GuaranteeError(
                f"too few calibration sequences for the {risk} guarantee with {method} at {what}: "
                f"need at least {need} {cls} sequences, got {n}")
        thr = -math.inf if risk == "false_alarm" else math.inf
        return Calibration(thr, risk, method, a, d, bound if method == "ucb" else None, n, k, 0.0, True)
    thr = threshold_from_minima(m, k, risk)
    emp = float(np.mean(m < thr)) if risk == "false_alarm" else float(np.mean(m >= thr))
    return Calibration(thr, risk, method, a, d, bound if method == "ucb" else None, n, k, emp, False)


class ThresholdCalibrator:
    """Calibrate, then monitor: the risk-controlled threshold monitor with a MAPIE-style lifecycle.

    >>> cal = ThresholdCalibrator(risk="false_alarm", method="crc", alpha=0.1)
    >>> cal.calibrate(scores, labels)      # doctest: +SKIP
    >>> monitor = cal.monitor()             # a fresh ThresholdMonitor(cal.threshold_)   # doctest: +SKIP

    Parameters are validated at construction; ``monitor``/``threshold_`` before ``calibrate`` raise
    LifecycleError. Fitted attributes (trailing underscore): ``threshold_``, ``calibration_``
    (:class:`Calibration`), ``n_calibration_``, ``trivial_``.

    Guarantee (exchangeable calibration and test sequences): CRC: E[risk] <= alpha over calibration
    draws; UCB: risk <= alpha with probability >= 1 - delta over calibration draws.
    """

    def __init__(self, risk: str = "false_alarm", method: str = "crc", alpha: float = 0.1,
                 delta: float = 0.1, *, bound: str = "hb", on_infeasible: str = "raise",
                 decision: Decision | str = Decision.HALT):
        self.risk = check_risk(risk)
        if method not in METHODS:
            raise InputError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
        self.method = method
        self.alpha = check_alpha(alpha)
        self.delta = check_delta(delta) if method == "ucb" else delta
        if bound not in BOUNDS:
            raise InputError(f"unknown bound {bound!r}; expected one of {', '.join(BOUNDS)}")
        self.bound = bound
        if on_infeasible not in ("raise", "trivial"):
            raise InputError("on_infeasible must be 'raise' or 'trivial'")
        self.on_infeasible = on_infeasible
        self.decision = Decision.parse(decision)

    def __repr__(self) -> str:
        state = f"threshold_={self.calibration_.threshold:.6g}" if self.is_calibrated else "not calibrated"
        return (f"ThresholdCalibrator(risk={self.risk!r}, method={self.method!r}, alpha={self.alpha:g}, "
                f"delta={self.delta}, bound={self.bound!r}; {state})")

    @property
    def is_calibrated(self) -> bool:
        return getattr(self, "calibration_", None) is not None

    def calibrate(self, scores: Sequences | Seq[Seq[float]], labels: Seq[int] | None = None) -> ThresholdCalibrator:
        """Fit the threshold on calibration sequences (a :class:`Sequences`, or score lists + 0/1 labels)."""
        data = _as_sequences(scores, labels)
        rel = data.labels == relevant_label(self.risk)
        minima = data.minima()[rel]
        self.calibration_ = calibrate_threshold(minima, risk=self.risk, method=self.method, alpha=self.alpha,
                                                delta=self.delta, bound=self.bound,
                                                on_infeasible=self.on_infeasible)
        return self

    def _need(self) -> Calibration:
        if not self.is_calibrated:
            raise LifecycleError("call calibrate(...) before using the monitor or its threshold")
        return self.calibration_

    @property
    def threshold_(self) -> float:
        return self._need().threshold

    @property
    def trivial_(self) -> bool:
        return self._need().trivial

    @property
    def n_calibration_(self) -> int:
        return self._need().n

    def monitor(self, name: str = "risk-controlled-monitor", *, signal: str = "score",
                scorer: Any = None) -> ThresholdMonitor:
        """A fresh streaming monitor (Eq. 1) at the calibrated threshold, reading ``signal`` (or ``scorer``)."""
        c = self._need()
        return ThresholdMonitor(c.threshold, decision=self.decision, name=name, signal=signal, scorer=scorer,
                                info={"risk": c.risk, "method": c.method, "alpha": c.alpha, "delta": c.delta,
                                      "trivial": c.trivial})

    def alarm_steps(self, data: Sequences) -> np.ndarray:
        """Vectorised Eq. 1 on many sequences: 1-based alarm step of each, 0 for none."""
        from .monitor import first_alarm_steps
        c = self._need()
        return first_alarm_steps(data.scores, data.starts, data.lengths, c.threshold)


def _as_sequences(scores: Any, labels: Any) -> Sequences:
    if isinstance(scores, Sequences):
        if labels is not None:
            raise InputError("pass labels inside the Sequences object, not separately")
        return scores
    if labels is None:
        raise InputError("labels are required (1 = safe, 0 = unsafe), one per sequence")
    return Sequences.from_lists(scores, labels)
