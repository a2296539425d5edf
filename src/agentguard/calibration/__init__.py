"""Calibrated online monitoring of streaming outputs (the online-safety-monitoring paper).

A verifier signal is watched step by step; the monitor of Eq. 1 (:class:`ThresholdMonitor`, the one
Eq. 1 guard) raises an alarm at the first step whose score falls below a threshold calibrated by
risk control (:class:`ThresholdCalibrator`) so that the false-alarm risk (or the missed-detection
risk) is at most ``alpha`` in expectation (CRC) or with probability ``1 - delta`` (UCB,
Hoeffding-Bentkus or exact binomial). :class:`MonitoredStream` (with :func:`stop_at_alarm` and
:func:`monitor_tokens`) cuts a token/step generator at the alarm; signal sources yield core
``Step`` records; the e-valuator baselines of Appendix C and the metrics of section 4 are here too.
The paper's evaluation protocol lives in :mod:`agentguard.bench.calibration`.

    >>> from agentguard.calibration import ThresholdCalibrator
    >>> cal = ThresholdCalibrator("false_alarm", "crc", alpha=0.1).calibrate(scores, labels)  # doctest: +SKIP
    >>> mon = cal.monitor(); mon.update(0.93)                                                 # doctest: +SKIP

Only numpy and scipy are imported here; :func:`load_signals` imports pandas when called.
"""

from .bounds import BOUNDS, binomial_pvalue, hb_pvalue, max_losses, min_n_for_guarantee, pvalue
from .calibrate import (
    METHODS,
    Calibration,
    ThresholdCalibrator,
    calibrate_threshold,
    crc_max_losses,
    threshold_from_minima,
)
from .chunks import openai_response_tokens, openai_tokens, parse_chunk
from .data import Sequences, load_signals
from .evaluator import EValuator, EValuatorMonitor, StepModels, fit_logistic, fit_step_models, pac_threshold
from .metrics import METRICS, monitor_metrics
from .monitor import ThresholdMonitor, first_alarm_steps, read_calibration
from .risks import RISKS, empirical_risk, relevant_label
from .signals import ClassifierSignal, SignalSource, TokenLogprobSignal, UserScores, gemma_tokens
from .stream import ChunkSteps, MonitoredStream, ScoredItems, Segmenter, TokenSteps, monitor_tokens, stop_at_alarm

__all__ = [
    "BOUNDS",
    "Calibration",
    "ChunkSteps",
    "ClassifierSignal",
    "EValuator",
    "EValuatorMonitor",
    "METHODS",
    "METRICS",
    "MonitoredStream",
    "RISKS",
    "ScoredItems",
    "Segmenter",
    "Sequences",
    "SignalSource",
    "StepModels",
    "ThresholdCalibrator",
    "ThresholdMonitor",
    "TokenLogprobSignal",
    "TokenSteps",
    "UserScores",
    "binomial_pvalue",
    "calibrate_threshold",
    "crc_max_losses",
    "empirical_risk",
    "first_alarm_steps",
    "fit_logistic",
    "fit_step_models",
    "gemma_tokens",
    "hb_pvalue",
    "load_signals",
    "max_losses",
    "min_n_for_guarantee",
    "monitor_metrics",
    "monitor_tokens",
    "openai_response_tokens",
    "openai_tokens",
    "pac_threshold",
    "parse_chunk",
    "pvalue",
    "read_calibration",
    "relevant_label",
    "stop_at_alarm",
    "threshold_from_minima",
]
