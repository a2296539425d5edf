"""Per-run memory: the one way a stateful guard (or the service) keeps state for each run.

A guard that remembers something between steps of one run (the last safe action, a monitor's
running minimum, a product automaton's state) keeps it in a :class:`RunMemory` keyed by
``Context.run_id``. The memory is bounded: when more than ``max_runs`` runs are live, the run that
was touched least recently is forgotten (its state restarts if it comes back). ``end_run`` forgets a
run at once; adapters call it when a run finishes. All methods are thread-safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Generic, Hashable, Iterator, TypeVar

from .errors import InputError

__all__ = ["RunMemory", "end_run", "inner_guards"]

T = TypeVar("T")


class RunMemory(Generic[T]):
    """A bounded, least-recently-used map ``run_id -> state``, with a factory for new runs.

    Guarantees: at most ``max_runs`` entries are held; ``get`` of an unknown run creates its state
    with ``factory()``; ``end_run`` of an unknown run is a no-op.
    """

    def __init__(self, factory: Callable[[], T], max_runs: int = 10_000) -> None:
        if not isinstance(max_runs, int) or max_runs < 1:
            raise InputError(f"max_runs must be a positive integer, got {max_runs!r}")
        self._factory = factory
        self.max_runs = max_runs
        self._runs: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.RLock()

    def get(self, run_id: Hashable) -> T:
        """The state of ``run_id``, created by the factory when the run is new."""
        with self._lock:
            if run_id in self._runs:
                self._runs.move_to_end(run_id)
                return self._runs[run_id]
            state = self._factory()
            self._store(run_id, state)
            return state

    def peek(self, run_id: Hashable) -> T | None:
        """The state of ``run_id`` if held, without creating or touching it."""
        with self._lock:
            return self._runs.get(run_id)

    def set(self, run_id: Hashable, state: T) -> None:
        """Replace the state of ``run_id``."""
        with self._lock:
            self._store(run_id, state)

    def end_run(self, run_id: Hashable) -> None:
        """Forget ``run_id`` (no-op when unknown)."""
        with self._lock:
            self._runs.pop(run_id, None)

    def clear(self) -> None:
        """Forget every run."""
        with self._lock:
            self._runs.clear()

    def _store(self, run_id: Hashable, state: T) -> None:
        self._runs[run_id] = state
        self._runs.move_to_end(run_id)
        while len(self._runs) > self.max_runs:
            self._runs.popitem(last=False)

    def __contains__(self, run_id: object) -> bool:
        with self._lock:
            return run_id in self._runs

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)

    def __iter__(self) -> Iterator[Hashable]:
        with self._lock:
            return iter(list(self._runs))

    def __getstate__(self) -> dict:
        """Copies and pickles carry the runs, not the lock (each copy gets its own)."""
        with self._lock:
            state = dict(self.__dict__)
            state["_runs"] = OrderedDict(self._runs)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"RunMemory(runs={len(self)}, max_runs={self.max_runs})"


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
