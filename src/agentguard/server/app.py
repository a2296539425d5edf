"""The FastAPI application: endpoints, validation, auth, body limit, audit-before-answer.

Endpoints (all JSON; all but the public ones need ``Authorization: Bearer <token>`` of a credential whose
role covers them: :mod:`.credentials`; 401 without one, 403 for a path the role does not cover):

=======================================  ==========================================================
``GET  /health``                         liveness + audit-store reachability (public)
``POST /v1/check``                       is this tool call allowed? (verified-policy guard)
``POST /v1/runs/{run_id}/steps``         feed one step of a run, get the proactive verdict
``POST /v1/runs/{run_id}/signals``       stream signal values to the calibrated monitor
``POST /v1/traces``                      ingest finished traces (kept in Parquet for learning)
``GET  /v1/runs``, ``/v1/runs/{id}``     recent runs; one run's decisions, risk and signal series
``GET  /v1/decisions``                   recent decisions with reasons
``GET  /v1/model``, ``/v1/calibration``  the DTMC and calibration curves the guards use
``GET  /metrics``                        Prometheus text format
``GET  /openapi.json``, ``/docs``        the OpenAPI schema (public: it holds no data)
``GET  /dashboard``, ``/static/*``       the dashboard shell (public: it holds no data; it asks for
                                         the token and fetches the data from the API with it)
=======================================  ==========================================================

Guarantees:
- A verdict is returned only after its audit record is committed (:mod:`.audit`); if the audit
  write fails the answer is 503 and carries no verdict (fail closed).
- A guard that raises yields a blocking verdict (GuardStack's fail-closed rule; single guards are
  wrapped the same way here), never ALLOW.
- Bodies larger than ``max_body_bytes`` get 413, malformed JSON 400, invalid fields 422, each with a
  one-line ``error`` message. Client data is parsed as JSON only: nothing is evaluated, imported or
  unpickled.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from .. import __version__
from ..core.errors import AgentGuardError, InputError
from .audit import AuditStore
from . import otel
from .credentials import CredentialStore
from .gate import Gate, JSONResponse, error, validation_response
from .guards import GuardSource, ServiceGuards
from .models import ApprovalRequest, CheckRequest, IngestRequest, SignalRequest, StepRequest
from .routes import approvals, dashboard, decisions, health, runs, traces
from .runs import RunExpired
from .service import Service
from .settings import ServerSettings

__all__ = ["app_from_env", "create_app", "dtmc_json", "write_openapi"]

dtmc_json = dashboard.dtmc_json


def create_app(settings: ServerSettings | None = None, guards: ServiceGuards | None = None,
               *, store: AuditStore | None = None) -> FastAPI:
    """Build the application. ``guards`` defaults to :func:`default_guards`; ``store`` to the audit
    store at ``settings.database_url`` (opened, and migrated, here)."""
    settings = settings or ServerSettings()
    credentials = CredentialStore(settings.credentials_file, settings.token)
    source = GuardSource(settings, guards)
    own_store = store is None
    if store is None:
        signer = None
        if settings.audit_chain:
            from .chain import Signer

            signer = Signer.load_or_create(settings.audit_key_file or Path(settings.state_dir) / "audit_ed25519.pem")
        store = AuditStore(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous,
                           chain=settings.audit_chain, signer=signer, checkpoint_every=settings.checkpoint_every)
    otel.start(settings)
    svc = Service(settings, source, store)
    svc.credentials = credentials
    if settings.webhook_url:
        from .webhook import WebhookNotifier

        svc.webhook = WebhookNotifier(settings.webhook_url, settings.webhook_secret or "", store.engine,
                                      retries=settings.webhook_retries, backoff_s=settings.webhook_backoff_s)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        yield
        if svc.webhook is not None:
            svc.webhook.close()
        if own_store:
            store.close()

    app = FastAPI(
        lifespan=lifespan,
        title="agentguard guard service",
        version=__version__,
        description="Check agent tool calls, steps and signals against verified policies, proactive "
                    "DTMC prediction and calibrated monitors. Every verdict is in the audit store before "
                    "it is answered. Authenticate with `Authorization: Bearer <token>`.",
        default_response_class=JSONResponse,
    )
    app.state.settings = settings
    app.state.service = svc
    app.state.guard_source = source
    app.state.store = store
    app.state.traces = svc.traces
    app.state.runs = svc.runs
    app.state.metrics = svc.metrics
    _error_handlers(app)
    health.register(app, svc)
    dashboard.register(app, svc)
    check_raw = decisions.register(app, svc)
    approvals.register(app, svc)
    traces.register(app, svc)
    runs.register(app, svc)
    app.openapi = _openapi(app)  # type: ignore[method-assign]

    gated = Gate(app, token=settings.token, max_body=settings.max_body_bytes, metrics=svc.metrics,
                 fast={"/v1/check": check_raw}, max_concurrency=settings.max_concurrency,
                 body_timeout_s=settings.body_timeout_s, credentials=credentials,
                 routes=[getattr(r, "path", "") for r in app.routes])
    # Expose the FastAPI object for tests/introspection while serving through the gate.
    gated.fastapi = app  # type: ignore[attr-defined]
    gated.state = app.state  # type: ignore[attr-defined]
    return otel.traced(gated)  # type: ignore[return-value]


def _error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _on_validation(_req: Request, exc: RequestValidationError) -> Response:
        return validation_response(list(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _on_http(_req: Request, exc: StarletteHTTPException) -> Response:  # 404, 405: the one error shape
        return error(exc.status_code, str(exc.detail), headers=dict(exc.headers or {}) or None)

    @app.exception_handler(RunExpired)
    async def _on_expired(_req: Request, exc: RunExpired) -> Response:
        return error(410, str(exc))

    @app.exception_handler(AgentGuardError)
    async def _on_agentguard(_req: Request, exc: AgentGuardError) -> Response:
        return error(400 if isinstance(exc, InputError) else 500, str(exc))


def _openapi(app: FastAPI) -> Any:
    """The schema, with the body models the lean endpoints parse themselves registered."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        from fastapi.openapi.utils import get_openapi
        from pydantic.json_schema import models_json_schema

        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        _, defs = models_json_schema([(m, "validation") for m in (CheckRequest, StepRequest, SignalRequest,
                                                                  IngestRequest, ApprovalRequest)],
                                     ref_template="#/components/schemas/{model}")
        comps = schema.setdefault("components", {})
        comps.setdefault("schemas", {}).update(defs.get("$defs", {}))
        comps["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        schema["security"] = [{"bearer": []}]
        schema["paths"]["/health"]["get"]["security"] = []
        app.openapi_schema = schema
        return schema

    return openapi


def app_from_env() -> Any:
    """uvicorn factory for worker processes (:func:`.runner.worker_settings`): the settings are rebuilt
    from the recipe ``agentguard serve`` left in the environment (config file path and options, no
    secrets), then the secrets are dropped from this process's environment and, under ``--workers N``,
    the worker starts watching its master so it dies with it."""
    from .runner import worker_settings

    return create_app(worker_settings())  # guards from the settings' files: versioned, reloaded


def write_openapi(path: str = "docs/server_openapi.json") -> None:
    """Write the service's OpenAPI schema (what ``GET /openapi.json`` serves) to ``path``."""
    import json
    import tempfile

    app = create_app(ServerSettings(token="openapi-only", state_dir=tempfile.mkdtemp()))
    spec = app.fastapi.openapi()  # type: ignore[attr-defined]
    Path(path).write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n")
