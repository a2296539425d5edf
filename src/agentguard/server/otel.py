"""The service's OpenTelemetry and shadow-mode wiring (the decisions themselves are traced by the core
:mod:`agentguard.core.telemetry` hooks in the Pipeline, and observed by :mod:`agentguard.core.shadow`).

- :func:`start`: telemetry on when the settings say ``otel = true`` or the environment says
  ``AGENTGUARD_OTEL=1`` (exporters from the standard ``OTEL_*`` variables);
- :func:`traced`: the ASGI app wrapped so that a request's W3C ``traceparent`` header is the parent of
  the spans its decisions make (a client's :class:`~.client.RemoteGuard` sends it);
- :func:`shadow_extra`: the audit record's ``shadow`` field (stored in ``decisions.shadow``).
"""

from __future__ import annotations

from typing import Any

from ..core import telemetry
from ..core.types import Verdict

__all__ = ["TraceContext", "shadow_extra", "start", "traced"]

_HEADERS = (b"traceparent", b"tracestate")


def start(settings: Any) -> None:
    if getattr(settings, "otel", False):
        if telemetry.active() is None:
            telemetry.enable()
    else:
        telemetry.enable_from_env()


class TraceContext:
    """ASGI middleware: the request's ``traceparent``/``tracestate`` become the current trace context."""

    def __init__(self, app: Any) -> None:
        self.app = app
        for attr in ("fastapi", "state"):
            if hasattr(app, attr):
                setattr(self, attr, getattr(app, attr))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or telemetry.active() is None:
            return await self.app(scope, receive, send)
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or () if k in _HEADERS}
        with telemetry.parent_from(carrier):
            await self.app(scope, receive, send)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)


def traced(app: Any) -> Any:
    """``app`` itself when telemetry is off at startup, else :class:`TraceContext` around it."""
    return TraceContext(app) if telemetry.active() is not None else app


def shadow_extra(v: Verdict, extra: dict[str, Any]) -> dict[str, Any]:
    """``extra`` with the verdict's would-be entries of shadow guards (``details['shadow']``), if any."""
    shadow = v.details.get("shadow") if v.details else None
    if shadow:
        extra["shadow"] = list(shadow)
    return extra
