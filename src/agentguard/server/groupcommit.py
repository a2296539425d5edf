"""How the audit writer (:mod:`.writer`) takes its batches from its queue: group commit that grows under load.

The writer takes every record waiting in its queue (up to ``max_batch``). Under load it waits for more
(PostgreSQL's ``commit_delay``/``commit_siblings``): when its previous batch held at least :data:`GROW_FROM` records
and ended less than :data:`BUSY_S` ago, and it holds fewer than twice as many now, it sleeps ``commit_delay_s`` once
(1 ms by default; ``AGENTGUARD_AUDIT_COMMIT_DELAY_US``, 0 turns it off) and takes what arrived meanwhile. Each commit
costs its fsync, its WAL frames of shared pages and a wake-up per event loop whatever its size, so fewer, larger
batches cost less CPU per record. A request that finds the writer idle, or a light load, is never delayed; under
load none waits more than ``commit_delay_s`` longer than it would have. One sleep rather than a wake-up per arriving
record: each wake-up of the writer's thread must take the GIL back from the busy event loop (up to the 5 ms switch
interval), and one round of that form took 10 ms per request.
"""

from __future__ import annotations

import os
import queue
import time
from typing import Any

__all__ = ["BUSY_S", "Batches", "GROW_FROM", "delay_from_env"]

GROW_FROM = 4  # a previous batch this large (and recent) lets the writer wait for more
BUSY_S = 0.05  # ... when it ended less than this long ago


def delay_from_env() -> float:
    """``AGENTGUARD_AUDIT_COMMIT_DELAY_US`` in seconds: 1 ms when unset or unreadable, at most 0.1 s, 0 for none."""
    try:
        us = float(os.environ.get("AGENTGUARD_AUDIT_COMMIT_DELAY_US", "1000"))
    except ValueError:
        us = 1000.0
    return min(max(us, 0.0), 100_000.0) / 1e6 if us == us else 1e-3  # NaN: the default


class Batches:
    """The writer's queue (``q``: items, and None to stop) and the batches taken from it (:meth:`next`)."""

    def __init__(self, max_batch: int, commit_delay_s: float | None = None) -> None:
        self.q: queue.SimpleQueue = queue.SimpleQueue()
        self.max_batch = max_batch
        self.commit_delay_s = delay_from_env() if commit_delay_s is None else max(0.0, float(commit_delay_s))
        self.last_batch = 0
        self.ended = -BUSY_S  # monotonic time the previous batch was done

    def drain(self, batch: list[Any], limit: int) -> bool:
        """Move what waits in the queue into ``batch`` (up to ``limit`` items); True when told to stop (the None is
        put back, so the next :meth:`next` returns None)."""
        while len(batch) < limit:
            try:
                nxt = self.q.get_nowait()
            except queue.Empty:
                return False
            if nxt is None:
                self.q.put(None)
                return True
            batch.append(nxt)
        return False

    def gather(self, batch: list[Any], busy: bool) -> None:
        """Fill ``batch`` as the module docstring says (``busy``: the previous batch ended less than BUSY_S ago)."""
        if self.drain(batch, self.max_batch) or not busy or self.commit_delay_s <= 0 or self.last_batch < GROW_FROM \
                or len(batch) >= min(self.max_batch, 2 * self.last_batch):
            return
        time.sleep(self.commit_delay_s)
        self.drain(batch, self.max_batch)

    def next(self) -> list[Any] | None:
        """The next batch (waits for its first item); None once told to stop."""
        item = self.q.get()
        if item is None:
            return None
        batch = [item]
        self.gather(batch, time.monotonic() - self.ended < BUSY_S)
        return batch

    def done(self, n: int) -> None:
        """The batch of ``n`` items was written and its requests woken."""
        self.ended = time.monotonic()
        self.last_batch = n
