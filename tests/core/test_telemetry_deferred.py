"""Deferred decision spans (agentguard.core.telemetry_deferred, telemetry's default): built by a background
thread with the host's parent and the decision's exact start/end times; metrics equal to the decisions
made, at any collection; spans started early where a span id is needed inside the decision (``inject``
from a guard, a decision nested in a guard); a bounded queue that loses nothing."""

from __future__ import annotations

import contextvars
import time
from typing import Any, Iterator

import pytest

pytest.importorskip("opentelemetry.sdk")


from agentguard.core import BaseGuard, Context, GuardStack, Pipeline, ToolCall, Verdict, telemetry  # noqa: E402
from agentguard.core import telemetry_deferred  # noqa: E402

from .test_telemetry import Otel as _Otel  # noqa: E402


class Deny(BaseGuard):
    def __init__(self, name: str, prefix: str) -> None:
        self.name, self.prefix = name, prefix

    def check(self, context: Context, proposal: Any) -> Verdict:
        time.sleep(0.001)  # a measurable guard: its span lies strictly inside the decision's
        if proposal.name.startswith(self.prefix):
            return Verdict.reject(f"{proposal.name} denied", self.name)
        return Verdict.allow(self.name)


class Injecting(BaseGuard):
    """A guard that propagates the trace (as a RemoteGuard does) while it decides."""

    name = "hop"

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}

    def check(self, context: Context, proposal: Any) -> Verdict:
        telemetry.inject(self.headers)
        return Verdict.allow(self.name)


class Nesting(BaseGuard):
    """A guard that asks another Pipeline (an inner decision inside this guard)."""

    name = "outer"

    def check(self, context: Context, proposal: Any) -> Verdict:
        Pipeline(GuardStack([Deny("inner-deny", "nothing_")]), adapter="inner").decide("inner-run", ToolCall("x", {}))
        return Verdict.allow(self.name)


class Otel(_Otel):
    """The shared in-memory SDK set-up, read WITHOUT a flush: these tests check what the builder thread did."""

    def by_name(self) -> dict[str, Any]:
        return {s.name: s for s in self.spans.get_finished_spans()}


@pytest.fixture
def otel() -> Iterator[Otel]:
    o = Otel()
    tel = telemetry.enable(tracer_provider=o.tracer_provider, meter_provider=o.meter_provider)
    assert tel.deferred  # the default
    try:
        yield o
    finally:
        telemetry.disable()


def _stack() -> GuardStack:
    return GuardStack([Deny("no-deletes", "delete_"), Deny("no-sends", "send_")])


def test_the_builder_thread_makes_the_spans_with_the_hosts_parent_and_exact_times(otel: Otel) -> None:
    p = Pipeline(_stack(), adapter="test")
    with otel.tracer.start_as_current_span("host") as host:
        before = time.time_ns()
        out = p.decide("run-1", ToolCall("send_mail", {}, "c1"))
        after = time.time_ns()
    assert not out.execute
    deadline = time.time() + 10  # no flush: the background thread builds them
    while len(otel.spans.get_finished_spans()) < 3 and time.time() < deadline:
        time.sleep(0.01)
    spans = otel.by_name()
    d = spans["agentguard.decide send_mail"]
    assert d.parent.span_id == host.get_span_context().span_id and d.context.trace_id == host.get_span_context().trace_id
    assert before <= d.start_time < d.end_time <= after
    assert d.attributes["agentguard.decision"] == "REJECT" and d.attributes["gen_ai.tool.call.id"] == "c1"
    g1, g2 = spans["agentguard.guard no-deletes"], spans["agentguard.guard no-sends"]
    assert g1.parent.span_id == g2.parent.span_id == d.context.span_id
    assert d.start_time <= g1.start_time < g1.end_time <= g2.start_time < g2.end_time <= d.end_time
    assert g2.end_time - g2.start_time >= 1_000_000  # the guard's own 1 ms, timed where it ran
    # the histogram holds exactly the decision span's duration
    (pt,) = otel.points("agentguard.decision.duration")
    assert pt.count == 1 and pt.sum == pytest.approx((d.end_time - d.start_time) / 1e9, abs=1e-9)


def test_metrics_at_any_collection_equal_the_decisions_made(otel: Otel) -> None:
    """No flush: a collection builds what is pending first, so counts and latency buckets are never behind."""
    p = Pipeline(_stack(), adapter="test")
    names = ["read_a", "delete_b", "send_c", "read_d", "read_e"] * 7
    outs = [p.decide("r", ToolCall(n, {})) for n in names]
    counts = {(pt.attributes["agentguard.decision"], pt.attributes["agentguard.outcome"]): pt.value
              for pt in otel.points("agentguard.decisions")}
    assert counts == {("ALLOW", "execute"): sum(o.execute for o in outs),
                      ("REJECT", "refuse"): sum(not o.execute for o in outs)} == {("ALLOW", "execute"): 21,
                                                                                  ("REJECT", "refuse"): 14}
    spans = [s for s in otel.spans.get_finished_spans() if s.name.startswith("agentguard.decide")]
    assert len(spans) == len(names)
    hist = otel.points("agentguard.decision.duration")
    assert sum(pt.count for pt in hist) == len(names)
    assert sum(pt.sum for pt in hist) == pytest.approx(sum((s.end_time - s.start_time) / 1e9 for s in spans), abs=1e-6)
    buckets = [0] * len(hist[0].bucket_counts)
    for pt in hist:
        buckets = [a + b for a, b in zip(buckets, pt.bucket_counts)]
    bounds = list(hist[0].explicit_bounds)  # each decision in the bucket its span's duration says
    want = [0] * len(buckets)
    for s in spans:
        secs = (s.end_time - s.start_time) / 1e9  # the histogram's unit
        want[next((i for i, b in enumerate(bounds) if secs <= b), len(bounds))] += 1
    assert buckets == want and bounds == list(telemetry.DURATION_BUCKETS_S)
    assert buckets[-1] == 0  # sub-second decisions


