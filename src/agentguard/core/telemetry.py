"""OpenTelemetry spans and metrics for every decision (optional extra ``agentguard[otel]``).

Off by default and free when off (the Pipeline and the guard runner read one module global). Turned on by
:func:`enable`, by ``AGENTGUARD_OTEL=1`` in the environment (read when the first Pipeline is made), by
``[telemetry] enabled = true`` in a guard-stack file, by ``agentguard ... --otel`` or by the service's
``otel`` setting. Nothing here imports ``opentelemetry`` until it is turned on: the core stays light.

What is emitted (names follow the OpenTelemetry GenAI semantic conventions where one applies):

- one span per decision, ``agentguard.decide {tool}``, a child of the host's current span (LangChain's,
  the MCP request's ``_meta.traceparent``, the service request's ``traceparent`` header), with
  ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.conversation.id`` (the run id) and
  ``agentguard.decision`` / ``.guard`` / ``.reason`` / ``.outcome`` / ``.kind`` / ``.adapter``, and
  ``agentguard.shadow.*`` when a shadow guard would have decided otherwise;
- one child span per guard inside a stack, ``agentguard.guard {name}``, with ``agentguard.guard`` and
  ``agentguard.decision`` / ``.reason`` of that guard;
- metrics: ``agentguard.decisions`` (counter by ``agentguard.kind``, ``agentguard.decision``,
  ``agentguard.outcome``, ``agentguard.adapter``) and ``agentguard.decision.duration`` (histogram, seconds).

Deferred spans (the default; ``deferred=False`` or ``AGENTGUARD_OTEL_DEFERRED=0`` for synchronous ones): a
decision leaves a small record and a background thread builds the spans from it, with the exact parent and
start/end times, and records the metrics (:mod:`.telemetry_deferred` says how, and what it gives up); a
host that shuts its own tracer provider down calls :func:`flush` first.

Exporters: a host that already set a global tracer/meter provider keeps it (its own exporters are used).
Otherwise :func:`enable` builds SDK providers from the standard variables: ``OTEL_TRACES_EXPORTER`` /
``OTEL_METRICS_EXPORTER`` (``otlp`` by default, ``console``, ``none``), ``OTEL_EXPORTER_OTLP_ENDPOINT``
and its per-signal forms, ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_BSP_*`` (the
batching span processor), ``OTEL_METRIC_EXPORT_INTERVAL``; OTLP goes over HTTP/protobuf (the exporter
the extra installs). The SDK is the maintained implementation of the specification: batching, retries,
environment parsing and the wire format are its job, not this module's.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator, MutableMapping

from .errors import DependencyError, InputError
from .telemetry_deferred import PENDING, REASON_MAX, Builder, P, Pending, guard_attrs, start_attrs

__all__ = ["DEFERRED_ENV", "DURATION_BUCKETS_S", "ENV_FLAG", "GUARD_SPANS_ENV", "Telemetry", "active",
           "decision_span", "disable", "enable", "enable_from_env", "flush", "inject", "parent_from", "use_parent"]

#: the environment variable that turns telemetry on for every Pipeline of the process
ENV_FLAG = "AGENTGUARD_OTEL"
#: ``0`` turns the per-guard child spans off (the decision span lists the guards instead)
GUARD_SPANS_ENV = "AGENTGUARD_OTEL_GUARD_SPANS"
#: ``0`` builds every span synchronously, inside the decision (see the module doc)
DEFERRED_ENV = "AGENTGUARD_OTEL_DEFERRED"
#: the decision-duration histogram's bucket bounds in seconds (10 us to 10 s; the SDK's default bounds,
#: 0, 5, 10, 25 ..., are meant for milliseconds and would put every decision in one bucket)
DURATION_BUCKETS_S = (1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25,
                      0.5, 1.0, 2.5, 5.0, 10.0)
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

_active: Telemetry | None = None
_env_read = False


def active() -> Telemetry | None:
    """The telemetry in force (None when off)."""
    return _active


def _import() -> tuple[Any, Any, Any]:
    try:
        from opentelemetry import context, metrics, trace
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise DependencyError(f"OpenTelemetry is not installed: pip install 'agentguard[otel]' ({exc})") from None
    return context, metrics, trace


def _exporter_names(var: str) -> list[str]:
    return [x.strip().lower() for x in os.environ.get(var, "otlp").split(",") if x.strip()]


def _sdk_tracer_provider() -> Any:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    provider = TracerProvider(resource=Resource.create())
    provider.add_span_processor(_flush_first())  # before the exporters: deferred spans first, then their export
    for name in _exporter_names("OTEL_TRACES_EXPORTER"):
        if name == "none":
            continue
        if name == "otlp":
            _http_protocol()
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        elif name == "console":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        else:
            raise InputError(f"OTEL_TRACES_EXPORTER: unsupported exporter {name!r} (otlp, console or none)")
    return provider


def _flush_first() -> Any:
    """A span processor whose ``force_flush`` / ``shutdown`` build the pending deferred spans (:func:`flush`)."""
    from opentelemetry.sdk.trace import SpanProcessor

    class FlushFirst(SpanProcessor):
        def shutdown(self) -> None:
            flush()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            flush()
            return True

    return FlushFirst()


def _sdk_meter_provider() -> Any:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    readers = []
    for name in _exporter_names("OTEL_METRICS_EXPORTER"):
        if name == "none":
            continue
        if name == "otlp":
            _http_protocol()
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

            readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
        elif name == "console":
            readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter()))
        else:
            raise InputError(f"OTEL_METRICS_EXPORTER: unsupported exporter {name!r} (otlp, console or none)")
    return MeterProvider(resource=Resource.create(), metric_readers=readers)


def _http_protocol() -> None:
    proto = os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    if proto != "http/protobuf":
        raise InputError(f"OTEL_EXPORTER_OTLP_PROTOCOL={proto!r}: agentguard[otel] ships the http/protobuf "
                         "exporter only")


def _host_has(provider: Any) -> bool:
    """False for the API's default global (a proxy that forwards to nothing until a provider is set)."""
    return "Proxy" not in type(provider).__name__


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentguard")
    except PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
        return "0"


