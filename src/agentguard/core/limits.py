"""Values read from configuration that bound a guard: time limits, thresholds and the decision a guard refuses
with, checked one way everywhere.

A configuration file (TOML, YAML, JSON) can spell ``nan``, ``inf``, ``-1``, ``true`` or ``"0.5"`` where a number
is meant. Each of these used to pass a check written as ``value <= 0`` (``nan <= 0`` is False): a time limit of
``nan`` or ``inf`` is no limit at all (``elapsed > nan`` is never true, so a late verdict was accepted and a policy's
tick never fired), and ``threshold = false`` is ``0.0``, a monitor that never alarms. Here a time limit is an
real number (never a ``bool``, never text), finite, positive and at most a stated ceiling; a probability
threshold is a finite real number in [0, 1]. The decision a guard gives when its rule fires (``decision =``
of an argument rule, a proactive or traffic-law guard) must refuse: ``decision = "allow"`` (or ``false``, which
:meth:`Decision.parse` read as ALLOW, the enum's 0) made the rule fire and the call go through. Anything else is a
one-line :class:`InputError` naming ``where``.
"""

from __future__ import annotations

import inspect
import math
import numbers
import types
import typing
from collections.abc import Mapping
from typing import Any

from .errors import InputError
from .types import Decision

__all__ = ["MAX_TIME_LIMIT_S", "declared_scalars", "probability", "refusing", "time_limit"]

#: the longest per-call time limit a configuration may set (seconds): a guard that takes longer than a minute per
#: tool call is a misconfiguration (a time limit of 1e300 s is no limit), never a policy
MAX_TIME_LIMIT_S = 60.0


def _number(value: Any) -> bool:
    """A real number (int, float, a numpy scalar, a Fraction), never a bool (an int subclass) nor text."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and type(value).__name__ != "bool_"


def time_limit(value: Any, where: str, *, most: float = MAX_TIME_LIMIT_S) -> float:
    """``value`` as a time limit in seconds: a finite number with ``0 < value <= most``; InputError otherwise."""
    if not _number(value) or not math.isfinite(value) or not 0 < value <= most:
        raise InputError(f"{where}: expected a positive number of seconds (finite, at most {most:g}), "
                         f"got {type(value).__name__} {value!r}")
    return float(value)


def probability(value: Any, where: str) -> float:
    """``value`` as a probability threshold: a finite number in [0, 1] (not a bool, not text); InputError otherwise."""
    if not _number(value) or not math.isfinite(value) or not 0 <= value <= 1:
        raise InputError(f"{where} must be in [0, 1], got {value!r} ({type(value).__name__}; a finite number, "
                         "never a bool or text)")
    return float(value)


def refusing(value: Any, where: str) -> Decision:
    """``value`` as the decision a rule gives when it fires: REJECT, ESCALATE or HALT (a name or a Decision; never
    ALLOW, MODIFY or RECOVER, which let the call through, and never a bool); InputError otherwise."""
    try:
        decision = Decision.parse(value)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    if not decision.refuses:
        raise InputError(f"{where}: decision must refuse (REJECT, ESCALATE or HALT), not {decision.name}: a rule "
                         "that fires would let the call through")
    return decision


_SCALARS = {bool: "true or false", int: "an integer", float: "a number"}


def _scalar_ok(value: Any, kinds: set[type]) -> bool:
    if bool in kinds and isinstance(value, bool):
        return True
    if int in kinds and isinstance(value, int) and not isinstance(value, bool):
        return True
    return float in kinds and _number(value) and not math.isnan(value)


def declared_scalars(factory: Any, params: Mapping[str, Any], where: str) -> None:
    """Refuse a configuration value whose type is not the one the factory's signature declares, for parameters
    annotated ``bool``, ``int``, ``float`` (or a union of these, with ``None``): a TOML/YAML value is read as the
    program reads it, so ``decode = 0`` / ``learn = "no"`` (truthiness), ``max_runs = 1.9`` or ``true`` (``int()``
    made them 1) and ``threshold = "0.5"`` or ``nan`` are one-line InputErrors naming ``where.key`` instead of
    another setting than the one written. A class is checked against ``__init__`` (its ``from_config`` reads
    the same keys); parameters with other annotations, or a signature that does not resolve, are left to the
    factory. ``inf`` stays a number here (a monitor's ``threshold = -inf`` is a documented setting); time limits
    and probabilities have their own checks above."""
    target = factory.__init__ if inspect.isclass(factory) else factory
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve declares nothing
        return
    for key, value in params.items():
        ann = hints.get(key)
        if ann is None:
            continue
        members = set(typing.get_args(ann)) if typing.get_origin(ann) in (typing.Union, types.UnionType) else {ann}
        kinds = {m for m in members if m in _SCALARS}
        if not kinds or members - kinds - {type(None)}:
            continue  # not a plain scalar parameter
        if value is None and type(None) in members:
            continue
        if not _scalar_ok(value, kinds):
            want = " or ".join(_SCALARS[k] for k in (bool, int, float) if k in kinds)
            raise InputError(f"{where}.{key}: expected {want}, got {type(value).__name__} {value!r}")
