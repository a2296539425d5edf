"""Calibrated online monitoring of streaming outputs (the online-safety-monitoring paper).

A verifier signal is watched step by step; the monitor of Eq. 1 raises an alarm at the first step
whose score falls below a threshold calibrated by risk control so that the false-alarm risk (or the
missed-detection risk) is at most ``alpha`` in expectation (CRC) or with probability ``1 - delta``
(UCB, Hoeffding-Bentkus or exact binomial). The e-valuator baselines of Appendix C, the metrics of
section 4 and the evaluation protocol of Figures 1, 2 and 4 are here too.

    >>> from agentguard.calibration import ThresholdCalibrator
    >>> cal = ThresholdCalibrator("false_alarm", "crc", alpha=0.1).calibrate(scores, labels)  # doctest: +SKIP
    >>> mon = cal.monitor(); mon.update(0.93)                                                 # doctest: +SKIP
"""

from .bounds import binomial_pvalue, hb_pvalue, max_losses, min_n_for_guarantee
from .calibrate import Calibration, ThresholdCalibrator, calibrate_threshold, threshold_from_minima
from .data import Sequences, load_signals
from .evaluator import EValuator, EValuatorMonitor
from .exact import split_expected_risk
from .experiment import run_protocol
from .metrics import monitor_metrics
from .monitor import MonitoredStream, ThresholdMonitor, first_alarm_steps, stop_at_alarm
from .signals import (
    ClassifierSignal,
    MonitoredTokens,
    SignalSource,
    StepSignal,
    TokenLogprobSignal,
    UserScores,
    gemma_tokens,
    monitor_tokens,
    openai_response_tokens,
    openai_tokens,
)

__all__ = [
    "Calibration",
    "ClassifierSignal",
    "EValuator",
    "EValuatorMonitor",
    "MonitoredStream",
    "MonitoredTokens",
    "Sequences",
    "SignalSource",
    "StepSignal",
    "ThresholdCalibrator",
    "ThresholdMonitor",
    "TokenLogprobSignal",
    "UserScores",
    "binomial_pvalue",
    "calibrate_threshold",
    "first_alarm_steps",
    "gemma_tokens",
    "hb_pvalue",
    "load_signals",
    "max_losses",
    "min_n_for_guarantee",
    "monitor_metrics",
    "monitor_tokens",
    "openai_response_tokens",
    "openai_tokens",
    "run_protocol",
    "split_expected_risk",
    "stop_at_alarm",
    "threshold_from_minima",
]