def enable(*, tracer_provider: Any = None, meter_provider: Any = None, guard_spans: bool | None = None,
           deferred: bool | None = None) -> Telemetry:
    """Turn telemetry on for every Pipeline of the process (idempotent; the latest call's providers win).

    ``tracer_provider`` / ``meter_provider``: given, they are used; else a global one the host already set
    is used; else SDK providers are built from the ``OTEL_*`` environment (see the module doc) and set as
    the global ones. ``guard_spans``: a child span per guard of a stack (default: on, unless
    ``AGENTGUARD_OTEL_GUARD_SPANS=0``); off, the decision span lists the guards and their decisions in
    ``agentguard.guards`` / ``agentguard.guard_decisions`` instead. ``deferred``: spans built off the
    decision's path (default: on, unless ``AGENTGUARD_OTEL_DEFERRED=0``; see the module doc and
    benchmarks/results/otel_overhead.json)."""
    global _active
    _, metrics, trace = _import()
    if tracer_provider is None:
        tracer_provider = trace.get_tracer_provider()
        if not _host_has(tracer_provider):
            tracer_provider = _sdk_tracer_provider()
            trace.set_tracer_provider(tracer_provider)
    if meter_provider is None:
        meter_provider = metrics.get_meter_provider()
        if not _host_has(meter_provider):
            meter_provider = _sdk_meter_provider()
            metrics.set_meter_provider(meter_provider)
    if guard_spans is None:
        guard_spans = os.environ.get(GUARD_SPANS_ENV, "1").strip().lower() not in _FALSE
    if deferred is None:
        deferred = os.environ.get(DEFERRED_ENV, "1").strip().lower() not in _FALSE
    old, _active = _active, Telemetry(tracer_provider, meter_provider, guard_spans=guard_spans, deferred=deferred)
    if old is not None:
        old.close()
    atexit.unregister(_at_exit)
    atexit.register(_at_exit)  # after the providers' own exit hooks are registered, so it runs before them
    return _active


def disable() -> None:
    """Turn telemetry off, after building what is pending (the providers, and their exporters, are left to
    whoever owns them)."""
    global _active
    old, _active = _active, None
    if old is not None:
        old.close()


def flush() -> None:
    """Build every pending deferred span and record its metrics now (the exporters then export as usual)."""
    tel = _active
    if tel is not None:
        tel.flush()


def _at_exit() -> None:
    tel = _active
    if tel is not None:
        tel.close()


def _after_fork() -> None:  # the child has no builder thread; the next decision starts one
    tel = _active
    if tel is not None:
        tel.reset_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def enable_from_env() -> Telemetry | None:
    """:func:`enable` once per process when ``AGENTGUARD_OTEL`` is true (called by each new Pipeline)."""
    global _env_read
    if not _env_read:
        _env_read = True
        if os.environ.get(ENV_FLAG, "").strip().lower() in _TRUE and _active is None:
            return enable()
    return _active


