"""Deferred decision spans for :mod:`.telemetry` (the default): the record a decision leaves, and the
background builder that turns records into SDK spans and metric points.

A decision records only what its spans need: the host's current context (the parent), ``time_ns`` at start
and end, the outcome, and each guard's name, times and verdict (a few attribute stores and one
``deque.append``). A daemon thread builds the spans from the record through the public tracer API with those
explicit ``start_time`` / ``end_time`` and parent context, and records the metrics. The span and metric work
is the same as when it is done synchronously: it is moved off the decision's latency, not removed
(benchmarks/otel_overhead.py reports both the added latency and the process CPU per decision).

Where a span id is needed *during* the decision, the spans are started there and then
(:meth:`Pending.materialize`): :func:`.telemetry.inject` inside a decision (a RemoteGuard's ``traceparent``)
and a decision nested in another one's guard. What deferral gives up: a span that a guard's own code starts
through the host's instrumentation (an instrumented HTTP client inside a guard, say) has the host's span as
parent, not the guard's; ``deferred=False`` keeps every span synchronous for that.

Spans reach the exporters within ``flush_interval_s`` (0.05 s), at :meth:`Builder.flush`
(:func:`.telemetry.flush`), at each metric collection, when telemetry is turned off or re-enabled, at exit,
and when a provider that :mod:`.telemetry` built from ``OTEL_*`` is flushed or shut down (a host that shuts
its own provider down calls :func:`.telemetry.flush` first). Past ``HIGH_WATER`` pending records, each new
decision builds two itself: the queue stays bounded and nothing is dropped.
"""

from __future__ import annotations

import collections
import contextvars
import threading
import time
from typing import Any

__all__ = ["Builder", "HIGH_WATER", "P", "PENDING", "Pending", "REASON_MAX", "guard_attrs", "start_attrs"]

#: the prefix of agentguard's span attributes and metric names (``agentguard.decision``, ...)
P = "agentguard" + "."
REASON_MAX = 512
#: pending records past which each new decision builds two itself (backpressure)
HIGH_WATER = 2048
#: the deferred decision in progress in this context (read by the guard hooks and ``inject``)
PENDING: contextvars.ContextVar[Pending | None] = contextvars.ContextVar("agentguard_otel_pending", default=None)


def start_attrs(adapter: str, run_id: str, tool: Any, call_id: Any, kind: str) -> tuple[str, dict[str, Any]]:
    """A decision span's name and the attributes known when it starts."""
    attrs: dict[str, Any] = {"gen_ai.conversation.id": run_id, P + "kind": kind, P + "adapter": adapter}
    if isinstance(tool, str):
        attrs["gen_ai.tool.name"] = tool
        if call_id:
            attrs["gen_ai.tool.call.id"] = str(call_id)
    return f"agentguard.decide {tool if isinstance(tool, str) else kind}", attrs


def guard_attrs(v: Any) -> dict[str, Any]:
    """A guard span's attributes from the guard's verdict (none for a guard abandoned at its deadline)."""
    if v is None:
        return {}
    attrs = {P + "decision": v.decision.name, P + "reason": v.reason[:REASON_MAX]}
    if v.details and v.details.get("error"):
        attrs["error.type"] = str(v.details["error"])
    return attrs


class Pending:
    """One deferred decision. ``guards``: ``[name, t0, t1, verdict, span]`` per guard of the stack (``span``
    set only when it had to start early); ``span``: the decision's, likewise."""

    __slots__ = ("tel", "adapter", "run_id", "tool", "call_id", "kind", "parent", "t0", "t1", "out", "error",
                 "guards", "current", "span", "token")

    def __init__(self, tel: Any, adapter: str, run_id: str, proposal: Any, kind: str) -> None:
        self.tel, self.adapter, self.run_id, self.kind = tel, adapter, run_id, kind
        self.tool, self.call_id = getattr(proposal, "name", None), getattr(proposal, "call_id", None)
        self.out: Any = None
        self.error: BaseException | None = None
        self.span: Any = None
        self.current: list[Any] | None = None
        self.t1: int = 0  # 0 until the decision ends
        self.guards: list[list[Any]] = []
        outer = PENDING.get()  # nested in another decision's guard: that one's span is the parent, started now
        parent = outer.materialize() if outer is not None else None
        self.parent = parent if parent is not None else tel.context.get_current()
        self.token = PENDING.set(self)
        self.t0 = time.time_ns()

    def __enter__(self) -> Pending:
        return self

    def done(self, out: Any) -> Any:
        self.out = out
        return out

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        self.t1 = time.time_ns()
        self.error = ev
        try:
            PENDING.reset(self.token)
        except ValueError:  # pragma: no cover - exited in another context than it entered
            PENDING.set(None)
        self.tel.builder.enqueue(self)

    def guard_enter(self, name: str) -> list[Any]:
        g = [name, time.time_ns(), None, None, None]
        self.guards.append(g)
        self.current = g
        return g

    def guard_exit(self, g: list[Any], v: Any) -> None:
        g[2], g[3] = time.time_ns(), v
        self.current = None

    def materialize(self) -> Any:
        """Start this decision's span (and the running guard's) now; their context (None once finished)."""
        if self.t1:
            return None
        try:
            tracer, trace = self.tel.tracer, self.tel.trace
            if self.span is None:
                name, attrs = start_attrs(self.adapter, self.run_id, self.tool, self.call_id, self.kind)
                self.span = tracer.start_span(name, context=self.parent, start_time=self.t0, attributes=attrs)
            ctx = trace.set_span_in_context(self.span, self.parent)
            g = self.current
            if g is not None:
                if g[4] is None:
                    g[4] = tracer.start_span(f"agentguard.guard {g[0]}", context=ctx, start_time=g[1],
                                             attributes={P + "guard": g[0]})
                ctx = trace.set_span_in_context(g[4], ctx)
            return ctx
        except Exception:  # noqa: BLE001 - a broken tracer loses the link, never the decision
            return None


