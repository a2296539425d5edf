"""Numbers read from configuration that bound a guard: time limits and thresholds, checked one way everywhere.

A configuration file (TOML, YAML, JSON) can spell ``nan``, ``inf``, ``-1``, ``true`` or ``"0.5"`` where a number
is meant. Each of these used to pass a check written as ``value <= 0`` (``nan <= 0`` is False): a time limit of
``nan`` or ``inf`` is no limit at all (``elapsed > nan`` is never true, so a late verdict was accepted and a policy's
tick never fired), and ``threshold = false`` is ``0.0``, a monitor that never alarms. Here a time limit is an
``int``/``float`` (never a ``bool``, never text), finite, positive and at most a stated ceiling; a probability
threshold is a finite ``int``/``float`` in [0, 1]. Anything else is a one-line :class:`InputError` naming ``where``.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import InputError

__all__ = ["MAX_TIME_LIMIT_S", "probability", "time_limit"]

#: the longest per-call time limit a configuration may set (seconds): a guard that takes longer than a minute per
#: tool call is a misconfiguration (a time limit of 1e300 s is no limit), never a policy
MAX_TIME_LIMIT_S = 60.0


def _number(value: Any) -> bool:
    return type(value) in (int, float)  # not bool (an int subclass), not a numpy scalar, not text


def time_limit(value: Any, where: str, *, most: float = MAX_TIME_LIMIT_S) -> float:
    """``value`` as a time limit in seconds: a finite number with ``0 < value <= most``; InputError otherwise."""
    if not _number(value) or not math.isfinite(value) or not 0 < value <= most:
        raise InputError(f"{where}: expected a positive number of seconds (finite, at most {most:g}), "
                         f"got {type(value).__name__} {value!r}")
    return float(value)


def probability(value: Any, where: str) -> float:
    """``value`` as a probability threshold: a finite number in [0, 1] (not a bool, not text); InputError otherwise."""
    if not _number(value) or not math.isfinite(value) or not 0 <= value <= 1:
        raise InputError(f"{where}: expected a number in [0, 1], got {type(value).__name__} {value!r}")
    return float(value)
