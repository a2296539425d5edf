"""Service endpoints: ``GET /health`` (public liveness and readiness) and ``GET /metrics`` (Prometheus)."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.responses import PlainTextResponse, Response

from ..gate import JSONResponse
from ..service import Service

__all__ = ["register"]


def register(app: FastAPI, svc: Service) -> None:
    store, source, metrics = svc.store, svc.source, svc.metrics

    @app.get("/health", tags=["service"], summary="Liveness and readiness (no token needed)")
    async def health() -> Response:
        """200 when the audit store answers and its writer runs; 503 otherwise (take the replica out)."""
        ok, why = await run_in_threadpool(store.healthy)
        return JSONResponse({"status": "ok" if ok else "unavailable", "audit": store.dialect,
                             "audit_error": why, "version": app.version, "guards_version": source.version,
                             "guards_error": source.last_error}, status_code=200 if ok else 503)

    @app.get("/metrics", tags=["service"], summary="Prometheus metrics (text format)",
             response_class=PlainTextResponse)
    async def prom() -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")
