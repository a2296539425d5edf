"""The FastAPI application: endpoints, validation, auth, body limit, audit-before-answer.

Endpoints (all JSON; all but the public ones need ``Authorization: Bearer <token>``):

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

import asyncio
import contextlib
import hmac
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, PlainTextResponse, RedirectResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.staticfiles import StaticFiles

from .. import __version__
from ..core.errors import AgentGuardError, InputError
from ..core.guard import fail_closed
from ..core.types import Context, Decision, Step, ToolCall, Trace, Verdict
from .audit import AuditStore, DecisionRecord, input_digest
from .guards import GuardSource, ServiceGuards, fresh_copy, valid_run_id
from .jsonutil import dumps
from .metrics import Metrics
from .models import (
    CheckRequest, ErrorOut, IngestRequest, IngestResponse, SignalRequest, StepIn, StepRequest, VerdictOut,
)
from .runs import RunExpired, RunRegistry
from .settings import ServerSettings
from .traces import TraceStore

__all__ = ["app_from_env", "create_app"]

STATIC_DIR = Path(__file__).with_name("static")
PUBLIC_PATHS = frozenset({"/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/dashboard", "/"})
PUBLIC_PREFIXES = ("/static/",)


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)


def _error(status: int, message: str, detail: Any = None, headers: dict[str, str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"error": message}
    if detail is not None:
        body["detail"] = detail
    return JSONResponse(body, status_code=status, headers=headers)


def _route_label(path: str) -> str:
    if path.startswith("/v1/runs/"):
        tail = path.rsplit("/", 1)[-1]
        if tail in ("steps", "signals"):
            return f"/v1/runs/{{run_id}}/{tail}"
        return "/v1/runs/{run_id}"
    if path.startswith("/static/"):
        return "/static"
    return path if len(path) < 64 else "other"


class Gate:
    """Pure-ASGI front door: bearer-token check, body-size limit, request metrics.

    The body is read here (at most ``max_body`` bytes) and replayed to the app, so an oversized body
    is refused with 413 before any parsing, whether or not it declared a Content-Length.
    """

    def __init__(self, app: Any, *, token: str | None, max_body: int, metrics: Metrics,
                 fast: dict[str, Callable[[bytes], Awaitable[Response]]] | None = None) -> None:
        self.app = app
        self.fast = fast or {}
        self.expected = ("Bearer " + token).encode() if token else None
        self.max_body = max_body
        self.metrics = metrics

    async def _send_error(self, send: Callable, status: int, message: str, extra: list | None = None) -> None:
        body = dumps({"error": message})
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        path = scope["path"]
        status_box = [500]

        async def send_wrapped(message: dict) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
            await send(message)

        try:
            public = path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)
            headers = scope["headers"]
            if not public and self.expected is not None:
                auth = b""
                for k, v in headers:
                    if k == b"authorization":
                        auth = v
                        break
                if not hmac.compare_digest(auth, self.expected):
                    msg = "missing bearer token" if not auth else "invalid bearer token"
                    await self._send_error(send_wrapped, 401, msg, [(b"www-authenticate", b'Bearer realm="agentguard"')])
                    return
            if scope["method"] in ("POST", "PUT", "PATCH"):
                declared = None
                for k, v in headers:
                    if k == b"content-length":
                        try:
                            declared = int(v)
                        except ValueError:
                            await self._send_error(send_wrapped, 400, "invalid Content-Length header")
                            return
                        break
                if declared is not None and declared > self.max_body:
                    await self._send_error(send_wrapped, 413,
                                           f"request body of {declared} bytes exceeds the limit of {self.max_body} bytes")
                    return
                chunks: list[bytes] = []
                size = 0
                while True:
                    msg = await receive()
                    if msg["type"] == "http.disconnect":
                        return
                    chunk = msg.get("body", b"")
                    size += len(chunk)
                    if size > self.max_body:
                        await self._send_error(send_wrapped, 413,
                                               f"request body exceeds the limit of {self.max_body} bytes")
                        return
                    chunks.append(chunk)
                    if not msg.get("more_body", False):
                        break
                body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
                handler = self.fast.get(path) if scope["method"] == "POST" else None
                if handler is not None:  # lean hot path: same handler as the routed endpoint
                    try:
                        resp = await handler(body)
                    except Exception as exc:  # never a verdict without its audit record
                        resp = _error(500, f"internal error, no verdict given: {type(exc).__name__}")
                    await resp(scope, receive, send_wrapped)
                    return
                sent = False

                async def replay() -> dict:
                    nonlocal sent
                    if not sent:
                        sent = True
                        return {"type": "http.request", "body": body, "more_body": False}
                    return await receive()

                await self.app(scope, replay, send_wrapped)
            else:
                await self.app(scope, receive, send_wrapped)
        finally:
            self.metrics.request(_route_label(path), status_box[0], time.perf_counter() - t0)


def _body(model: type) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}}


def _err_responses() -> dict[int | str, dict[str, Any]]:
    return {c: {"model": ErrorOut, "description": d} for c, d in (
        (400, "malformed JSON or bad input"), (401, "missing or invalid bearer token"),
        (413, "body too large"), (422, "body fails validation"), (503, "audit store unavailable: no verdict"))}


def create_app(settings: ServerSettings | None = None, guards: ServiceGuards | None = None,
               *, store: AuditStore | None = None) -> FastAPI:
    """Build the application. ``guards`` defaults to :func:`default_guards`; ``store`` to the audit
    store at ``settings.database_url`` (opened, and migrated, here)."""
    settings = settings or ServerSettings()
    source = GuardSource(settings, guards)
    own_store = store is None
    store = store or AuditStore(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    traces = TraceStore(settings.traces_dir)
    runs = RunRegistry(settings.run_ttl_s)
    metrics = Metrics()
    metrics.gauges["agentguard_active_runs"] = lambda: len(runs)
    metrics.gauges["agentguard_runs_expired_total"] = lambda: runs.expired_total
    metrics.gauges["agentguard_audit_batches_total"] = lambda: store.stats["batches"]
    metrics.gauges["agentguard_audit_records_total"] = lambda: store.stats["records"]
    metrics.gauges["agentguard_guard_reloads_total"] = lambda: source.reloads

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        yield
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
    app.state.guard_source = source
    app.state.store = store
    app.state.traces = traces
    app.state.runs = runs
    app.state.metrics = metrics

    # -- errors ---------------------------------------------------------------------------------
    def _validation_response(errors: list[dict[str, Any]]) -> JSONResponse:
        if any(e.get("type") == "json_invalid" for e in errors):
            e = next(e for e in errors if e.get("type") == "json_invalid")
            ctx = e.get("ctx", {}).get("error", "")
            return _error(400, f"malformed JSON body: {ctx or e.get('msg', '')}".rstrip(": "))
        parts = []
        clean = []
        for e in errors[:20]:
            loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
            parts.append(f"{loc}: {e.get('msg', 'invalid')}")
            clean.append({"loc": [str(x) for x in e.get("loc", ())], "msg": e.get("msg"), "type": e.get("type")})
        more = f" (+{len(errors) - 20} more)" if len(errors) > 20 else ""
        return _error(422, "invalid request: " + "; ".join(parts) + more, clean)

    @app.exception_handler(RequestValidationError)
    async def _on_validation(_req: Request, exc: RequestValidationError) -> Response:
        return _validation_response(list(exc.errors()))

    @app.exception_handler(RunExpired)
    async def _on_expired(_req: Request, exc: RunExpired) -> Response:
        return _error(410, str(exc))

    @app.exception_handler(AgentGuardError)
    async def _on_agentguard(_req: Request, exc: AgentGuardError) -> Response:
        return _error(400 if isinstance(exc, InputError) else 500, str(exc))

    def parse(model: type, raw: bytes) -> Any:
        if not raw:
            raise RequestValidationError([{"type": "json_invalid", "loc": ("body",), "msg": "empty body",
                                           "ctx": {"error": "empty body"}}])
        try:
            return model.model_validate_json(raw)
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False, include_input=False)) from None

    async def decide(guard: Any, context: Context, proposal: Any) -> Verdict:
        try:
            v = await guard.acheck(context, proposal)
            if not isinstance(v, Verdict):
                raise AgentGuardError(f"guard returned {type(v).__name__}, not a Verdict")
            return v if v.guard else v.with_guard(getattr(guard, "name", "guard"))
        except Exception as exc:  # fail closed, like GuardStack
            return fail_closed(getattr(guard, "name", "guard"), exc)

    async def audit_and_answer(run_id: str, kind: str, digest_input: Any, v: Verdict,
                               step: dict[str, Any] | None = None,
                               extra_numbers: dict[str, float] | None = None) -> tuple[Response | None, str]:
        numbers: dict[str, float] = {}
        for k, x in v.numbers.items():
            try:
                numbers[str(k)] = float(x)
            except (TypeError, ValueError):
                continue
        stored = {**numbers, **extra_numbers} if extra_numbers else numbers
        rec = DecisionRecord(DecisionRecord.new_id(), time.time(), run_id, kind, v.guard or "?",
                             input_digest(digest_input), v.decision.name, v.reason, stored, source.version)
        try:
            await store.arecord(rec, step)
        except Exception as exc:
            from sqlalchemy.exc import IntegrityError

            if isinstance(exc, IntegrityError) and step is not None:
                return _error(409, f"step {step['idx']} of run {run_id} was recorded concurrently; retry"), ""
            return _error(503, f"audit store unavailable, no verdict given: {type(exc).__name__}"), ""
        metrics.decision(kind, v.decision.name)
        body: dict[str, Any] = {
            "decision_id": rec.decision_id, "run_id": run_id, "decision": v.decision.name,
            "allowed": v.decision is Decision.ALLOW, "reason": v.reason, "guard": rec.guard, "numbers": numbers,
        }
        if v.action is not None:
            body["action"] = v.action.to_dict() if hasattr(v.action, "to_dict") else v.action
        if step is not None:
            body["step"] = step["idx"]
        return JSONResponse(body), rec.decision_id

    # -- public ---------------------------------------------------------------------------------
    @app.get("/health", tags=["service"], summary="Liveness and readiness (no token needed)")
    async def health() -> Response:
        """200 when the audit store answers and its writer runs; 503 otherwise (take the replica out)."""
        ok, why = await run_in_threadpool(store.healthy)
        return JSONResponse({"status": "ok" if ok else "unavailable", "audit": store.dialect,
                             "audit_error": why, "version": app.version, "guards_version": source.version,
                             "guards_error": source.last_error}, status_code=200 if ok else 503)

    @app.get("/", include_in_schema=False)
    async def root() -> Response:
        return RedirectResponse("/dashboard")

    @app.get("/dashboard", include_in_schema=False)
    async def dashboard() -> Response:
        return FileResponse(STATIC_DIR / "dashboard.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    # -- decisions ------------------------------------------------------------------------------
    @app.post("/v1/check", tags=["guards"], response_model=VerdictOut, responses=_err_responses(),
              summary="Check one tool call", openapi_extra=_body(CheckRequest))
    async def check(request: Request) -> Response:
        return await check_raw(await request.body())

    async def check_raw(raw: bytes) -> Response:
        """The hot path (also reached straight from the gate, skipping routing): parse, decide, audit."""
        try:
            req: CheckRequest = parse(CheckRequest, raw)
        except RequestValidationError as exc:
            return _validation_response(list(exc.errors()))
        tc = req.tool_call
        call = ToolCall(tc.name, tc.arguments, tc.call_id)
        ctx = Context(run_id=req.run_id, trace=Trace(run_id=req.run_id), metadata=req.metadata)
        v = await decide(source.get().tool, ctx, call)
        resp, _ = await audit_and_answer(req.run_id, "check", {"run_id": req.run_id, "tool_call": call.to_dict()}, v)
        return resp

    def _to_step(s: StepIn) -> Step:
        action: Any = s.action
        if action is not None and not isinstance(action, str):
            action = ToolCall(action.name, action.arguments, action.call_id)
        return Step(state=s.state, action=action, observation=s.observation, output=s.output,
                    signals=dict(s.signals), time=s.time if s.time is not None else time.time())

    def _rebuild(run_id: str) -> tuple[Trace, float] | None:
        rows = store.run_steps(run_id)
        if not rows:
            return None
        trace = Trace(run_id=run_id)
        for r in rows:
            trace.append(_to_step(StepIn.model_validate(r["payload"])))
        return trace, float(rows[-1]["ts"])

    def run_guard(st: Any, kind: str, base: Any, replay: Callable[[Any, Any], None]) -> Any:
        """The run's own copy of a stateful guard (e.g. a latching monitor), brought up to date by
        replaying the run's earlier inputs; stateless guards are shared. A hot-reloaded guard gets a
        fresh copy, replayed the same way."""
        key = f"{kind}_guard"
        held = st.extra.get(key)
        if held is not None and held[0] is base:
            return held[1]
        g = fresh_copy(base)
        if g is not base:
            replay(st, g)
        st.extra[key] = (base, g)
        return g

    def _replay_steps(st: Any, g: Any) -> None:
        prefix = Trace(run_id=st.run_id)
        for s in st.trace.steps:
            try:
                g.check(Context(run_id=st.run_id, trace=prefix, state=s.state), s)
            except Exception:  # noqa: BLE001 - it failed (closed) when first checked; replay only rebuilds state
                pass
            prefix.append(s)

    def _replay_signals(st: Any, g: Any) -> None:
        prefix = Trace(run_id=st.run_id)
        for s in st.extra.get("signal_trace", Trace()).steps:
            try:
                g.check(Context(run_id=st.run_id, trace=prefix), s)
            except Exception:  # noqa: BLE001 - it failed (closed) when first checked; replay only rebuilds state
                pass
            prefix.append(s)

    def _signal_trace(run_id: str) -> Trace:
        """The signals a run streamed so far, from the audit store (``signal:<name>`` numbers)."""
        t = Trace(run_id=run_id)
        for d in store.decisions(run_id=run_id, kind="signal", limit=1_000_000):
            sig = {k[7:]: float(x) for k, x in d["numbers"].items() if k.startswith("signal:")}
            if sig:
                t.append(Step(signals=sig, time=d["ts"]))
        return t

    async def run_state(run_id: str):
        if not valid_run_id(run_id):
            raise InputError(f"invalid run id {run_id[:40]!r}: use 1-128 characters from A-Z a-z 0-9 _ . : -")
        st = runs.peek(run_id)
        n, _last = await run_in_threadpool(store.run_step_count, run_id)
        if st is not None and len(st.trace) != n:
            runs.forget(run_id)  # another worker/replica appended steps: rebuild from the store
        if st is None or len(st.trace) != n:
            if n:
                rebuilt = await run_in_threadpool(_rebuild, run_id)
                return runs.get(run_id, rebuild=lambda _r: rebuilt)
        return runs.get(run_id)

    @app.post("/v1/runs/{run_id}/steps", tags=["guards"], response_model=VerdictOut, responses=_err_responses(),
              summary="Feed one step of a run; get the proactive verdict", openapi_extra=_body(StepRequest))
    async def step(run_id: str, request: Request) -> Response:
        req: StepRequest = parse(StepRequest, await request.body())
        st = await run_state(run_id)
        lock = st.extra.setdefault("alock", asyncio.Lock())
        async with lock:
            s = _to_step(req)
            idx = len(st.trace)
            guard = run_guard(st, "step", source.get().step, _replay_steps)
            v = await decide(guard, Context(run_id=run_id, trace=st.trace, state=s.state), s)
            payload = req.model_dump(mode="json")
            payload["time"] = s.time
            resp, did = await audit_and_answer(run_id, "step", {"run_id": run_id, "idx": idx, "step": payload}, v,
                                               step={"idx": idx, "payload": payload})
            if did:
                st.trace.append(s)
                st.risk.append({"step": idx, "decision": v.decision.name, **{
                    k: float(x) for k, x in v.numbers.items() if isinstance(x, (int, float))}})
            return resp

    @app.post("/v1/runs/{run_id}/signals", tags=["guards"], response_model=VerdictOut,
              responses=_err_responses(), summary="Stream signal values to the monitor",
              openapi_extra=_body(SignalRequest))
    async def signals(run_id: str, request: Request) -> Response:
        req: SignalRequest = parse(SignalRequest, await request.body())
        if not valid_run_id(run_id):
            raise InputError(f"invalid run id {run_id[:40]!r}: use 1-128 characters from A-Z a-z 0-9 _ . : -")
        st = runs.get(run_id)
        lock = st.extra.setdefault("slock", asyncio.Lock())
        async with lock:
            n = await run_in_threadpool(store.count_decisions, run_id, "signal")
            if "signal_trace" not in st.extra or len(st.extra["signal_trace"].steps) != n:
                # first signal in this process, or another worker/replica streamed some: rebuild
                st.extra["signal_trace"] = await run_in_threadpool(_signal_trace, run_id)
                st.extra.pop("signal_guard", None)
            strace: Trace = st.extra["signal_trace"]
            s = Step(signals=dict(req.signals), time=req.time if req.time is not None else time.time())
            guard = run_guard(st, "signal", source.get().signal, _replay_signals)
            v = await decide(guard, Context(run_id=run_id, trace=strace), s)
            extra = {f"signal:{k}": float(x) for k, x in req.signals.items()}
            resp, did = await audit_and_answer(run_id, "signal", {"run_id": run_id, "t": len(strace.steps),
                                                                  "signals": req.signals}, v, extra_numbers=extra)
            if did:
                strace.append(s)
            return resp

    @app.post("/v1/traces", tags=["learning"], response_model=IngestResponse, responses=_err_responses(),
              summary="Ingest finished traces (Parquet, for learning)", openapi_extra=_body(IngestRequest))
    async def ingest(request: Request) -> Response:
        req: IngestRequest = parse(IngestRequest, await request.body())
        tr = []
        for t in req.traces:
            trace = Trace([_to_step(s) for s in t.steps], dict(t.labels))
            if t.run_id:
                trace.run_id = t.run_id
            tr.append(trace)
        name, rows = await run_in_threadpool(traces.add, tr)
        return JSONResponse({"stored_runs": len(tr), "rows": rows, "file": name})

    # -- reading --------------------------------------------------------------------------------
    @app.get("/v1/runs", tags=["dashboard"], summary="Recent runs")
    def list_runs(limit: int = 50) -> Response:
        limit = max(1, min(int(limit), 500))
        out = store.recent_runs(limit)
        for r in out:
            st = runs.peek(r["run_id"])
            r["active"] = st is not None
            r["steps"] = len(st.trace) if st is not None else None
        return JSONResponse({"runs": out, "ttl_s": settings.run_ttl_s})

    @app.get("/v1/runs/{run_id}", tags=["dashboard"], summary="One run: decisions, risk and signal series")
    def get_run(run_id: str, limit: int = 2000) -> Response:
        if not valid_run_id(run_id):
            return _error(400, "invalid run id")
        ds = store.decisions(run_id=run_id, limit=max(1, min(int(limit), 10_000)))
        if not ds:
            return _error(404, f"no decisions for run {run_id}")
        risk, sig = [], []
        n_step = 0
        for d in ds:
            nums = d["numbers"]
            if d["kind"] == "step":
                risk.append({"step": n_step, "ts": d["ts"], "decision": d["decision"],
                             "risk": nums.get("probability", nums.get("risk")), "threshold": nums.get("threshold")})
                n_step += 1
            elif d["kind"] == "signal":
                val = nums.get("score", nums.get("value"))
                if val is None:
                    val = next((x for k, x in nums.items() if k.startswith("signal:")), None)
                sig.append({"t": len(sig), "ts": d["ts"], "decision": d["decision"],
                            "value": val, "threshold": nums.get("threshold")})
        return JSONResponse({"run_id": run_id, "decisions": ds, "risk": risk, "signals": sig})

    @app.get("/v1/decisions", tags=["dashboard"], summary="Recent decisions with reasons")
    def list_decisions(limit: int = 100, run_id: str | None = None, kind: str | None = None) -> Response:
        return JSONResponse({"decisions": store.decisions(run_id=run_id, kind=kind,
                                                          limit=max(1, min(int(limit), 5000)))})

    @app.get("/v1/model", tags=["dashboard"], summary="The DTMC the proactive guard uses")
    def model() -> Response:
        return JSONResponse({"model": dtmc_json(source.get().model), "guards_version": source.version})

    @app.get("/v1/calibration", tags=["dashboard"], summary="Calibration curves of the monitors")
    def calibration() -> Response:
        g = source.get()
        return JSONResponse({"curves": g.calibration, "guards": {
            "tool": repr(g.tool), "step": repr(g.step), "signal": repr(g.signal)},
            "description": g.description, "guards_version": source.version})

    @app.get("/v1/traces/summary", tags=["learning"], summary="How many traces are stored")
    def traces_summary() -> Response:
        return JSONResponse(traces.summary())

    @app.get("/metrics", tags=["service"], summary="Prometheus metrics (text format)",
             response_class=PlainTextResponse)
    async def prom() -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    # -- OpenAPI: register the body models the lean endpoints parse themselves -------------------
    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        from fastapi.openapi.utils import get_openapi
        from pydantic.json_schema import models_json_schema

        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        _, defs = models_json_schema([(m, "validation") for m in (CheckRequest, StepRequest, SignalRequest,
                                                                  IngestRequest)],
                                     ref_template="#/components/schemas/{model}")
        comps = schema.setdefault("components", {})
        comps.setdefault("schemas", {}).update(defs.get("$defs", {}))
        comps["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        schema["security"] = [{"bearer": []}]
        schema["paths"]["/health"]["get"]["security"] = []
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]

    gated = Gate(app, token=settings.token, max_body=settings.max_body_bytes, metrics=metrics,
                 fast={"/v1/check": check_raw})
    # Expose the FastAPI object for tests/introspection while serving through the gate.
    gated.fastapi = app  # type: ignore[attr-defined]
    gated.state = app.state  # type: ignore[attr-defined]
    return gated  # type: ignore[return-value]


def dtmc_json(m: Any) -> dict[str, Any] | None:
    """A DTMC as plain JSON for the dashboard: states, edges with probabilities, unsafe states."""
    if m is None:
        return None
    import numpy as np

    csr = m.matrix.tocsr()
    n = m.n
    names = list(m.state_names) if m.state_names else [str(i) for i in range(n)]
    edges = []
    for i in range(n):
        for k in range(csr.indptr[i], csr.indptr[i + 1]):
            edges.append([i, int(csr.indices[k]), float(csr.data[k])])
    unsafe = []
    for lab in ("unsafe", "bad", "violation"):
        if lab in m.labels:
            unsafe = [int(i) for i in np.flatnonzero(m.labels[lab])]
            break
    return {"n": n, "states": names, "initial": int(m.initial), "edges": edges, "unsafe": unsafe,
            "labels": {k: [int(i) for i in np.flatnonzero(v)] for k, v in m.labels.items()}}


def app_from_env() -> Any:
    """uvicorn factory for worker processes: settings come as JSON in ``AGENTGUARD_SERVER_SETTINGS``."""
    import os

    from .settings import SETTINGS_ENV

    raw = os.environ.get(SETTINGS_ENV)
    if not raw:
        raise AgentGuardError(f"{SETTINGS_ENV} is not set")
    return create_app(ServerSettings.from_json(raw))  # guards from the settings' files: versioned, reloaded


def write_openapi(path: str = "docs/server_openapi.json") -> None:
    """Write the service's OpenAPI schema (what ``GET /openapi.json`` serves) to ``path``."""
    import json
    import tempfile

    app = create_app(ServerSettings(token="openapi-only", data_dir=tempfile.mkdtemp()))
    spec = app.fastapi.openapi()  # type: ignore[attr-defined]
    Path(path).write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n")
