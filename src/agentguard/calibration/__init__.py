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

Only numpy and scipy are imported here; :func:`load_signals` imports pandas when called. The
statistics behind the calibrator (bounds, risks, ``Calibration``, ``threshold_from_minima``, ...), the
e-valuator's fitting helpers, ``first_alarm_steps``, ``read_calibration`` and the stream's
building blocks stay public in their modules (:mod:`.bounds`, :mod:`.risks`, :mod:`.calibrate`,
:mod:`.evaluator`, :mod:`.monitor`, :mod:`.stream`, :mod:`.chunks`), not here.
"""

from .calibrate import ThresholdCalibrator, calibrate_threshold
from .chunks import openai_response_tokens, openai_tokens, parse_chunk
from .data import Sequences, load_signals
from .evaluator import EValuator, EValuatorMonitor
from .metrics import monitor_metrics
from .monitor import ThresholdMonitor
from .signals import ClassifierSignal, SignalSource, TokenLogprobSignal, UserScores, gemma_tokens
from .stream import ChunkSteps, MonitoredStream, TokenSteps, monitor_tokens, stop_at_alarm

__all__ = [
    "ChunkSteps",
    "ClassifierSignal",
    "EValuator",
    "EValuatorMonitor",
    "MonitoredStream",
    "Sequences",
    "SignalSource",
    "ThresholdCalibrator",
    "ThresholdMonitor",
    "TokenLogprobSignal",
    "TokenSteps",
    "UserScores",
    "calibrate_threshold",
    "gemma_tokens",
    "load_signals",
    "monitor_metrics",
    "monitor_tokens",
    "openai_response_tokens",
    "openai_tokens",
    "parse_chunk",
    "stop_at_alarm",
]
