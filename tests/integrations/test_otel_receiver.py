"""OpenTelemetry end to end: spans and metrics leave real processes over OTLP/HTTP and arrive, with their
attributes and parent links, at a real receiver process (tests/integrations/otlp_receiver.py, decoding the
protobuf with ``opentelemetry-proto``).

- LangChain (a real ``create_agent`` run) whose stack asks the guard *service* (``agentguard --otel serve``,
  its own process, exporters from ``OTEL_*``) through :class:`~agentguard.server.client.RemoteGuard`: one
  trace from the host's span, through the LangChain decision and the remote guard's span, over the
  ``traceparent`` header, into the service's decision and guard spans;
- the MCP proxy (``agentguard mcp-proxy`` over stdio, its own process, ``AGENTGUARD_OTEL=1``): the
  client's ``_meta.traceparent`` is the parent of the proxy's decision spans.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
pytest.importorskip("opentelemetry.proto")

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402

from agentguard.core import GuardStack, ToolCall, telemetry  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TOKEN = "otel-receiver-test-token"
RULES = '[[guards]]\ntype = "tool-rules"\nname = "no-deletes"\ndeny = ["delete_*"]\n'


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[str, Callable[[], list[dict[str, Any]]]]]:
    out = tmp_path / "received.jsonl"
    p = subprocess.Popen([sys.executable, str(HERE / "otlp_receiver.py"), str(out)], stdout=subprocess.PIPE,
                         text=True)
    try:
        port = int(p.stdout.readline())

        def read() -> list[dict[str, Any]]:
            return [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else []

        yield f"http://127.0.0.1:{port}", read
    finally:
        p.terminate()
        p.wait(timeout=10)


def _wait(read: Callable[[], list[dict[str, Any]]], ok: Callable[[list[dict[str, Any]]], bool],
          timeout: float = 30.0) -> list[dict[str, Any]]:
    t0 = time.time()
    while time.time() - t0 < timeout:
        rows = read()
        if ok(rows):
            return rows
        time.sleep(0.1)
    return read()


def _otel_env(endpoint: str, service: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTGUARD_", "OTEL_"))}
    env.update(AGENTGUARD_OTEL="1", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_SERVICE_NAME=service,
               OTEL_BSP_SCHEDULE_DELAY="50", OTEL_METRIC_EXPORT_INTERVAL="200")
    return env


def _serve(tmp_path: Path, endpoint: str) -> tuple[subprocess.Popen, str]:
    from agentguard.server.testing import free_port

    (tmp_path / "tools.toml").write_text(RULES)
    port = free_port()
    env = _otel_env(endpoint, "guard-service") | {"AGENTGUARD_TOKEN": TOKEN}
    p = subprocess.Popen([sys.executable, "-m", "agentguard", "--otel", "serve", "--port", str(port), "--state-dir",
                          str(tmp_path / "state"), "--tool-guards", str(tmp_path / "tools.toml")], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    import httpx

    url = f"http://127.0.0.1:{port}"
    t0 = time.time()
    while time.time() - t0 < 60:
        if p.poll() is not None:
            raise AssertionError("service exited: " + p.stderr.read().decode()[-2000:])
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return p, url
        except httpx.HTTPError:
            time.sleep(0.2)
    os.killpg(p.pid, signal.SIGKILL)
    raise AssertionError("service did not start")


def test_langchain_to_the_service_one_trace_across_two_processes(tmp_path: Path, receiver: Any) -> None:
    pytest.importorskip("langchain")
    from drivers.langchain import LangChainDriver  # tests/integrations is on sys.path (conftest-free import)

    from agentguard.server.client import GuardServiceClient, RemoteGuard

    endpoint, read = receiver
    service, url = _serve(tmp_path, endpoint)
    tp = TracerProvider(resource=Resource.create({"service.name": "agent-app"}))
    tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    mp = MeterProvider(resource=Resource.create({"service.name": "agent-app"}),
                       metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics"),
                                                                     export_interval_millis=60_000)])
    telemetry.enable(tracer_provider=tp, meter_provider=mp)
    client = GuardServiceClient(url, TOKEN)
    try:
        stack = GuardStack([RemoteGuard(client)])
        turns = [[ToolCall("read_note", {"target": "a", "amount": 1}, "c1")],
                 [ToolCall("delete_note", {"target": "a", "amount": 1}, "c2")]]
        with tp.get_tracer("host").start_as_current_span("host: agent run") as host:
            res = LangChainDriver().run(stack, turns)
        assert [name for name, _ in res.executed] == ["read_note"]
        tp.force_flush()
        mp.force_flush()
    finally:
        telemetry.disable()
        client.close()
        tp.shutdown()
        mp.shutdown()
    trace_id = format(host.get_span_context().trace_id, "032x")
    rows = _wait(read, lambda r: sum(1 for s in r if s.get("service") == "guard-service"
                                     and s["name"].startswith("agentguard.decide")) >= 2)
    spans = [r for r in rows if r["signal"] == "span"]
    service.send_signal(signal.SIGTERM)
    service.wait(timeout=20)
    by_id = {s["span_id"]: s for s in spans}
    local = {s["attributes"]["gen_ai.tool.name"]: s for s in spans
             if s["service"] == "agent-app" and s["name"].startswith("agentguard.decide")}
    remote = {s["attributes"]["gen_ai.tool.name"]: s for s in spans
              if s["service"] == "guard-service" and s["name"].startswith("agentguard.decide")}
    for tool, decision in (("read_note", "ALLOW"), ("delete_note", "REJECT")):
        lo, svc = local[tool], remote[tool]
        assert lo["trace_id"] == svc["trace_id"] == trace_id  # one trace across both processes
        assert lo["parent_span_id"] == format(host.get_span_context().span_id, "016x")
        assert lo["attributes"]["agentguard.adapter"] == "langchain"
        assert lo["attributes"]["gen_ai.tool.call.id"] == ("c1" if tool == "read_note" else "c2")
        assert (lo["attributes"]["agentguard.decision"], svc["attributes"]["agentguard.decision"]) == (decision, decision)
        hop = by_id[svc["parent_span_id"]]  # the service's decision hangs under the client's remote-guard span
        assert hop["name"] == "agentguard.guard remote" and hop["parent_span_id"] == lo["span_id"]
        assert svc["attributes"]["agentguard.adapter"] == "service"
        members = [s for s in spans if s["parent_span_id"] == svc["span_id"]]
        assert [m["attributes"]["agentguard.guard"] for m in members if m["name"].startswith("agentguard.guard")] \
            == ["no-deletes"]
    assert remote["delete_note"]["attributes"]["agentguard.guard"] == "no-deletes"
    metrics = [r for r in rows if r["signal"] == "metric" and r["name"] == "agentguard.decisions"]
    assert {(m["attributes"]["agentguard.decision"], m["value"]) for m in metrics
            if m["attributes"]["agentguard.adapter"] == "langchain"} == {("ALLOW", 1), ("REJECT", 1)}


def test_the_mcp_proxy_process_exports_under_the_clients_trace(tmp_path: Path, receiver: Any) -> None:
    pytest.importorskip("mcp")
    from mcp import Client, StdioServerParameters

    endpoint, read = receiver
    cfg = tmp_path / "agentguard.toml"
    cfg.write_text(RULES)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "keep.txt").write_text("k")
    upstream = str(REPO / "examples" / "integrations" / "mcp_upstream_server.py")
    params = StdioServerParameters(command=sys.executable, cwd=str(REPO), env=_otel_env(endpoint, "mcp-proxy"),
                                   args=["-m", "agentguard", "mcp-proxy", "--config", str(cfg), "--upstream",
                                         f"notes={sys.executable} {upstream} {notes}"])
    parents = {"delete_note": "ab" * 8, "list_notes": "cd" * 8}
    trace_id = "0af7651916cd43dd8448eb211c80319c"

    async def main() -> list[Any]:
        async with Client(params) as client:
            answers = [await client.call_tool(name, {"name": "keep.txt"} if name == "delete_note" else {},
                                              meta={"traceparent": f"00-{trace_id}-{span}-01"})
                       for name, span in parents.items()]
            _wait(read, lambda r: sum(1 for s in r if s["name"].startswith("agentguard.decide")) >= 2)
            return answers

    denied, listed = asyncio.run(main())
    assert denied.is_error and (notes / "keep.txt").exists() and not listed.is_error
    spans = [r for r in read() if r["signal"] == "span"]
    decided = {s["attributes"]["gen_ai.tool.name"]: s for s in spans if s["name"].startswith("agentguard.decide")}
    for tool, parent in parents.items():
        s = decided[tool]
        assert (s["trace_id"], s["parent_span_id"], s["service"]) == (trace_id, parent, "mcp-proxy")
        assert s["attributes"]["agentguard.adapter"] == "mcp"
        assert any(g["parent_span_id"] == s["span_id"] and g["name"] == "agentguard.guard no-deletes" for g in spans)
    assert decided["delete_note"]["attributes"]["agentguard.decision"] == "REJECT"
    assert decided["delete_note"]["attributes"]["agentguard.reason"] == "tool delete_note is denied"
    assert decided["list_notes"]["attributes"]["agentguard.outcome"] == "execute"
