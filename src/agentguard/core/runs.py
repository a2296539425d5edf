"""Per-run memory: the one way a stateful guard (or the service) keeps state for each run.

A guard that remembers something between steps of one run (the last safe action, a monitor's
running minimum, a product automaton's state) keeps it in a :class:`RunMemory` keyed by
``Context.run_id``. The memory is bounded, but a run it had to let go is never silently treated as
new when it comes back: it is rebuilt or refused (:class:`RunEvicted`, which a guard's caller turns
into HALT under the fail-closed rule). ``end_run`` forgets a run on purpose; adapters call it when a
run finishes. All methods are thread-safe.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Generic, Hashable, Iterator, TypeVar

from .errors import AgentGuardError, InputError

__all__ = ["RunEvicted", "RunMemory", "end_run", "inner_guards", "walk_guards"]

T = TypeVar("T")


class RunEvicted(AgentGuardError):
    """A run's state left a bounded memory (capacity or expiry) while the run was still live.

    Raised instead of silently starting the run over: the caller rebuilds the state (replay from a
    trace or audit store) or answers HALT. Never means ALLOW."""


class RunMemory(Generic[T]):
    """The one bounded map ``run_id -> state`` of the package, with a factory for new runs.

    Guarantees:

    - at most ``max_runs`` entries are held (least recently used leave first); with ``ttl_s`` an entry
      idle longer than that leaves too;
    - a run that left because of capacity or expiry is *never treated as new*: its id is remembered
      (a tombstone; at most ``tombstones`` ids exactly, default ``10 * max_runs``) and :meth:`get` rebuilds it
      with ``rebuild(run_id)`` when one is given, else raises :class:`RunEvicted` (callers fail closed);
      a tombstone pushed out of that bound goes into a fixed-size Bloom filter (:class:`_Forgotten`,
      allocated at the first overflow: 8 bytes per tombstone slot), which never answers "new" for an id
      it holds, so even then the run is rebuilt or refused. The price of the bound is one-sided (fail closed): a
      new id the filter mistakes for a forgotten one is rebuilt (from nothing stored: a new run) or refused, never
      started as new when it is not; below about ``7 * tombstones`` forgotten ids that happens to under 1.5% of
      new ids (k = 5 probes), and more often beyond;
    - :meth:`end_run` forgets a run on purpose (the run finished, or its state is about to be rebuilt by
      replay): its id may start over (also one the filter holds: up to ``tombstones`` such ids are remembered
      as ended; beyond, an ended id the filter holds is rebuilt or refused like a forgotten one);
    - ``on_drop(run_id, state)`` is called, outside the lock, for every entry that leaves;
    - every method is thread-safe.
    """

    def __init__(self, factory: Callable[[], T], max_runs: int = 10_000, *, ttl_s: float | None = None,
                 tombstones: int | None = None, rebuild: Callable[[Hashable], T | None] | None = None,
                 on_drop: Callable[[Hashable, T], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not isinstance(max_runs, int) or isinstance(max_runs, bool) or max_runs < 1:
            raise InputError(f"max_runs must be a positive integer, got {max_runs!r}")
        if ttl_s is not None and not ttl_s > 0:
            raise InputError(f"ttl_s must be positive, got {ttl_s!r}")
        self._factory = factory
        self.max_runs = max_runs
        self.ttl_s = ttl_s
        self.max_tombstones = 10 * max_runs if tombstones is None else int(tombstones)
        self.rebuild = rebuild
        self.on_drop = on_drop
        self.clock = clock
        self._runs: OrderedDict[Hashable, T] = OrderedDict()
        self._seen: dict[Hashable, float] = {}
        self._gone: OrderedDict[Hashable, str] = OrderedDict()
        self._forgotten: _Forgotten | None = None  # tombstones past max_tombstones (allocated at the first)
        self._restarted: set[Hashable] = set()  # ids the filter holds that end_run let start over
        self._lock = threading.RLock()
        self.evicted_total = 0

    # -- reading ----------------------------------------------------------------------------------
    def get(self, run_id: Hashable, create: Callable[[Hashable], T] | None = None) -> T:
        """The state of ``run_id``: held, rebuilt (an evicted run with ``rebuild``), or new from
        ``create(run_id)`` (else the factory). Raises :class:`RunEvicted` for an evicted run that cannot
        be rebuilt."""
        dropped: list[tuple[Hashable, T]] = []
        try:
            with self._lock:
                self._expire(dropped)
                if run_id in self._runs:
                    self._touch(run_id)
                    return self._runs[run_id]
                why = self._gone.get(run_id) or self._forgot(run_id)
                if why is None:
                    state = create(run_id) if create is not None else self._factory()
                    self._store(run_id, state, dropped)
                    return state
            rebuilt = self.rebuild(run_id) if self.rebuild is not None else None  # outside the lock
            if rebuilt is None:
                raise RunEvicted(f"run {run_id} was {why} from memory while live; its state cannot be rebuilt")
            state = rebuilt
            with self._lock:
                if run_id in self._runs:  # another thread rebuilt it meanwhile
                    return self._runs[run_id]
                self._gone.pop(run_id, None)
                self._store(run_id, state, dropped)
                return state
        finally:
            self._dropped(dropped)

    def peek(self, run_id: Hashable) -> T | None:
        """The state of ``run_id`` if held, without creating or touching it."""
        with self._lock:
            return self._runs.get(run_id)

    def evicted(self, run_id: Hashable) -> bool:
        """True when ``run_id`` left because of capacity or expiry (and was not rebuilt or ended since); also
        for a new id the overflow filter mistakes for a forgotten tombstone (see the class docstring)."""
        with self._lock:
            return run_id in self._gone or (run_id not in self._runs and self._forgot(run_id) is not None)

    # -- writing ----------------------------------------------------------------------------------
    def set(self, run_id: Hashable, state: T) -> None:
        """Replace the state of ``run_id``."""
        dropped: list[tuple[Hashable, T]] = []
        with self._lock:
            self._gone.pop(run_id, None)
            self._store(run_id, state, dropped)
        self._dropped(dropped)

    def end_run(self, run_id: Hashable) -> None:
        """Forget ``run_id`` on purpose (no-op when unknown); the id may start over."""
        with self._lock:
            state = self._runs.pop(run_id, None)
            self._seen.pop(run_id, None)
            self._gone.pop(run_id, None)
            if self._forgotten is not None and run_id in self._forgotten and len(self._restarted) < self.max_tombstones:
                self._restarted.add(run_id)
        if state is not None:
            self._dropped([(run_id, state)])

    def clear(self) -> None:
        """Forget every run (and every tombstone)."""
        with self._lock:
            self._runs.clear()
            self._seen.clear()
            self._gone.clear()
            self._forgotten = None
            self._restarted.clear()

    def sweep(self) -> int:
        """Expire idle runs now; returns how many left."""
        dropped: list[tuple[Hashable, T]] = []
        with self._lock:
            self._expire(dropped)
        self._dropped(dropped)
        return len(dropped)

    # -- internals --------------------------------------------------------------------------------
    def _touch(self, run_id: Hashable) -> None:
        self._runs.move_to_end(run_id)
        if self.ttl_s is not None:
            self._seen[run_id] = self.clock()

    def _store(self, run_id: Hashable, state: T, dropped: list[tuple[Hashable, T]]) -> None:
        self._runs[run_id] = state
        self._touch(run_id)
        while len(self._runs) > self.max_runs:
            old, st = self._runs.popitem(last=False)
            self._bury(old, "evicted (capacity)")
            dropped.append((old, st))

    def _expire(self, dropped: list[tuple[Hashable, T]]) -> None:
        if self.ttl_s is None:
            return
        now = self.clock()
        while self._runs:
            old = next(iter(self._runs))
            if now - self._seen.get(old, now) <= self.ttl_s:
                break
            st = self._runs.pop(old)
            self._bury(old, f"expired (idle over {self.ttl_s:g}s)")
            dropped.append((old, st))

    def _bury(self, run_id: Hashable, why: str) -> None:
        self._seen.pop(run_id, None)
        self._gone[run_id] = why
        self._gone.move_to_end(run_id)
        self.evicted_total += 1
        while len(self._gone) > self.max_tombstones:
            old, _why = self._gone.popitem(last=False)
            if self._forgotten is None:
                self._forgotten = _Forgotten(max(1, self.max_tombstones) * 64)
            self._forgotten.add(old)
            self._restarted.discard(old)

    def _forgot(self, run_id: Hashable) -> str | None:
        """Why ``run_id`` (not held, no exact tombstone) must not start over: its tombstone overflowed."""
        if self._forgotten is None or run_id in self._restarted or run_id not in self._forgotten:
            return None
        return "evicted (tombstone overflowed)"

    def _dropped(self, dropped: list[tuple[Hashable, T]]) -> None:
        if self.on_drop is None:
            return
        for run_id, st in dropped:
            try:
                self.on_drop(run_id, st)
            except Exception:  # noqa: BLE001 - cleanup must not fail the caller
                pass

    def __contains__(self, run_id: object) -> bool:
        with self._lock:
            return run_id in self._runs

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)

    def __iter__(self) -> Iterator[Hashable]:
        with self._lock:
            return iter(list(self._runs))

    def values(self) -> list[T]:
        with self._lock:
            return list(self._runs.values())

    def __getstate__(self) -> dict[str, Any]:
        """Copies and pickles carry the runs, not the lock (each copy gets its own)."""
        with self._lock:
            state = dict(self.__dict__)
            state["_runs"] = OrderedDict(self._runs)
            state["_gone"] = OrderedDict(self._gone)
            state["_seen"] = dict(self._seen)
            state["_restarted"] = set(self._restarted)
            state["_forgotten"] = self._forgotten.copy() if self._forgotten is not None else None
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"RunMemory(runs={len(self)}, max_runs={self.max_runs})"


class _Forgotten:
    """A Bloom filter of run ids (a bit array of ``bits`` bits, :data:`_PROBES` probes from one BLAKE2b digest,
    Kirsch-Mitzenmacher double hashing): ``id in f`` is True for every id added (no false negative), and for a
    new id with probability about ``(1 - exp(-k n / m)) ** k`` after ``n`` adds. Written here rather than taken
    from a package: the core has no third-party dependency, it is twenty lines, and it is consulted only on the
    path that creates a run. Ids are read as ``repr`` (the keys of a :class:`RunMemory`: str, int, tuples)."""

    __slots__ = ("bits", "arr")

    def __init__(self, bits: int) -> None:
        self.bits = bits
        self.arr = bytearray((bits + 7) // 8)

    def _probes(self, run_id: Hashable) -> list[int]:
        d = hashlib.blake2b(repr(run_id).encode("utf-8", "surrogatepass"), digest_size=16).digest()
        h1, h2 = int.from_bytes(d[:8], "little"), int.from_bytes(d[8:], "little") | 1
        return [(h1 + i * h2) % self.bits for i in range(_PROBES)]

    def add(self, run_id: Hashable) -> None:
        for b in self._probes(run_id):
            self.arr[b >> 3] |= 1 << (b & 7)

    def __contains__(self, run_id: object) -> bool:
        return all(self.arr[b >> 3] >> (b & 7) & 1 for b in self._probes(run_id))  # type: ignore[arg-type]

    def copy(self) -> _Forgotten:
        other = _Forgotten(self.bits)
        other.arr[:] = self.arr
        return other


_PROBES = 5


#: attributes under which a composite or wrapping guard holds the guards it asks
INNER_ATTRS = ("guards", "guard", "tool_guard")


def inner_guards(guard: Any) -> list[Any]:
    """The guards directly inside ``guard``: a stack's ``guards``, a wrapper's ``guard``/``tool_guard``."""
    out: list[Any] = []
    for attr in INNER_ATTRS:
        v = getattr(guard, attr, None)
        if isinstance(v, (list, tuple)):
            out.extend(x for x in v if hasattr(x, "check"))
        elif v is not None and hasattr(v, "check"):
            out.append(v)
    return out


def walk_guards(guard: Any, *, limit: int = 10_000) -> list[Any]:
    """``guard`` and every guard inside it (stacks, wrappers: :data:`INNER_ATTRS`), each once, breadth
    first. The one walk of a guard tree in the package (settling approvals, per-run copies, the
    dashboard's attributes, per-guard strategies all use it)."""
    out: list[Any] = []
    seen: set[int] = set()
    todo = [guard]
    while todo and len(out) < limit:
        g = todo.pop(0)
        if id(g) in seen:
            continue
        seen.add(id(g))
        out.append(g)
        todo.extend(inner_guards(g))
    return out


def end_run(guard: Any, run_id: Hashable) -> None:
    """Forget ``run_id`` in ``guard`` and in every guard inside it that keeps per-run memory.

    A guard with an ``end_run`` method is asked directly (a composite forwards to its members itself);
    otherwise the guards inside it (:func:`inner_guards`) are searched, depth first. Adapters call this
    when a run finishes so no per-run state outlives its run.
    """
    seen: set[int] = set()
    todo = [guard]
    while todo:
        g = todo.pop()
        if id(g) in seen:
            continue
        seen.add(id(g))
        fn = getattr(g, "end_run", None)
        if callable(fn):
            fn(run_id)
        else:
            todo.extend(inner_guards(g))
