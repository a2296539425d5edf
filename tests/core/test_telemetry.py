"""OpenTelemetry (agentguard.core.telemetry) with the SDK's in-memory exporter and metric reader, with
deferred spans (the default) and synchronous ones alike: a span per decision with GenAI and agentguard
attributes, a child span per guard of the stack (sync and async, the async one from a worker thread), the
host's current span as parent, metrics by kind and outcome; off, the core does not import OpenTelemetry.
(Spans arriving at a real OTLP receiver process: tests/integrations/test_otel_receiver.py; deferred spans'
own properties: tests/core/test_telemetry_deferred.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any, Iterator

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from agentguard.core import BaseGuard, Context, Decision, GuardStack, Pipeline, ToolCall, Verdict  # noqa: E402
from agentguard.core import telemetry  # noqa: E402
from agentguard.core.shadow import Shadowed  # noqa: E402


class Deny(BaseGuard):
    def __init__(self, name: str, prefix: str) -> None:
        self.name, self.prefix = name, prefix

    def check(self, context: Context, proposal: Any) -> Verdict:
        if proposal.name.startswith(self.prefix):
            return Verdict.reject(f"{proposal.name} denied", self.name)
        return Verdict.allow(self.name)


class Otel:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.metrics])
        self.tracer = self.tracer_provider.get_tracer("host")

    def by_name(self) -> dict[str, Any]:
        telemetry.flush()  # deferred spans (the default) are built by a background thread: now, for the test
        return {s.name: s for s in self.spans.get_finished_spans()}

    def points(self, metric: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        return [p for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics if m.name == metric
                for p in m.data.data_points]


@pytest.fixture(params=[True, False], ids=["deferred", "sync"])
def otel(request: pytest.FixtureRequest) -> Iterator[Otel]:
    """Telemetry on, with deferred spans (the default) and with synchronous ones: the same spans either way."""
    o = Otel()
    telemetry.enable(tracer_provider=o.tracer_provider, meter_provider=o.meter_provider, deferred=request.param)
    try:
        yield o
    finally:
        telemetry.disable()


def _stack() -> GuardStack:
    return GuardStack([Deny("no-deletes", "delete_"), Deny("no-sends", "send_")])


@pytest.mark.parametrize("aio", [False, True])
def test_a_decision_span_with_guard_children_under_the_hosts_span(otel: Otel, aio: bool) -> None:
    p = Pipeline(_stack(), adapter="test")
    call = ToolCall("send_mail", {"to": "x"}, "call-7")
    with otel.tracer.start_as_current_span("host agent step") as host:
        out = asyncio.run(p.adecide("run-1", call)) if aio else p.decide("run-1", call)
    assert not out.execute
    spans = otel.by_name()
    d = spans["agentguard.decide send_mail"]
    assert d.parent is not None and d.parent.span_id == host.get_span_context().span_id
    assert d.context.trace_id == host.get_span_context().trace_id
    a = dict(d.attributes)
    assert a["gen_ai.tool.name"] == "send_mail" and a["gen_ai.tool.call.id"] == "call-7"
    assert a["gen_ai.conversation.id"] == "run-1" and a["agentguard.adapter"] == "test"
    assert (a["agentguard.decision"], a["agentguard.guard"], a["agentguard.outcome"]) == ("REJECT", "no-sends", "refuse")
    assert a["agentguard.reason"] == "send_mail denied" and a["agentguard.kind"] == "check"
    for g, decision in (("no-deletes", "ALLOW"), ("no-sends", "REJECT")):
        s = spans[f"agentguard.guard {g}"]
        assert s.parent.span_id == d.context.span_id and s.attributes["agentguard.decision"] == decision


class InlineDeny(Deny):
    inline_safe = True  # decided on the event loop by the async path (no worker-thread hop)


def test_a_guard_decided_on_the_loop_still_gets_its_span(otel: Otel) -> None:
    """Regression: the async path's inline (fast and pure) branch skipped the per-guard span."""
    p = Pipeline(GuardStack([InlineDeny("inline-deny", "send_"), Deny("threaded", "delete_")]), adapter="test")
    out = asyncio.run(p.adecide("run-1", ToolCall("send_mail", {}, "c1")))
    assert not out.execute
    spans = otel.by_name()
    d = spans["agentguard.decide send_mail"]
    for g in ("inline-deny", "threaded"):
        assert spans[f"agentguard.guard {g}"].parent.span_id == d.context.span_id


def test_metrics_count_decisions_by_kind_and_outcome_and_time_them(otel: Otel) -> None:
    p = Pipeline(_stack(), adapter="test")
    for name in ("read_a", "read_b", "delete_c"):
        p.decide("r", ToolCall(name, {}))
    counts = {(pt.attributes["agentguard.decision"], pt.attributes["agentguard.outcome"]): pt.value
              for pt in otel.points("agentguard.decisions")}
    assert counts == {("ALLOW", "execute"): 2, ("REJECT", "refuse"): 1}
    hist = otel.points("agentguard.decision.duration")
    assert sum(pt.count for pt in hist) == 3 and all(pt.sum > 0 for pt in hist)