class Builder:
    """The queue of finished :class:`Pending` records and the daemon thread that builds them."""

    def __init__(self, tel: Any, flush_interval_s: float = 0.05) -> None:
        self.tel, self.flush_interval_s = tel, flush_interval_s
        self.queue: collections.deque[Pending] = collections.deque()
        self.reset()
        self._stop = threading.Event()

    def reset(self) -> None:
        """Fresh locks and no thread (after a fork: the child has no builder thread; the next record starts one)."""
        self._lock, self._start_lock = threading.Lock(), threading.Lock()
        self._worker: threading.Thread | None = None

    def build(self, r: Pending) -> None:
        """Make the record's spans (explicit parent and times) and record its metrics."""
        tel = self.tel
        attrs, decision, outcome = tel.result(r.out)
        failed = "error.type" in attrs
        try:  # every attribute given at the start: the SDK checks each value once
            span = r.span
            if span is None:
                name, start = start_attrs(r.adapter, r.run_id, r.tool, r.call_id, r.kind)
                start.update(attrs)
                span = tel.tracer.start_span(name, context=r.parent, start_time=r.t0, attributes=start)
                attrs = {}
            ctx = tel.trace.set_span_in_context(span, r.parent)
            for name, g0, g1, v, gspan in list(r.guards):
                gattrs = guard_attrs(v)
                gfailed = "error.type" in gattrs
                if gspan is None:
                    gattrs[P + "guard"] = name
                    gspan = tel.tracer.start_span(f"agentguard.guard {name}", context=ctx, start_time=g0,
                                                  attributes=gattrs)
                    gattrs = {}
                tel.end(gspan, gattrs, None, g1 or r.t1, gfailed)
            tel.end(span, attrs, r.error, r.t1, failed)
        finally:
            labels = tel.label(r.kind, decision, outcome, r.adapter)
            tel.count(labels)
            tel.duration.record((r.t1 - r.t0) / 1e9, labels)

    def enqueue(self, r: Pending) -> None:
        q = self.queue
        q.append(r)
        if self._worker is None:
            self._start()
        if self._stop.is_set():  # finished after telemetry was turned off or re-enabled: built here
            self.flush()
        elif len(q) > HIGH_WATER and self._lock.acquire(blocking=False):
            try:
                self._build_some(2)
            finally:
                self._lock.release()

    def _build_some(self, n: int) -> bool:
        """Build up to ``n`` records (the build lock held); False when there was none left."""
        for _ in range(n):
            try:
                r = self.queue.popleft()
            except IndexError:
                return False
            try:
                self.build(r)
            except Exception:  # noqa: BLE001 - a broken tracer or exporter loses spans, never the builder
                pass
        return True

    def flush(self) -> None:
        """Build every record queued so far (including one the thread is building) before returning."""
        with self._lock:
            while self._build_some(256):
                pass

    def close(self) -> None:
        self._stop.set()
        self.flush()

    def _start(self) -> None:
        with self._start_lock:
            if self._worker is None and not self._stop.is_set():
                self._worker = threading.Thread(target=self._run, name="agentguard-otel", daemon=True)
                self._worker.start()

    def _run(self) -> None:
        while not self._stop.wait(self.flush_interval_s):
            more = True
            while more:
                with self._lock:
                    more = self._build_some(64)
                time.sleep(0)  # let the decisions run between chunks
