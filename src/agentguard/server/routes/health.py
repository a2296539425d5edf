"""Service endpoints: ``GET /health`` (public liveness and readiness), ``GET /metrics`` (Prometheus) and
the public ``GET /favicon.ico``."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.responses import PlainTextResponse, Response

from ..gate import JSONResponse
from ..service import Service

__all__ = ["FAVICON", "register"]

#: A 16x16 shield, so browsers opening the dashboard get an icon instead of a 401 or 404.
FAVICON = (b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path d="M8 1 2 3v5c0 3.5 2.6 6 6 7 '
           b'3.4-1 6-3.5 6-7V3z" fill="#2b6cb0"/></svg>')


def _public(error: str | None, what: str = "the credentials file") -> str | None:
    """What the public ``/health`` says of a failed reload: that it failed, a fixed text, never the loader's
    (a credentials parser's text may name identities and roles; a guard file's, its paths, rules, tool names and
    the values that broke it); the detail goes to the server log (``agentguard.server.credentials`` and
    ``agentguard.server.guards`` warnings)."""
    return None if error is None else f"{what} failed to reload (details in the server log)"


def register(app: FastAPI, svc: Service) -> None:
    store, source, metrics = svc.store, svc.source, svc.metrics

    @app.get("/health", tags=["service"], summary="Liveness and readiness (no token needed)")
    async def health(strict: bool = False) -> Response:
        """``status``: ``ok``; ``degraded`` when the last hot reload of the guard files failed (the
        previous guards still decide; ``guards_error`` says that it failed, the server log says why); ``unavailable`` when the audit store
        does not answer, or its last write failed within 30 s (a full disk: ``audit writes failing: <error type>``). HTTP 200 for ok and degraded, 503 for unavailable; with ``?strict=true``
        degraded is 503 too (for a load balancer that should take such a replica out)."""
        source.get()  # notice a changed guard file now (at most every reload_s), not only on the next check
        ok, why = await run_in_threadpool(store.healthy)
        degraded = source.last_error is not None
        status = "unavailable" if not ok else ("degraded" if degraded else "ok")
        code = 503 if not ok or (degraded and strict) else 200
        return JSONResponse({"status": status, "audit": store.dialect, "audit_error": why, "version": app.version,
                             "guards_version": source.version, "guards_error": _public(source.last_error, "the guard files"),
                             "guards_reloads": source.reloads,
                             "credentials_error": _public(getattr(svc.credentials, "last_error", None))},
                            status_code=code)

    @app.get("/metrics", tags=["service"], summary="Prometheus metrics (text format)",
             response_class=PlainTextResponse)
    async def prom() -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return Response(FAVICON, media_type="image/svg+xml", headers={"cache-control": "public, max-age=86400"})
