"""The threshold monitor of Eq. 1 of the online-safety-monitoring paper: the one Eq. 1 guard.

``tau = min{t : s_t < lambda}``: the monitor raises an alarm at the first step whose signal falls
below the threshold ``lambda``, and the alarm latches. :class:`ThresholdMonitor` is that rule as a
:class:`~agentguard.core.Guard` (``check``/``acheck``, one latched sequence per ``context.run_id``
in a :class:`~agentguard.core.runs.RunMemory`, ``end_run``) and as a plain sequential rule
(``update(score)``, ``run(scores)``, ``reset()`` on one sequence of its own).

What ``check(context, proposal)`` answers (documented contract, tested in
``tests/calibration/test_monitor.py``):

==========================================================  ============================================
proposal                                                    verdict
==========================================================  ============================================
a number, ``Step`` with ``signals[signal]``, or a mapping   ALLOW if ``score >= threshold``; else the
with ``signal`` (or any ``Step``/text when a ``scorer``     alarm: ``decision`` (HALT by default), with
is set: ``scorer(step.output, context)``)                   ``step``, ``score``, ``threshold`` numbers
anything unreadable: a ``ToolCall``, a ``Step`` without     ``decision`` (never ALLOW): the step counts
the signal, a NaN, +inf or non-numeric score, a scorer      and the alarm latches, as if the score were
that raises                                                 below every threshold
any proposal after the alarm                                the same (latched) alarm verdict
==========================================================  ============================================

A deployed monitor cannot certify a step it cannot read, so unreadable input is an alarm (fail
closed), whatever the threshold (even ``-inf``, the flag-nothing monitor); ``check`` never raises on
a proposal. ``update(score)`` is the numeric kernel: it takes a number and raises InputError for
anything else (a programming error, not a stream event).

:func:`first_alarm_steps` is the vectorised Eq. 1 over many sequences, for evaluation.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.guard import BaseGuard
from ..core.loading import SCORER, load_callable, read_json_file
from ..core.runs import RunMemory
from ..core.types import Context, Decision, Step, Verdict

__all__ = ["ThresholdMonitor", "first_alarm_steps", "read_calibration"]

Scorer = Callable[[str, Context], float]


def _score(value: Any) -> float:
    # text is not a score even when float() reads it ("0.99", " 1e3 ", "Infinity"): a client that
    # sends a string sent something else than the number the calibration was made on
    if isinstance(value, (bool, str, bytes, bytearray)):
        raise InputError(f"a monitor score must be a number, got {type(value).__name__} {str(value)[:40]!r}")
    try:
        s = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"a monitor score must be a number (a float), got {str(value)[:40]!r}") from None
    if math.isnan(s):
        raise InputError("a monitor score is NaN")
    if s == math.inf:
        # +inf is below no threshold, not even the alarm-at-once +inf of a trivial missed-detection
        # calibration, and a calibration on +inf minima would miss every such sequence: not a score
        raise InputError("a monitor score is +inf (scores are numbers below +inf)")
    return s


def _resolve_scorer(scorer: Scorer | str | None, name: str) -> Scorer | None:
    """A scorer given as a callable or as a ``"module:function"`` path (configuration files)."""
    if isinstance(scorer, str):
        scorer = load_callable(scorer, f"{name}: scorer", SCORER)  # declared -> float; never subprocess:run
    if scorer is not None and not callable(scorer):
        raise InputError(f"{name}: scorer must be callable scorer(step_text, context) -> float, or 'module:function'")
    return scorer


def read_calibration(path: str | Path) -> dict[str, Any]:
    """A calibration file: a JSON object ``{"threshold": float, "curves": {...}, ...}``."""
    data = read_json_file(path, "calibration file")  # a duplicate "threshold" or NaN is refused, not the last read
    if not isinstance(data, dict):
        raise InputError(f"calibration file {path}: expected an object")
    return data


class _Sequence:
    """The state of one watched sequence: steps seen, the latched alarm, and a rule's own memory."""

    __slots__ = ("alarm", "memory", "step")

    def __init__(self) -> None:
        self.step = 0
        self.alarm: Verdict | None = None
        self.memory: Any = None