def test_inject_inside_a_guard_starts_the_spans_it_names(otel: Otel) -> None:
    hop = Injecting()
    with otel.tracer.start_as_current_span("host") as host:
        Pipeline(GuardStack([Deny("first", "x_"), hop]), adapter="test").decide("r", ToolCall("read", {}))
    telemetry.flush()
    spans = otel.by_name()
    d, g = spans["agentguard.decide read"], spans["agentguard.guard hop"]
    _, trace_id, span_id, _ = hop.headers["traceparent"].split("-")
    assert span_id == format(g.context.span_id, "016x") and trace_id == format(host.get_span_context().trace_id, "032x")
    assert g.parent.span_id == d.context.span_id and d.parent.span_id == host.get_span_context().span_id
    assert g.attributes["agentguard.decision"] == "ALLOW" and d.attributes["agentguard.decision"] == "ALLOW"
    assert spans["agentguard.guard first"].parent.span_id == d.context.span_id
    assert len(otel.spans.get_finished_spans()) == 4  # host, decision, two guards: none made twice
    top = Injecting()  # a guard that is the whole pipeline (no per-guard span): the decision's own span
    Pipeline(top).decide("r2", ToolCall("t2", {}))
    telemetry.flush()
    assert top.headers["traceparent"].split("-")[2] == format(otel.by_name()["agentguard.decide t2"].context.span_id,
                                                               "016x")


def test_a_decision_nested_in_a_guard_is_a_child_of_that_guards_span(otel: Otel) -> None:
    Pipeline(GuardStack([Nesting()]), adapter="outer").decide("r", ToolCall("outer_tool", {}))
    telemetry.flush()
    spans = otel.by_name()
    outer_guard, inner = spans["agentguard.guard outer"], spans["agentguard.decide x"]
    assert inner.parent.span_id == outer_guard.context.span_id
    assert outer_guard.parent.span_id == spans["agentguard.decide outer_tool"].context.span_id
    assert spans["agentguard.guard inner-deny"].parent.span_id == inner.context.span_id


def test_the_queue_stays_bounded_and_loses_nothing(otel: Otel, monkeypatch: pytest.MonkeyPatch) -> None:
    """No builder thread at all: past HIGH_WATER each decision builds two records itself."""
    monkeypatch.setattr(telemetry_deferred, "HIGH_WATER", 8)
    monkeypatch.setattr(telemetry_deferred.Builder, "_start", lambda self: None)
    builder = telemetry.active().builder
    p = Pipeline(_stack(), adapter="test")
    peak = 0
    for i in range(60):
        p.decide("r", ToolCall(f"read_{i}", {}))
        peak = max(peak, len(builder.queue))
    assert peak <= 9
    telemetry.flush()
    assert len(builder.queue) == 0 and len(otel.spans.get_finished_spans()) == 60 * 3


def test_decisions_finishing_after_telemetry_is_turned_off_are_still_built(otel: Otel) -> None:
    class TurnsItOff(BaseGuard):
        name = "off-switch"

        def check(self, context: Context, proposal: Any) -> Verdict:
            telemetry.disable()
            return Verdict.allow(self.name)

    Pipeline(GuardStack([TurnsItOff()])).decide("r", ToolCall("late", {}))
    assert "agentguard.decide late" in otel.by_name()


def test_the_environment_chooses_synchronous_spans(otel: Otel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(telemetry.DEFERRED_ENV, "0")
    tel = telemetry.enable(tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    assert not tel.deferred and tel.builder is None
    with otel.tracer.start_as_current_span("host"):
        Pipeline(_stack()).decide("r", ToolCall("read", {}))
        assert len(otel.spans.get_finished_spans()) == 3  # built inside the decision, before it returned


def test_a_decision_left_behind_by_a_finished_one_keeps_the_current_parent(otel: Otel) -> None:
    """A guard's thread that outlives its decision (abandoned at the deadline) and decides again: the finished
    decision is not started late; the new decision's parent is the context it runs in."""
    saved: list[contextvars.Context] = []

    class Keeps(BaseGuard):
        name = "keeps"

        def check(self, context: Context, proposal: Any) -> Verdict:
            saved.append(contextvars.copy_context())
            return Verdict.allow(self.name)

    with otel.tracer.start_as_current_span("host") as host:
        Pipeline(GuardStack([Keeps()])).decide("r", ToolCall("first", {}))
    saved[0].run(Pipeline(_stack()).decide, "r", ToolCall("later", {}))
    telemetry.flush()
    spans = otel.by_name()
    assert spans["agentguard.decide later"].parent.span_id == host.get_span_context().span_id
    assert len([s for s in otel.spans.get_finished_spans() if s.name == "agentguard.decide first"]) == 1