def test_shadow_verdicts_and_failures_show_on_the_span(otel: Otel) -> None:
    class Boom(BaseGuard):
        name = "boom"

        def check(self, context: Context, proposal: Any) -> Verdict:
            raise RuntimeError("kaput")

    p = Pipeline(Shadowed(_stack(), [Deny("candidate", "read_")]))
    assert p.decide("r", ToolCall("read_x", {})).execute
    a = otel.by_name()["agentguard.decide read_x"].attributes
    assert a["agentguard.decision"] == "ALLOW" and tuple(a["agentguard.shadow.guards"]) == ("candidate",)
    assert tuple(a["agentguard.shadow.decisions"]) == ("REJECT",)
    assert otel.by_name()["agentguard.guard candidate"].attributes["agentguard.decision"] == "REJECT"
    Pipeline(GuardStack([Boom()])).decide("r2", ToolCall("x", {}))
    s = otel.by_name()["agentguard.decide x"]
    assert s.attributes["agentguard.decision"] == "HALT" and s.attributes["error.type"] == "RuntimeError"
    assert s.status.status_code.name == "ERROR"


def test_inject_and_use_parent_carry_the_trace_across_a_hop(otel: Otel) -> None:
    headers: dict[str, str] = {}
    with otel.tracer.start_as_current_span("client") as client:
        telemetry.inject(headers)
    assert headers["traceparent"].split("-")[2] == format(client.get_span_context().span_id, "016x")
    token = telemetry.use_parent({"Traceparent": headers["traceparent"]})
    try:
        Pipeline(_stack()).decide("r", ToolCall("read", {}))
    finally:
        telemetry.active().detach(token)
    assert otel.by_name()["agentguard.decide read"].parent.span_id == client.get_span_context().span_id
    assert telemetry.use_parent({"x": "y"}) is None and telemetry.use_parent({"traceparent": "garbage"}) is not None


def test_off_means_no_spans_and_no_import() -> None:
    assert telemetry.active() is None
    code = ("import sys, agentguard.core, agentguard.core.pipeline, agentguard.config\n"
            "from agentguard.core import Pipeline, GuardStack, ToolCall, Verdict\n"
            "print(any(m.startswith('opentelemetry') for m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if k != telemetry.ENV_FLAG}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"


def test_the_environment_turns_it_on_with_the_standard_exporter_variables() -> None:
    """AGENTGUARD_OTEL=1 with OTEL_TRACES_EXPORTER=console: the SDK providers are built from OTEL_* (the
    service name from OTEL_SERVICE_NAME) and the span is printed when the process ends."""
    code = ("from agentguard.core import Pipeline, GuardStack, ToolCall, Verdict, BaseGuard\n"
            "class A(BaseGuard):\n    name='a'\n    def check(self, c, p):\n        return Verdict.allow('a')\n"
            "Pipeline(GuardStack([A()])).decide('r', ToolCall('t', {}))\n"
            "from opentelemetry import trace\ntrace.get_tracer_provider().shutdown()\n")
    env = dict(os.environ, AGENTGUARD_OTEL="1", OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none",
               OTEL_SERVICE_NAME="svc-under-test")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    spans = [json.loads(chunk) for chunk in out.stdout.replace("}\n{", "}\x00{").split("\x00") if chunk.strip()]
    d = next(s for s in spans if s["name"] == "agentguard.decide t")
    assert d["attributes"]["agentguard.decision"] == "ALLOW"
    assert d["resource"]["attributes"]["service.name"] == "svc-under-test"
    env["OTEL_TRACES_EXPORTER"] = "zipkin"
    bad = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert bad.returncode != 0 and "unsupported exporter 'zipkin'" in bad.stderr


def test_disabled_decisions_are_unchanged(otel: Otel) -> None:
    stack = _stack()
    on = [Pipeline(stack).decide("a", ToolCall(n, {})) for n in ("read", "send_x")]
    telemetry.disable()
    off = [Pipeline(stack).decide("b", ToolCall(n, {})) for n in ("read", "send_x")]
    assert [(o.execute, o.verdict.decision) for o in on] == [(o.execute, o.verdict.decision) for o in off]
    assert [o.verdict.decision for o in off] == [Decision.ALLOW, Decision.REJECT]


def test_without_guard_spans_the_decision_span_lists_the_guards() -> None:
    o = Otel()
    telemetry.enable(tracer_provider=o.tracer_provider, meter_provider=o.meter_provider, guard_spans=False)
    try:
        Pipeline(_stack()).decide("r", ToolCall("delete_x", {}))
    finally:
        telemetry.disable()  # builds what is pending
    spans = o.spans.get_finished_spans()
    assert [s.name for s in spans] == ["agentguard.decide delete_x"]
    a = spans[0].attributes
    assert tuple(a["agentguard.guards"]) == ("no-deletes", "no-sends")
    assert tuple(a["agentguard.guard_decisions"]) == ("REJECT", "ALLOW")


def test_a_failing_telemetry_never_changes_or_breaks_a_decision() -> None:
    """A tracer whose every call raises: the decisions are exactly those made with telemetry off."""

    class Broken:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("exporter exploded")

    class BrokenProvider:
        def get_tracer(self, *a: Any, **k: Any) -> Any:
            return Broken()

    o = Otel()
    telemetry.enable(tracer_provider=BrokenProvider(), meter_provider=o.meter_provider)
    try:
        outs = [Pipeline(_stack()).decide("r", ToolCall(n, {})) for n in ("read", "send_x")]
        aouts = [asyncio.run(Pipeline(_stack()).adecide("a", ToolCall(n, {}))) for n in ("read", "send_x")]
    finally:
        telemetry.disable()
    assert [(o.execute, o.verdict.decision) for o in outs + aouts] == [(True, Decision.ALLOW), (False, Decision.REJECT)] * 2
