"""Monitor metrics of section 4 of the online-safety-monitoring paper, from alarm steps.

Given each test sequence's 1-based alarm step ``tau_i`` (0 = no alarm), length ``T_i`` and label
(1 safe, 0 unsafe):

* false alarm rate: share of safe sequences flagged (the empirical risk of Eq. 2);
* power: share of unsafe sequences flagged; missed detection rate = 1 - power (Eq. 7);
* detection delay: mean of ``tau_i / T_i`` over the *detected* unsafe sequences (the fraction of the
  sequence seen when the alarm fires; NaN when none is detected).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.errors import InputError

__all__ = ["METRICS", "monitor_metrics"]

METRICS = ("false_alarm_rate", "power", "detection_delay", "missed_detection_rate")


def monitor_metrics(alarm_steps: np.ndarray, lengths: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """``false_alarm_rate, power, detection_delay, missed_detection_rate, n_safe, n_unsafe`` (NaN if undefined)."""
    a = np.asarray(alarm_steps)
    ln = np.asarray(lengths)
    y = np.asarray(labels)
    if not (a.shape == ln.shape == y.shape):
        raise InputError("alarm_steps, lengths and labels must have the same shape")
    flagged = a > 0
    safe, unsafe = y == 1, y == 0
    n_safe, n_unsafe = int(safe.sum()), int(unsafe.sum())
    far = float(flagged[safe].mean()) if n_safe else math.nan
    power = float(flagged[unsafe].mean()) if n_unsafe else math.nan
    det = flagged & unsafe
    delay = float(np.mean(a[det] / ln[det])) if det.any() else math.nan
    return {"false_alarm_rate": far, "power": power, "detection_delay": delay,
            "missed_detection_rate": (1.0 - power) if n_unsafe else math.nan,
            "n_safe": n_safe, "n_unsafe": n_unsafe}