def inject(headers: MutableMapping[str, str]) -> None:
    """Add the current trace context (W3C ``traceparent``) to outgoing ``headers`` when telemetry is on;
    inside a deferred decision, the decision's (and the running guard's) span, started here for it."""
    tel = _active
    if tel is not None:
        from opentelemetry import propagate

        rec = PENDING.get()
        ctx = rec.materialize() if rec is not None and rec.tel is tel else None
        propagate.inject(headers, context=ctx)
def use_parent(carrier: Any) -> Any:
    """Make the trace context in ``carrier`` (a mapping with ``traceparent``: request headers, an MCP
    ``_meta``) the current one; returns a token for :meth:`Telemetry.detach`, or None (nothing done)."""
    if _active is None or not carrier:
        return None
    try:
        if not hasattr(carrier, "keys") and callable(getattr(carrier, "model_dump", None)):
            carrier = carrier.model_dump()  # an MCP request's ``_meta`` model (extra keys kept)
        if not any(str(k).lower() == "traceparent" for k in carrier.keys()):
            return None
        from opentelemetry import context, propagate

        return context.attach(propagate.extract({str(k).lower(): str(v) for k, v in carrier.items()}))
    except Exception:  # noqa: BLE001 - a malformed carrier only loses the parent, never the decision
        return None


@contextmanager
def parent_from(carrier: Any) -> Iterator[None]:
    """``with parent_from(headers_or_meta):`` decisions inside are children of the carrier's trace context."""
    token = use_parent(carrier)
    try:
        yield
    finally:
        if token is not None and _active is not None:
            _active.detach(token)


class _Noop:
    """What :meth:`Telemetry.decision` gives when telemetry is off: nothing, at the cost of two calls."""

    def __enter__(self) -> _Noop:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def done(self, out: Any) -> Any:
        return out


NOOP = _Noop()


def decision_span(adapter: str, run_id: str, proposal: Any, kind: str) -> _Noop | _Decision | Pending:
    """The Pipeline's hook: a context manager whose ``done(outcome)`` returns the outcome (a no-op when off)."""
    tel = _active
    if tel is None:
        return NOOP
    try:
        if tel.deferred:
            return Pending(tel, adapter, run_id, proposal, kind)
        return tel.decision(adapter, run_id, proposal, kind)
    except Exception:  # noqa: BLE001 - telemetry never stands in the way of a decision
        return NOOP


class _Decision:
    """One decision's synchronous span (current while the guards run) and its metrics."""

    __slots__ = ("tel", "span", "token", "t0", "kind", "adapter", "out")

    def __init__(self, tel: Telemetry, name: str, attrs: dict[str, Any], kind: str, adapter: str) -> None:
        self.tel, self.kind, self.adapter, self.out = tel, kind, adapter, None
        self.t0 = time.perf_counter()
        self.span = tel.tracer.start_span(name, attributes=attrs)
        self.token = tel.context.attach(tel.trace.set_span_in_context(self.span))

    def __enter__(self) -> _Decision:
        return self

    def done(self, out: Any) -> Any:
        self.out = out
        return out

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        try:  # telemetry never changes or breaks a decision: its own errors end here
            labels = self.tel.finish(self, ev)
        except Exception:  # noqa: BLE001
            labels = None
        try:
            self.tel.context.detach(self.token)
            if labels is not None:  # outside the span: the SDK's trace-based exemplar filter then skips sampling
                self.tel.count(labels)
                self.tel.duration.record(time.perf_counter() - self.t0, labels)
        except Exception:  # noqa: BLE001
            pass