class _SequenceMonitor(BaseGuard):
    """What every per-step alarm rule shares (the Eq. 1 monitor here, the e-valuator's): reading the
    score from a proposal, failing closed on unreadable input, latching, per-run memory.

    Subclasses set ``threshold``, ``decision``, ``name``, ``signal``, ``scorer``, ``info`` and call
    ``_start(max_runs)``; they implement ``_advance(state, score) -> Verdict`` (``state.step``
    already counts this step; call ``_alarm`` to raise the alarm).
    """

    threshold: float
    decision: Decision
    signal: str = "score"
    scorer: Scorer | None = None
    info: dict[str, Any]

    def _start(self, max_runs: int) -> None:
        self.max_runs = max_runs
        self._runs: RunMemory[_Sequence] = RunMemory(_Sequence, max_runs)
        self._own = _Sequence()

    def _advance(self, state: _Sequence, score: float) -> Verdict:  # pragma: no cover - abstract
        raise NotImplementedError

    def _alarm(self, state: _Sequence, reason: str, nums: Mapping[str, float], **details: Any) -> Verdict:
        state.alarm = Verdict(self.decision, reason, self.name, dict(nums), details={**self.info, **details})
        return state.alarm

    # -- one sequence of its own ------------------------------------------------------------------
    def reset(self) -> None:
        """Forget everything: the sequence ``update`` feeds and every run's sequence."""
        self._own = _Sequence()
        self._runs.clear()

    @property
    def step(self) -> int:
        """Steps fed to ``update`` since the last ``reset``."""
        return self._own.step

    @property
    def alarm(self) -> Verdict | None:
        """The latched alarm of the ``update`` sequence (None while it has not fired)."""
        return self._own.alarm

    @property
    def alarmed(self) -> bool:
        return self._own.alarm is not None

    def update(self, score: float) -> Verdict:
        """Feed the score of the next step; ALLOW or the (latched) alarm. Raises InputError on a
        non-number, NaN or +inf (use ``check`` for input that may be unreadable)."""
        if self._own.alarm is not None:
            return self._own.alarm
        s = _score(score)
        self._own.step += 1
        return self._advance(self._own, s)

    def run(self, scores: Iterable[float]) -> Verdict:
        """Feed a whole sequence (after a reset of the ``update`` sequence); the alarm, or the last ALLOW."""
        self._own = _Sequence()
        v = Verdict(Decision.ALLOW, "empty sequence", self.name, {"step": 0.0, "threshold": self.threshold})
        for s in scores:
            v = self.update(s)
            if self._own.alarm is not None:
                break
        return v

    # -- the guard protocol -----------------------------------------------------------------------
    def read_score(self, context: Context, proposal: Any) -> float:
        """The score ``s_t`` a proposal carries (see the module's table); InputError if unreadable."""
        if self.scorer is not None:
            if isinstance(proposal, Step):
                text = proposal.output or ""
            elif isinstance(proposal, str):
                text = proposal
            else:
                raise InputError(f"the scorer reads a Step's output text, got {type(proposal).__name__}")
            return _score(self.scorer(text, context))
        if isinstance(proposal, Step):
            if self.signal not in proposal.signals:
                raise InputError(f"step has no signal {self.signal!r} (has {sorted(proposal.signals)})")
            return _score(proposal.signals[self.signal])
        if isinstance(proposal, Mapping):
            if self.signal not in proposal:
                raise InputError(f"proposal has no signal {self.signal!r} (has {sorted(map(str, proposal))})")
            return _score(proposal[self.signal])
        if isinstance(proposal, numbers.Real) and not isinstance(proposal, bool):
            return _score(proposal)
        raise InputError(f"a monitor score must be a number, a Step or a mapping with {self.signal!r}, "
                         f"got {type(proposal).__name__}")

    def check(self, context: Context, proposal: Any) -> Verdict:
        """The verdict on the next step of run ``context.run_id`` (module doc: never ALLOW on
        unreadable input, never raises on a proposal). Runs are independent; ``end_run`` forgets one."""
        state = self._runs.get(context.run_id)
        if state.alarm is not None:
            return state.alarm
        try:
            s = self.read_score(context, proposal)
        except Exception as exc:  # noqa: BLE001 - unreadable input or a failing scorer: fail closed
            state.step += 1
            return self._alarm(state, f"unreadable proposal at step {state.step}: {exc} (the monitor fails closed)",
                               {"step": float(state.step), "threshold": self.threshold},
                               error=type(exc).__name__)
        state.step += 1
        return self._advance(state, s)

    def end_run(self, run_id: str) -> None:
        """Forget the sequence of a finished run."""
        self._runs.end_run(run_id)

    # -- copies (the service keeps a copy per run; RunMemory holds a lock) -----------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        runs = state.pop("_runs")
        state["_runs_held"] = {rid: runs.peek(rid) for rid in runs}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        held = state.pop("_runs_held", {})
        self.__dict__.update(state)
        self._runs = RunMemory(_Sequence, self.max_runs)
        for rid, seq in held.items():
            self._runs.set(rid, seq)


