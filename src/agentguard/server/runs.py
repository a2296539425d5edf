"""Per-run state of the service: the core's :class:`~agentguard.core.pipeline.RunState` in the core's
:class:`~agentguard.core.runs.RunMemory` (one home), and one lock per run id.

A run's state (its step trace, latched HALT, enforcement-strategy counters) lives in ONE
:class:`ServiceRuns` memory shared by the service's pipelines (check, step, signal). It is a cache of
the audit store: every decided input is stored in order (``inputs`` table, with the state after it),
so a run this process does not hold (new here, moved on by another replica, let go for capacity) is
rebuilt from the store, never treated as new (:meth:`agentguard.server.service.Service.state`).

Expiry: a run whose last stored input (any kind, decided by any worker or replica) is older than the
service's ``run_ttl_s`` is refused (410 Gone, :class:`RunExpired`) so a client cannot silently continue a
run whose context was dropped; the service reads that time from the store
(:meth:`agentguard.server.service.Service.state`), so every replica answers alike. This memory's own
``ttl_s`` only lets idle runs go from this process; a run that left (idle here, or for capacity) is
rebuilt from the store when it is not expired there.

Locks: :class:`RunLocks` hands out one ``asyncio.Lock`` per run id, held by every request of that run
from before its state is read until its decision is stored; the lock does not live in the state (which
a rebuild replaces), so two requests of one run never hold different locks. A worker thread a request starts
under the lock to change the run's state or its guards' memory (a rebuild, a catch-up, a guard's replay) runs through
:func:`finish_in_thread`, and a decision by guards with per-run memory (whose checks may run in worker threads)
through :func:`finished`: a cancelled request lets go of the lock only after that work ended, so no thread of one
request ever changes a run while the next request of it holds the lock (session 26).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Hashable, TypeVar

from ..core.errors import AgentGuardError
from ..core.pipeline import RunState
from ..core.runs import RunMemory
from ..core.types import Trace

__all__ = ["RunExpired", "RunLocks", "ServiceRun", "ServiceRuns", "finish_in_thread", "finished"]

T = TypeVar("T")


class RunExpired(AgentGuardError):
    """The run was idle longer than the expiry; its state is gone."""


@dataclass
class ServiceRun(RunState):
    """A run's state in the service: the core RunState plus what ties it to the store.

    ``stored``: how many of the run's inputs (rows of the ``inputs`` table) this state reflects;
    ``gen``: the generation of the guards whose per-run memory was brought up to date (a hot reload
    starts a new generation and the run is replayed into the new guards); ``last``: the time of the
    run's last stored input; ``version``: the run's version in the store's shared counters
    (:meth:`~agentguard.server.audit.AuditStore.run_version`) when this state was last known to be the
    store's (None: unknown, the store is read)."""

    stored: int = 0
    gen: int = -1
    last: float = 0.0
    version: int | None = None

    @property
    def trace(self) -> Trace:
        """The run's steps so far (``context.trace``)."""
        return self.context.trace


def _no_factory() -> ServiceRun:  # runs are created by the service (new or rebuilt), never by get()
    raise AgentGuardError("a service run is created by Service.state, not by the memory")


class ServiceRuns(RunMemory[ServiceRun]):
    """The service's run memory: a :class:`~agentguard.core.runs.RunMemory` (``max_runs``, ``ttl_s``,
    tombstones, ``on_drop``) that also says why a run left (expiry or capacity)."""

    def __init__(self, ttl_s: float = 3600.0, *, max_runs: int = 100_000, clock: Callable[[], float] = time.time,
                 on_drop: Callable[[Hashable, ServiceRun], None] | None = None) -> None:
        super().__init__(_no_factory, max_runs, ttl_s=ttl_s, on_drop=on_drop, clock=clock)
        self.expired_total = 0

    def _bury(self, run_id: Hashable, why: str) -> None:
        super()._bury(run_id, why)
        if why.startswith("expired"):
            self.expired_total += 1

    def gone_why(self, run_id: Hashable) -> str | None:
        """Why ``run_id`` left (``"expired ..."`` or ``"evicted (capacity)"``), None if it did not."""
        with self._lock:
            return self._gone.get(run_id)

    def held(self, run_id: Hashable) -> ServiceRun | None:
        """The state of ``run_id`` if held (touched: it counts as used now), else None; expires idle runs."""
        dropped: list[tuple[Hashable, ServiceRun]] = []
        try:
            with self._lock:
                self._expire(dropped)
                if run_id not in self._runs:
                    return None
                self._touch(run_id)
                return self._runs[run_id]
        finally:
            self._dropped(dropped)

    def states(self) -> list[ServiceRun]:
        return self.values()