class Telemetry:
    """The tracer, the meter and the instruments; :meth:`decision` and :meth:`guard_enter` are the hooks."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, *, guard_spans: bool = True,
                 deferred: bool = True, flush_interval_s: float = 0.05) -> None:
        self.guard_spans, self.deferred, self.flush_interval_s = guard_spans, deferred, flush_interval_s
        self.context, _, self.trace = _import()
        version = _version()
        self.tracer = tracer_provider.get_tracer("agentguard", version)
        meter = meter_provider.get_meter("agentguard", version)
        # the counter is kept here and read by the SDK at each collection (an asynchronous counter)
        self._counts: dict[tuple[tuple[str, str], ...], int] = {}
        self._labels: dict[tuple[str, ...], dict[str, str]] = {}
        self._lock = threading.Lock()
        self.builder = Builder(self, flush_interval_s) if deferred else None
        self.decisions = meter.create_observable_counter(P + "decisions", callbacks=[self._observe],
                                                         unit="{decision}",
                                                         description="guard decisions by kind, decision and outcome")
        self.duration = meter.create_histogram(P + "decision.duration", unit="s",
                                               description="time to decide one proposal (guards, enforcement, audit)",
                                               explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS_S))
        self.error_status = self.trace.Status(self.trace.StatusCode.ERROR)

    def count(self, labels: dict[str, str]) -> None:
        key = tuple(labels.items())
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1

    def _observe(self, options: Any) -> Iterator[Any]:
        from opentelemetry.metrics import Observation

        self.flush()  # the pending decisions count (and their durations reach the histogram) before collection
        with self._lock:
            counts = list(self._counts.items())
        for key, n in counts:
            yield Observation(n, dict(key))

    def decision(self, adapter: str, run_id: str, proposal: Any, kind: str) -> _Decision:
        """The synchronous span of one decision, current until the ``with`` block ends."""
        tool = getattr(proposal, "name", None)
        name, attrs = start_attrs(adapter, run_id, tool, getattr(proposal, "call_id", None), kind)
        return _Decision(self, name, attrs, kind, adapter)

    def result(self, out: Any) -> tuple[dict[str, Any], str, str]:
        """The attributes of a finished decision, its decision and its outcome."""
        v = getattr(out, "verdict", None)
        decision = v.decision.name if v is not None else "HALT"
        outcome = ("error" if out is None else "ask" if out.ask else "stop" if out.stop
                   else "execute" if out.execute else "refuse")
        attrs: dict[str, Any] = {P + "decision": decision, P + "outcome": outcome}
        if v is not None:
            attrs[P + "guard"] = v.guard
            attrs[P + "reason"] = v.reason[:REASON_MAX]
            shadow = v.details.get("shadow") if v.details else None
            if shadow:
                attrs[P + "shadow.guards"] = sorted({str(e.get("guard", "")) for e in shadow})
                attrs[P + "shadow.decisions"] = [str(e.get("decision", "")) for e in shadow]
            if v.details and v.details.get("error"):
                attrs["error.type"] = str(v.details["error"])
            trail = v.details.get("verdicts") if v.details and not self.guard_spans else None
            if trail:
                attrs[P + "guards"] = [str(t.get("guard", "")) for t in trail]
                attrs[P + "guard_decisions"] = [str(t.get("decision", "")) for t in trail]
        return attrs, decision, outcome

    def label(self, kind: str, decision: str, outcome: str, adapter: str) -> dict[str, str]:
        key = (kind, decision, outcome, adapter)
        labels = self._labels.get(key)
        if labels is None:
            labels = self._labels[key] = {P + "kind": kind, P + "decision": decision, P + "outcome": outcome,
                                          P + "adapter": adapter}
        return labels

    def end(self, span: Any, attrs: dict[str, Any], error: BaseException | None, end: int | None = None,
            failed: bool = False) -> None:
        """Add ``attrs`` (if any) and end the span (at ``end``), in error when ``error``, ``failed`` or the
        attributes carry ``error.type``."""
        if attrs:
            span.set_attributes(attrs)
        if error is not None:
            span.record_exception(error, timestamp=end)
        if error is not None or failed or "error.type" in attrs:
            span.set_status(self.error_status)
        span.end(end_time=end)

    def finish(self, d: _Decision, error: BaseException | None) -> dict[str, str]:
        """End the synchronous decision span with what was decided; the metric labels of the decision."""
        attrs, decision, outcome = self.result(d.out)
        self.end(d.span, attrs, error)
        return self.label(d.kind, decision, outcome, d.adapter)

    def flush(self) -> None:
        if self.builder is not None:
            self.builder.flush()

    def close(self) -> None:
        if self.builder is not None:
            self.builder.close()

    def reset_after_fork(self) -> None:
        if self.builder is not None:
            self.builder.reset()

    def guard_enter(self, name: str) -> Any:
        """A guard inside a stack starts: its span (synchronous, made current) or its deferred record."""
        if self.deferred:
            rec = PENDING.get()
            return None if rec is None else (rec, rec.guard_enter(name))
        try:
            span = self.tracer.start_span(f"agentguard.guard {name}", attributes={P + "guard": name})
            return span, self.context.attach(self.trace.set_span_in_context(span))
        except Exception:  # noqa: BLE001 - telemetry never stands in the way of a decision
            return None

    def guard_exit(self, entered: Any, v: Any) -> None:
        if entered is None:
            return
        if self.deferred:
            entered[0].guard_exit(entered[1], v)
            return
        span, token = entered
        try:
            self.context.detach(token)
            self.end(span, guard_attrs(v), None)
        except Exception:  # noqa: BLE001
            pass

    @property
    def detach(self) -> Any:
        return self.context.detach
