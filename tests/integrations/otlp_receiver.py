"""A small OTLP/HTTP receiver, run as its own process by the tests (the OpenTelemetry Collector binary is not
installable offline): ``python otlp_receiver.py OUT.jsonl`` listens on a free loopback port, prints the port
on its first line, and appends every span and metric data point it receives (``POST /v1/traces``,
``POST /v1/metrics``, protobuf bodies, optionally gzip) to OUT.jsonl as one JSON object per line.

The bodies are decoded with the ``opentelemetry-proto`` package (the generated protobuf classes of the
OTLP specification), so what is checked is exactly what went over the wire."""

from __future__ import annotations

import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (ExportMetricsServiceRequest,
                                                                          ExportMetricsServiceResponse)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTraceServiceRequest,
                                                                      ExportTraceServiceResponse)

LOCK = threading.Lock()


def value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs}


def spans(req: ExportTraceServiceRequest) -> list[dict[str, Any]]:
    out = []
    for rs in req.resource_spans:
        resource = attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append({"signal": "span", "name": s.name, "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                            "parent_span_id": s.parent_span_id.hex(), "attributes": attrs(s.attributes),
                            "service": resource.get("service.name"), "scope": ss.scope.name,
                            "status": int(s.status.code)})
    return out


def points(req: ExportMetricsServiceRequest) -> list[dict[str, Any]]:
    out = []
    for rm in req.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                for p in getattr(m, kind).data_points:
                    out.append({"signal": "metric", "name": m.name, "kind": kind, "attributes": attrs(p.attributes),
                                "value": p.as_int if kind == "sum" else None,
                                "count": p.count if kind == "histogram" else None})
    return out


def main() -> None:
    path = sys.argv[1]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/traces":
                req, resp, decode = ExportTraceServiceRequest(), ExportTraceServiceResponse(), spans
            elif self.path == "/v1/metrics":
                req, resp, decode = ExportMetricsServiceRequest(), ExportMetricsServiceResponse(), points
            else:
                self.send_response(404)
                self.end_headers()
                return
            req.ParseFromString(body)
            rows = decode(req)
            with LOCK, open(path, "a", encoding="utf-8") as fh:
                for r in rows:
                    fh.write(json.dumps(r) + "\n")
            data = resp.SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
