"""Per-run state kept server-side, with expiry.

A run's state is the trace so far (the steps fed to ``/v1/runs/{run_id}/steps``), the risk series the
proactive guard produced and the signal series the monitor saw. It lives in the process's memory as
a cache; the steps themselves are also in the audit store, so a replica (or worker) that has not
seen a run rebuilds its trace from the store (the store is the source of truth; replicas stay
stateless).

Expiry: a run idle for more than ``ttl_s`` seconds is expired: its memory is freed, and a later step
or signal for it is refused (410 Gone) so a client cannot silently continue a run whose context was
dropped. The decision is made from the last activity time, which the store also knows, so every
replica agrees.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

from ..core.errors import AgentGuardError
from ..core.types import Trace

__all__ = ["RunExpired", "RunRegistry", "RunState"]


class RunExpired(AgentGuardError):
    """The run was idle longer than the expiry; its state is gone."""


@dataclass
class RunState:
    run_id: str
    trace: Trace
    created: float = field(default_factory=time.time)
    last_seen: float = field(default_factory=time.time)
    risk: list[dict[str, Any]] = field(default_factory=list)
    signals: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    extra: dict[str, Any] = field(default_factory=dict)


class RunRegistry:
    """Run states keyed by run id, expiring after ``ttl_s`` idle seconds; at most ``max_runs`` kept.

    ``clock`` is injectable for tests; ``on_drop(state)`` is called (outside the lock) for every run
    state that leaves the registry.
    """

    def __init__(self, ttl_s: float = 3600.0, *, max_runs: int = 100_000,
                 clock: Callable[[], float] = time.time, tombstones: int = 100_000,
                 on_drop: Callable[[RunState], None] | None = None) -> None:
        self.on_drop = on_drop
        self.ttl_s = float(ttl_s)
        self.max_runs = max_runs
        self.clock = clock
        self._runs: "OrderedDict[str, RunState]" = OrderedDict()
        self._expired: "OrderedDict[str, float]" = OrderedDict()
        self._tombstones = tombstones
        self._lock = threading.Lock()
        self.expired_total = 0

    def __len__(self) -> int:
        return len(self._runs)

    def __contains__(self, run_id: str) -> bool:
        return run_id in self._runs

    def sweep(self) -> int:
        """Drop every run idle for longer than the expiry; returns how many were dropped."""
        now = self.clock()
        gone: list[RunState] = []
        with self._lock:
            # _runs is kept in last-seen order (move_to_end on touch), so expired ones are at the front.
            while self._runs:
                run_id, st = next(iter(self._runs.items()))
                if now - st.last_seen <= self.ttl_s:
                    break
                self._runs.popitem(last=False)
                self._mark_expired(run_id, st.last_seen)
                gone.append(st)
        self._dropped(gone)
        return len(gone)

    def _dropped(self, states: list[RunState]) -> None:
        if self.on_drop is None:
            return
        for st in states:
            try:
                self.on_drop(st)
            except Exception:  # noqa: BLE001 - cleanup must not fail a request
                pass

    def _mark_expired(self, run_id: str, last_seen: float) -> None:
        self._expired[run_id] = last_seen
        self._expired.move_to_end(run_id)
        while len(self._expired) > self._tombstones:
            self._expired.popitem(last=False)
        self.expired_total += 1

    def get(self, run_id: str, *, rebuild: Callable[[str], tuple[Trace, float] | None] | None = None) -> RunState:
        """The state of ``run_id``, created if new, rebuilt with ``rebuild`` if another process saw it.

        ``rebuild(run_id)`` returns ``(trace, last_activity_time)`` from the store, or None.
        Raises :class:`RunExpired` for a run idle longer than the expiry.
        """
        self.sweep()
        now = self.clock()
        with self._lock:
            st = self._runs.get(run_id)
            if st is not None:
                st.last_seen = now
                self._runs.move_to_end(run_id)
                return st
            if run_id in self._expired:
                raise RunExpired(f"run {run_id} expired after {self.ttl_s:g}s without activity; start a new run id")
        rebuilt = rebuild(run_id) if rebuild is not None else None
        evicted: list[RunState] = []
        try:
            return self._create(run_id, rebuilt, now, evicted)
        finally:
            self._dropped(evicted)

    def _create(self, run_id: str, rebuilt: tuple[Trace, float] | None, now: float,
                evicted: list[RunState]) -> RunState:
        with self._lock:
            st = self._runs.get(run_id)
            if st is not None:  # another request created it meanwhile
                return st
            if rebuilt is not None:
                trace, last = rebuilt
                if now - last > self.ttl_s:
                    self._mark_expired(run_id, last)
                    raise RunExpired(
                        f"run {run_id} expired after {self.ttl_s:g}s without activity; start a new run id")
                st = RunState(run_id, trace, created=now, last_seen=now)
            else:
                st = RunState(run_id, Trace(run_id=run_id), created=now, last_seen=now)
            self._runs[run_id] = st
            while len(self._runs) > self.max_runs:
                old_id, old = self._runs.popitem(last=False)
                self._mark_expired(old_id, old.last_seen)
                evicted.append(old)
            return st

    def forget(self, run_id: str) -> None:
        """Drop a run's cached state without marking it expired (it will be rebuilt from the store)."""
        with self._lock:
            st = self._runs.pop(run_id, None)
        if st is not None:
            self._dropped([st])

    def peek(self, run_id: str) -> RunState | None:
        return self._runs.get(run_id)

    def states(self) -> list[RunState]:
        return list(self._runs.values())
