"""OpenTelemetry overhead per decision on the in-process path, side by side in one run (issue 30).

One ``Pipeline.decide`` of a two-guard ``tool-rules`` stack (``examples/integrations/agentguard.toml``'s kind:
deny and argument rules, built by ``agentguard.config.build_stack``), with a mix of allowed and refused calls,
under these telemetry settings, interleaved in blocks (off, noop, batch, ..., off, ...) so all see the same load:

- ``off``: telemetry disabled (the hooks cost one module-global read each);
- ``noop``: the default (deferred spans, a span per decision and per guard), the SDK's TracerProvider and
  MeterProvider, every span built, attributed and ended by agentguard's builder thread and handed to a
  ``SimpleSpanProcessor`` whose exporter drops it (the cost of instrumenting, without export);
- ``batch``: the same with the SDK's ``BatchSpanProcessor`` and the OTLP/HTTP exporter sending to a real
  receiver process (``tests/integrations/otlp_receiver.py``, spans decoded and discarded) and a
  ``PeriodicExportingMetricReader`` with the OTLP/HTTP metric exporter: the production set-up;
- ``batch_decision_span_only``: ``batch`` with ``guard_spans=False`` (one span per decision);
- ``batch_sync`` / ``batch_sync_decision_span_only``: ``batch`` / ``batch_decision_span_only`` with
  ``deferred=False``: every span built inside the decision (the setting for guards whose own code makes spans).

Two numbers per setting, because deferral moves work off the decision's path instead of removing it:

- latency: each decision timed alone (``perf_counter_ns``): median, p10, p90, p99 in microseconds and the
  added median against ``off`` (the issue's target: under 50 us);
- cost: per block, the process CPU time (``time.process_time``: every thread of the process, so the builder
  thread, the batch exporter's encoding and sending and the metric reader included) and the wall time from
  the block's first decision until ``telemetry.flush()`` and the tracer provider's ``force_flush()`` return
  (every span of the block built and exported), divided by the block's decisions (``cpu_us_per_decision``,
  ``wall_us_per_decision``: the throughput of a tight loop), and the added CPU against ``off``.

``spans_per_decision`` is counted by the span exporter (the spans really built and exported; the batch
processor's queue holds a whole block, so it drops none). Reported
with the 1-minute load average before and after (the machine is shared). ``sdk_bare_span_us``: the median of
one ``start_span(); end()`` of the SDK with no processor and no attribute, timed in the same blocks: the floor
any synchronous span costs on this machine (to scale the figures to another one).

    python benchmarks/otel_overhead.py [--decisions 2000] [--blocks 10] [--out benchmarks/results/otel_overhead.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RECEIVER = REPO / "tests" / "integrations" / "otlp_receiver.py"
STACK = {"guards": [
    {"type": "tool-rules", "name": "no-deletes", "deny": ["delete_*", "rm_*"]},
    {"type": "tool-rules", "name": "txt-only",
     "arguments": [{"tool": "write_*", "arg": "name", "match": r"[a-z0-9_]+\.txt"}]},
]}


def _calls() -> list[Any]:
    from agentguard.core import ToolCall

    return [ToolCall("read_note", {"name": "a.txt"}, "c1"), ToolCall("write_note", {"name": "b.txt"}, "c2"),
            ToolCall("delete_note", {"name": "a.txt"}, "c3"), ToolCall("write_note", {"name": "../x"}, "c4")]


def _providers(kind: str, endpoint: str) -> tuple[Any, Any, Any]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, PeriodicExportingMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (BatchSpanProcessor, SimpleSpanProcessor, SpanExporter,
                                                SpanExportResult)

    class Count:
        n = 0  # spans the exporter exported (built and not dropped on the way)

    count = Count()

    class DropSpans(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            count.n += len(spans)
            return SpanExportResult.SUCCESS

    class DropMetrics(MetricExporter):
        def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kw: Any) -> MetricExportResult:
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis: float = 10_000) -> bool:
            return True

        def shutdown(self, timeout_millis: float = 30_000, **kw: Any) -> None:
            return None

    tp = TracerProvider()
    if kind == "noop":
        tp.add_span_processor(SimpleSpanProcessor(DropSpans()))
        reader = PeriodicExportingMetricReader(DropMetrics(), export_interval_millis=1_000)
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        class CountedOTLP(OTLPSpanExporter):
            def export(self, spans: Any) -> SpanExportResult:
                result = super().export(spans)
                count.n += len(spans) if result is SpanExportResult.SUCCESS else 0
                return result

        # a queue that holds a whole block: the batch processor drops nothing, so all export work is counted
        tp.add_span_processor(BatchSpanProcessor(CountedOTLP(endpoint=f"{endpoint}/v1/traces"),
                                                 max_queue_size=1 << 17))
        reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics"),
                                               export_interval_millis=1_000)
    return tp, MeterProvider(metric_readers=[reader]), count


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


SETTINGS: dict[str, Any] = {  # provider, guard_spans, deferred
    "off": None, "noop": ("noop", True, True), "batch": ("batch", True, True),
    "batch_decision_span_only": ("batch", False, True), "batch_sync": ("batch", True, False),
    "batch_sync_decision_span_only": ("batch", False, False)}


def _block(kind: str, providers: dict[str, Any], stack: Any, calls: list[Any], n: int) -> dict[str, Any]:
    """One block of ``n`` decisions under setting ``kind``: per-decision latencies, CPU and wall until built."""
    from agentguard.core import Pipeline, telemetry

    tp = count = None
    if SETTINGS[kind] is None:
        telemetry.disable()
    else:
        prov, guard_spans, deferred = SETTINGS[kind]
        tp, mp, count = providers[prov]
        telemetry.enable(tracer_provider=tp, meter_provider=mp, guard_spans=guard_spans, deferred=deferred)
    p = Pipeline(stack, adapter="bench")
    spans0 = count.n if count is not None else 0
    got, refused = [], 0
    w0, c0 = time.perf_counter(), time.process_time()
    for i in range(n):
        c = calls[i % len(calls)]
        t0 = time.perf_counter_ns()
        out = p.decide("bench-run", c)
        got.append((time.perf_counter_ns() - t0) / 1000.0)
        refused += not out.execute
    telemetry.flush()
    if tp is not None:
        tp.force_flush()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {"lat": got, "cpu": cpu, "wall": wall, "spans": (count.n - spans0) if count is not None else 0,
            "refused": refused}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decisions", type=int, default=2000, help="decisions per block")
    ap.add_argument("--blocks", type=int, default=10, help="blocks per setting (interleaved)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "otel_overhead.json"))
    args = ap.parse_args()

    from opentelemetry.sdk.trace import TracerProvider

    from agentguard.config import build_stack
    from agentguard.core import telemetry

    load_before = os.getloadavg()
    rx = subprocess.Popen([sys.executable, str(RECEIVER), os.devnull], stdout=subprocess.PIPE, text=True)
    try:
        endpoint = f"http://127.0.0.1:{int(rx.stdout.readline())}"  # type: ignore[union-attr]
        providers = {k: _providers(k, endpoint) for k in ("noop", "batch")}
        stack = build_stack(STACK)
        calls = _calls()
        acc: dict[str, dict[str, Any]] = {k: {"lat": [], "cpu": 0.0, "wall": 0.0, "spans": 0, "n": 0}
                                          for k in SETTINGS}
        bare: list[float] = []
        bare_tracer = TracerProvider().get_tracer("bare")
        for block in range(args.blocks + 1):  # block 0 warms every setting up and is not counted
            for kind in SETTINGS:
                r = _block(kind, providers, stack, calls, args.decisions)
                if block:
                    a = acc[kind]
                    a["lat"] += r["lat"]
                    a["cpu"] += r["cpu"]
                    a["wall"] += r["wall"]
                    a["spans"] += r["spans"]
                    a["n"] += args.decisions
            for _ in range(args.decisions):
                t0 = time.perf_counter_ns()
                bare_tracer.start_span("bare").end()
                if block:
                    bare.append((time.perf_counter_ns() - t0) / 1000.0)
        telemetry.disable()
        for tp, mp, _ in providers.values():
            tp.shutdown()
            mp.shutdown()
    finally:
        rx.terminate()
        rx.wait(timeout=10)
    base = statistics.median(acc["off"]["lat"])
    base_cpu = acc["off"]["cpu"] / acc["off"]["n"] * 1e6
    settings: dict[str, Any] = {}
    for k, a in acc.items():
        v, med = a["lat"], statistics.median(a["lat"])
        settings[k] = {"median_us": round(med, 2), "p10_us": round(_pct(v, 0.10), 2),
                       "p90_us": round(_pct(v, 0.90), 2), "p99_us": round(_pct(v, 0.99), 2),
                       "added_median_us": round(med - base, 2),
                       "cpu_us_per_decision": round(a["cpu"] / a["n"] * 1e6, 2),
                       "added_cpu_us_per_decision": round(a["cpu"] / a["n"] * 1e6 - base_cpu, 2),
                       "wall_us_per_decision": round(a["wall"] / a["n"] * 1e6, 2),
                       "spans_per_decision": round(a["spans"] / a["n"], 3)}
    result = {
        "command": "python benchmarks/otel_overhead.py " + " ".join(sys.argv[1:]),
        "what": "Pipeline.decide of a two-guard tool-rules stack, in process, telemetry off / deferred spans "
                "(the default) with a dropping exporter (SimpleSpanProcessor) / deferred spans with "
                "BatchSpanProcessor + OTLP/HTTP to a receiver process (with and without a span per guard) / "
                "synchronous spans (deferred=False) with the same batch export; interleaved blocks, each "
                "decision timed alone (latency), and per block the process CPU and wall time until every "
                "span is built and exported (cost)",
        "decisions_per_setting": len(acc["off"]["lat"]), "blocks": args.blocks,
        "settings": settings,
        "target_added_median_us": 50.0,
        "default_settings": ["noop", "batch", "batch_decision_span_only"],
        "sdk_bare_span_us": round(statistics.median(bare), 2),
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
    }
    result["within_target"] = {k: s["added_median_us"] < 50.0 for k, s in settings.items() if k != "off"}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["settings"], indent=1))


if __name__ == "__main__":
    main()
