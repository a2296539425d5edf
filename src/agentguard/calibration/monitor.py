"""The threshold monitor of Eq. 1 of the online-safety-monitoring paper, for streams.

``tau = min{t : s_t < lambda}``: the monitor raises an alarm at the first step whose signal falls
below the threshold ``lambda``. :class:`ThresholdMonitor` is fed one score at a time and answers a
:class:`~agentguard.core.Verdict` per step: ALLOW, or (once the alarm fires, and from then on) HALT
or REJECT with ``step``, ``score`` and ``threshold`` in ``numbers``. It is also a Guard: ``check``
reads the score from a number, a ``Step`` (its ``signals[signal]``) or a mapping.

:func:`stop_at_alarm` wraps a generator of items (tokens, reasoning steps) and a scoring function
and stops pulling from (and closes) the generator at the alarm.

Vectorised counterparts for evaluation (all sequences at once) are :func:`first_alarm_steps`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import numpy as np

from ..core.errors import InputError
from ..core.guard import BaseGuard
from ..core.types import Context, Decision, Step, Verdict

__all__ = ["MonitoredStream", "ThresholdMonitor", "first_alarm_steps", "stop_at_alarm"]

T = TypeVar("T")


def _score(value: Any) -> float:
    try:
        s = float(value)
    except (TypeError, ValueError):
        raise InputError(f"a monitor score must be a number, got {value!r}") from None
    if math.isnan(s):
        raise InputError("a monitor score is NaN")
    return s


class ThresholdMonitor(BaseGuard):
    """Eq. 1: alarm at the first step with ``score < threshold``; the alarm latches until ``reset``.

    ``threshold = -inf`` never alarms (the flag-nothing monitor), ``+inf`` alarms at step 1 (flag
    everything). ``decision`` is what an alarm says: HALT (stop generation) by default, or REJECT.
    The monitor is deterministic and O(1) per step.
    """

    def __init__(self, threshold: float, *, decision: Decision | str = Decision.HALT,
                 name: str = "threshold-monitor", signal: str = "score", info: Mapping[str, Any] | None = None):
        t = float(threshold)
        if math.isnan(t):
            raise InputError("threshold is NaN")
        self.threshold = t
        self.decision = Decision.parse(decision)
        if self.decision < Decision.REJECT:
            raise InputError(f"an alarm must block (REJECT, ESCALATE or HALT), not {self.decision.name}")
        self.name = name
        self.signal = signal
        self.info = dict(info or {})
        self.reset()

    def __repr__(self) -> str:
        return f"ThresholdMonitor(threshold={self.threshold:.6g}, decision={self.decision.name}, name={self.name!r})"

    def reset(self) -> None:
        """Start a new sequence."""
        self.step = 0
        self.alarm: Verdict | None = None

    @property
    def alarmed(self) -> bool:
        return self.alarm is not None

    def update(self, score: float) -> Verdict:
        """Feed the score of the next step; ALLOW or the (latched) alarm verdict."""
        if self.alarm is not None:
            return self.alarm
        s = _score(score)
        self.step += 1
        if s < self.threshold:
            self.alarm = Verdict(
                self.decision,
                f"signal {s:.4g} fell below the calibrated threshold {self.threshold:.4g} at step {self.step}",
                self.name, {"step": float(self.step), "score": s, "threshold": self.threshold},
                details=dict(self.info))
            return self.alarm
        return Verdict(Decision.ALLOW, "signal above threshold", self.name,
                       {"step": float(self.step), "score": s, "threshold": self.threshold})

    def run(self, scores: Iterable[float]) -> Verdict:
        """Feed a whole sequence (after ``reset``); the alarm verdict, or ALLOW if none fired."""
        self.reset()
        v = Verdict(Decision.ALLOW, "empty sequence", self.name, {"step": 0.0, "threshold": self.threshold})
        for s in scores:
            v = self.update(s)
            if self.alarm is not None:
                break
        return v

    def check(self, context: Context, proposal: Any) -> Verdict:
        """Guard protocol: the proposal is a score, a Step with ``signals[self.signal]``, or a mapping.

        Each run (``context.run_id``) has its own step count and latched alarm, so one guard can watch
        many concurrent runs; ``end_run(run_id)`` forgets a finished run.
        """
        if isinstance(proposal, Step):
            if self.signal not in proposal.signals:
                raise InputError(f"step has no signal {self.signal!r} (has {sorted(proposal.signals)})")
            score = proposal.signals[self.signal]
        elif isinstance(proposal, Mapping):
            if self.signal not in proposal:
                raise InputError(f"proposal has no {self.signal!r} value")
            score = proposal[self.signal]
        else:
            score = proposal
        runs = self.__dict__.setdefault("_runs", {})
        run = runs.get(context.run_id)
        if run is None:
            run = runs[context.run_id] = ThresholdMonitor(self.threshold, decision=self.decision, name=self.name,
                                                          signal=self.signal, info=self.info)
        return run.update(score)

    def end_run(self, run_id: str) -> None:
        """Forget the per-run state of a finished run (see ``check``)."""
        self.__dict__.get("_runs", {}).pop(run_id, None)


class MonitoredStream(Generic[T]):
    """Iterate ``items`` while a monitor watches ``score_fn`` of each; stop at the alarm.

    After iteration, ``verdict`` is the alarm (or the last ALLOW), ``n_items`` the number of items
    yielded. With ``include_alarm_item=True`` (default) the item that triggered the alarm is yielded
    before stopping (it has been generated already); otherwise it is withheld.
    ``score_fn(item)`` may return None for items that carry no score (they pass without a check).
    """

    def __init__(self, items: Iterable[T], monitor: Any, score_fn: Callable[[T], float | None] = float,
                 *, include_alarm_item: bool = True):
        self.items = items
        self.monitor = monitor
        self.score_fn = score_fn
        self.include_alarm_item = include_alarm_item
        self.verdict: Verdict | None = None
        self.n_items = 0

    def __iter__(self) -> Iterator[T]:
        it = iter(self.items)
        try:
            for item in it:
                s = self.score_fn(item)
                if s is not None:
                    self.verdict = self.monitor.update(s)
                    if self.verdict.decision is not Decision.ALLOW:
                        if self.include_alarm_item:
                            self.n_items += 1
                            yield item
                        return
                self.n_items += 1
                yield item
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    @property
    def stopped(self) -> bool:
        return self.verdict is not None and self.verdict.decision is not Decision.ALLOW


def stop_at_alarm(items: Iterable[T], monitor: Any, score_fn: Callable[[T], float | None] = float,
                  *, include_alarm_item: bool = True) -> MonitoredStream[T]:
    """Wrap a token/step generator so generation stops at the monitor's alarm (see MonitoredStream)."""
    return MonitoredStream(items, monitor, score_fn, include_alarm_item=include_alarm_item)


def first_alarm_steps(scores: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                      threshold: float) -> np.ndarray:
    """Vectorised Eq. 1 over many sequences: the 1-based alarm step of each, 0 where none fires."""
    n_rows = len(scores)
    step = np.arange(n_rows) - np.repeat(starts, lengths) + 1
    big = np.iinfo(np.int64).max
    vals = np.where(scores < threshold, step, big)
    first = np.minimum.reduceat(vals, starts)
    first[first == big] = 0
    return first