class ThresholdMonitor(_SequenceMonitor):
    """Eq. 1: alarm at the first step with ``score < threshold``; the alarm latches (see module doc).

    ``threshold = -inf`` never alarms on a readable score (the flag-nothing monitor), ``+inf`` alarms
    at step 1 (flag everything). ``decision`` is what an alarm says: HALT (stop generation) by
    default, REJECT or ESCALATE. ``signal`` names the score in ``Step.signals`` or a mapping;
    ``scorer(step_text, context) -> float`` (a callable or ``"module:function"``) computes it from the
    step's text instead (a verifier, a PRM, a guard model). ``info`` is copied into the alarm's
    ``details`` (the calibration behind the threshold); ``curves`` holds calibration curves for the
    dashboard. Deterministic, O(1) per step.
    """

    def __init__(self, threshold: float, *, scorer: Scorer | str | None = None, signal: str = "score",
                 decision: Decision | str = Decision.HALT, name: str = "threshold-monitor",
                 info: Mapping[str, Any] | None = None, max_runs: int = 10_000):
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or math.isnan(threshold):
            raise InputError(f"{name}: threshold must be a number, got {threshold!r}")
        self.threshold = float(threshold)
        self.decision = Decision.parse(decision)
        if not self.decision.refuses:
            raise InputError(f"an alarm must block (REJECT, ESCALATE or HALT), not {self.decision.name}")
        if not isinstance(signal, str) or not signal:
            raise InputError(f"{name}: signal must be a non-empty name")
        self.name = name
        self.signal = signal
        self.scorer = _resolve_scorer(scorer, name)
        self.info = dict(info or {})
        self.curves: dict[str, Any] = {}
        self._start(max_runs)

    def __repr__(self) -> str:
        extra = f", scorer={getattr(self.scorer, '__name__', 'scorer')}" if self.scorer is not None else ""
        return (f"ThresholdMonitor(threshold={self.threshold:.6g}, signal={self.signal!r}{extra}, "
                f"decision={self.decision.name}, name={self.name!r})")

    def _advance(self, state: _Sequence, s: float) -> Verdict:
        nums = {"step": float(state.step), "score": s, "threshold": self.threshold}
        if s < self.threshold:
            return self._alarm(state, f"signal {s:.4g} fell below the calibrated threshold {self.threshold:.4g} "
                                      f"at step {state.step}", nums)
        return Verdict(Decision.ALLOW, "signal above threshold", self.name, nums)

    #: the keys ``from_config`` accepts (a ``[[guards]]`` table of type ``threshold-monitor``)
    CONFIG_KEYS = ("calibration", "decision", "info", "max_runs", "name", "scorer", "signal", "threshold")

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> ThresholdMonitor:
        """Build from a configuration table (its keys but ``type``; paths already resolved).

        Keys: ``threshold`` (a number) and/or ``calibration`` (a calibration JSON file, see
        :func:`read_calibration`: its ``threshold`` is used when ``threshold`` is not given, its other
        scalar entries go to ``info``, its ``curves`` to ``curves``); ``signal``, ``scorer``
        (``"module:function"``), ``decision``, ``name``, ``info``, ``max_runs``. An unknown key is an
        InputError naming it.
        """
        p = dict(params)
        unknown = sorted(set(p) - set(cls.CONFIG_KEYS))
        if unknown:
            raise InputError(f"threshold-monitor: unknown key(s) {', '.join(unknown)} "
                             f"(expected {', '.join(cls.CONFIG_KEYS)})")
        threshold = p.pop("threshold", None)
        calibration = p.pop("calibration", None)
        info: dict[str, Any] = dict(p.pop("info", None) or {})
        curves: dict[str, Any] = {}
        if calibration is not None:
            data = read_calibration(calibration)
            if threshold is None:
                if "threshold" not in data:
                    raise InputError(f"calibration file {calibration} has no 'threshold'")
                threshold = data["threshold"]
            info = {**{k: v for k, v in data.items() if k not in ("curves", "threshold")
                       and isinstance(v, (int, float, str))}, **info}
            curves = dict(data.get("curves") or {})
        if threshold is None:
            raise InputError("threshold-monitor needs 'threshold' or 'calibration'")
        if isinstance(threshold, str):
            try:
                threshold = float(threshold)  # "-inf", "inf" as JSON files write them
            except ValueError:
                raise InputError(f"threshold-monitor: threshold must be a number, got {threshold!r}") from None
        m = cls(threshold, info=info, **p)
        m.curves = curves
        return m


def first_alarm_steps(scores: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                      threshold: float) -> np.ndarray:
    """Vectorised Eq. 1 over many sequences: the 1-based alarm step of each, 0 where none fires.

    A NaN score alarms at its step, as the streaming monitor's unreadable input does (``nan <
    threshold`` is False: it read as no alarm); a NaN threshold is an InputError."""
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or math.isnan(threshold):
        raise InputError(f"threshold must be a number, got {threshold!r}")
    scores = np.asarray(scores, dtype=float)
    n_rows = len(scores)
    step = np.arange(n_rows) - np.repeat(starts, lengths) + 1
    big = np.iinfo(np.int64).max
    vals = np.where((scores < threshold) | np.isnan(scores), step, big)
    first = np.minimum.reduceat(vals, starts)
    first[first == big] = 0
    return first
