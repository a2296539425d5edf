"""The two risks of a threshold monitor (section 3.3 and Appendix B of the online-safety-monitoring paper).

With the monitor of Eq. 1 (alarm at the first step whose score is below ``lambda``), a sequence is
flagged iff its minimum score ``m = min_t s_t`` is below ``lambda``. Hence

* false alarm (Eq. 2), over safe sequences (Y = 1): loss ``1[m < lambda]``, non-decreasing in
  ``lambda``; calibration picks the *largest* admissible threshold;
* missed detection (Eq. 7), over unsafe sequences (Y = 0): loss ``1[m >= lambda]``, non-increasing
  in ``lambda``; calibration picks the *smallest* admissible threshold.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import InputError

__all__ = ["RISKS", "empirical_risk", "relevant_label"]

RISKS = ("false_alarm", "missed_detection")


def check_risk(risk: str) -> str:
    if risk not in RISKS:
        raise InputError(f"unknown risk {risk!r}; expected one of {', '.join(RISKS)}")
    return risk


def relevant_label(risk: str) -> int:
    """The label of the sequences a risk is measured on: 1 (safe) for false alarm, 0 for missed detection."""
    return 1 if check_risk(risk) == "false_alarm" else 0


def empirical_risk(minima: np.ndarray, threshold: float, risk: str) -> float:
    """The empirical risk of threshold ``lambda`` on the per-sequence minima of the relevant class."""
    m = np.asarray(minima, dtype=float)
    if m.size == 0:
        raise InputError("empirical risk of an empty set")
    if check_risk(risk) == "false_alarm":
        return float(np.mean(m < threshold))
    return float(np.mean(m >= threshold))
