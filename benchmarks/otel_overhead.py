"""OpenTelemetry overhead per decision on the in-process path, side by side in one run (issue 30).

One ``Pipeline.decide`` of a two-guard ``tool-rules`` stack (``examples/integrations/agentguard.toml``'s kind:
deny and argument rules, built by ``agentguard.config.build_stack``), with a mix of allowed and refused calls,
under three telemetry settings, interleaved in blocks (off, noop, batch, off, ...) so all see the same load:

- ``off``: telemetry disabled (the hooks cost one module-global read each);
- ``noop``: the SDK's TracerProvider and MeterProvider on, every span built, attributed and ended, and handed
  to a ``SimpleSpanProcessor`` whose exporter drops it (the cost of instrumenting, without export);
- ``batch``: the SDK's ``BatchSpanProcessor`` with the OTLP/HTTP exporter sending to a real receiver process
  (``tests/integrations/otlp_receiver.py``, spans decoded and discarded) and a ``PeriodicExportingMetricReader``
  with the OTLP/HTTP metric exporter: the production set-up, export in its background thread;
- ``batch_decision_span_only``: the same with ``guard_spans=False`` (one span per decision, the guards and
  their decisions as attributes of it, instead of a child span per guard).

Each decision is timed alone (``perf_counter_ns``); reported per setting: median, p10, p90, p99 in
microseconds, the added median against ``off`` (target in the issue: under 50 us), the spans per decision,
and the 1-minute load average before and after (the machine is shared). ``sdk_bare_span_us``: the median of
one ``start_span(); end()`` of the SDK with no processor and no attribute, timed in the same blocks: the floor
any span-per-decision design pays on this machine (to scale the figures to another one).

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


def _providers(kind: str, endpoint: str) -> tuple[Any, Any]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, PeriodicExportingMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (BatchSpanProcessor, SimpleSpanProcessor, SpanExporter,
                                                SpanExportResult)

    class DropSpans(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
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

        tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
        reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics"),
                                               export_interval_millis=1_000)
    return tp, MeterProvider(metric_readers=[reader])


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decisions", type=int, default=2000, help="decisions per block")
    ap.add_argument("--blocks", type=int, default=10, help="blocks per setting (interleaved)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "otel_overhead.json"))
    args = ap.parse_args()

    from opentelemetry.sdk.trace import TracerProvider

    from agentguard.config import build_stack
    from agentguard.core import Pipeline, telemetry

    load_before = os.getloadavg()
    rx = subprocess.Popen([sys.executable, str(RECEIVER), os.devnull], stdout=subprocess.PIPE, text=True)
    try:
        endpoint = f"http://127.0.0.1:{int(rx.stdout.readline())}"  # type: ignore[union-attr]
        providers = {k: _providers(k, endpoint) for k in ("noop", "batch")}
        stack = build_stack(STACK)
        calls = _calls()
        settings: dict[str, Any] = {"off": None, "noop": (providers["noop"], True), "batch": (providers["batch"], True),
                                    "batch_decision_span_only": (providers["batch"], False)}
        times: dict[str, list[float]] = {k: [] for k in settings}
        bare: list[float] = []
        bare_tracer = TracerProvider().get_tracer("bare")
        refused = 0
        for block in range(args.blocks + 1):  # block 0 warms every setting up and is not counted
            for kind in times:
                if settings[kind] is None:
                    telemetry.disable()
                else:
                    (tp, mp), guard_spans = settings[kind]
                    telemetry.enable(tracer_provider=tp, meter_provider=mp, guard_spans=guard_spans)
                p = Pipeline(stack, adapter="bench")
                got = []
                for i in range(args.decisions):
                    c = calls[i % len(calls)]
                    t0 = time.perf_counter_ns()
                    out = p.decide("bench-run", c)
                    got.append((time.perf_counter_ns() - t0) / 1000.0)
                    refused += not out.execute
                if block:
                    times[kind] += got
            for _ in range(args.decisions):
                t0 = time.perf_counter_ns()
                bare_tracer.start_span("bare").end()
                if block:
                    bare.append((time.perf_counter_ns() - t0) / 1000.0)
        telemetry.disable()
        for tp, mp in providers.values():
            tp.shutdown()
            mp.shutdown()
    finally:
        rx.terminate()
        rx.wait(timeout=10)
    base = statistics.median(times["off"])
    result = {
        "command": "python benchmarks/otel_overhead.py " + " ".join(sys.argv[1:]),
        "what": "Pipeline.decide of a two-guard tool-rules stack, in process, telemetry off / SDK with a dropping "
                "exporter (SimpleSpanProcessor) / SDK with BatchSpanProcessor + OTLP/HTTP to a receiver process "
                "(with and without a span per guard); interleaved blocks, each decision timed alone",
        "decisions_per_setting": len(times["off"]), "blocks": args.blocks,
        "spans_per_decision": {"noop": 1 + len(STACK["guards"]), "batch": 1 + len(STACK["guards"]),
                               "batch_decision_span_only": 1},
        "settings": {k: {"median_us": round(statistics.median(v), 2), "p10_us": round(_pct(v, 0.10), 2),
                         "p90_us": round(_pct(v, 0.90), 2), "p99_us": round(_pct(v, 0.99), 2),
                         "added_median_us": round(statistics.median(v) - base, 2)} for k, v in times.items()},
        "target_added_median_us": 50.0,
        "sdk_bare_span_us": round(statistics.median(bare), 2),
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
    }
    result["within_target"] = all(s["added_median_us"] < 50.0 for s in result["settings"].values())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["settings"], indent=1))


if __name__ == "__main__":
    main()