class RunLocks:
    """One ``asyncio.Lock`` per run id: every request of a run holds it from before the run's state is read
    until its decision is stored. A lock lives as long as a request holds or waits for it (counted: the entry
    goes when the last of them leaves), so concurrent requests of one run always share the same lock object."""

    def __init__(self) -> None:
        self._locks: dict[str, list[Any]] = {}  # run id -> [lock, requests holding or waiting for it]

    def get(self, run_id: str) -> asyncio.Lock:
        """The lock of ``run_id`` now (a new one when no request holds or waits for it)."""
        entry = self._locks.get(run_id)
        return entry[0] if entry is not None else asyncio.Lock()

    def hold(self, run_id: str) -> "_Held":
        """``async with locks.hold(run_id):`` the run's lock, held for the block (a plain class, not a
        generator-based context manager: every decision takes it)."""
        return _Held(self._locks, run_id)

    def __len__(self) -> int:
        return len(self._locks)


class _Held:
    __slots__ = ("locks", "run_id", "entry")

    def __init__(self, locks: dict[str, list[Any]], run_id: str) -> None:
        self.locks = locks
        self.run_id = run_id
        entry = locks.get(run_id)
        if entry is None:
            entry = locks[run_id] = [asyncio.Lock(), 0]
        entry[1] += 1  # counted from now: the entry stays while this request waits and holds it
        self.entry = entry

    @property
    def lock(self) -> asyncio.Lock:
        """The run's lock (the same object for every request of the run while any holds or waits for it)."""
        return self.entry[0]

    def _leave(self) -> None:
        entry = self.entry
        entry[1] -= 1
        if entry[1] == 0 and self.locks.get(self.run_id) is entry:
            del self.locks[self.run_id]

    async def __aenter__(self) -> asyncio.Lock:
        lock = self.entry[0]
        try:
            await lock.acquire()
        except BaseException:  # cancelled while waiting: it holds nothing
            self._leave()
            raise
        return lock

    async def __aexit__(self, *_exc: Any) -> None:
        self.entry[0].release()
        self._leave()


async def finished(aw: Awaitable[T], wait: bool = True) -> T:
    """``await aw`` (a coroutine or future: run as a task of its own), awaited to its end even when the caller is
    cancelled: the cancellation is raised only once ``aw`` finished (what it returned or raised is dropped then).
    Without ``wait``, plainly ``await aw`` (no task: nothing it does outlives the caller or needs to).
    Under a run's lock, for work that changes the run's state or its guards' memory, including work a worker thread
    does for it: the lock is released only after that work ended, so it cannot race the next request of the run."""
    if not wait:
        return await aw
    fut = asyncio.ensure_future(aw)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        while not fut.done():  # wait for it; a cancellation meanwhile changes nothing
            try:
                await asyncio.wait((fut,))
            except asyncio.CancelledError:
                continue
        if not fut.cancelled():
            fut.exception()  # retrieved: the cancellation is what the caller gets
        raise


async def finish_in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a worker thread (in a copy of the caller's context), :func:`finished`: a cancelled caller
    gets its cancellation once the thread ended.

    Before (session 26 red team): a request cancelled while its run was rebuilt in a worker thread
    (``run_in_threadpool``, which returns at once on cancellation) released the lock while the thread went on; the
    next request rebuilt the run too, the two replays fed the guard's per-run memory twice, and the stale thread
    installed a state short of the input the next request had stored (replayed again on the next catch-up)."""
    loop = asyncio.get_running_loop()
    return await finished(loop.run_in_executor(None, contextvars.copy_context().run, fn, *args))
