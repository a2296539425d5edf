"""Learning endpoints: ``POST /v1/traces`` (ingest finished traces to Parquet) and ``GET /v1/traces/summary``.

A trace names its run; a run id is stored once (:class:`..traces.TraceStore`: the first upload claims it). Under
``run_binding = "identity"`` a batch naming a run that another identity started (its first decided input in the
audit store) is refused whole (403, the run binding's answer: :mod:`..binding`). Before (session 21 red team) any
agent credential could upload a made-up trace under another identity's live run id, claiming it, so that
identity's true trace of that run, an unsafe one included, was refused (409) and never learned from. A run id the
audit store does not know yet is claimed per identity (session 23, :class:`..traces.TraceStore` ``namespaced``):
the answer's ``run_ids`` are the ids the traces were stored under (``<run id>@<16 hex>`` when another identity had
stored that run id first)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ...core.types import Trace
from ..gate import JSONResponse, error, principal_of
from ..models import IngestRequest, IngestResponse
from ..service import Service, to_step
from ..traces import TraceConflict, TraceQuota
from .common import body, err_responses

__all__ = ["register"]


def register(app: FastAPI, svc: Service) -> None:
    traces = svc.traces

    def _batch(raw: bytes) -> tuple[IngestRequest, list[Trace]]:
        req: IngestRequest = svc.parse(IngestRequest, raw)
        tr = []
        for t in req.traces:
            trace = Trace([to_step(s) for s in t.steps], dict(t.labels))
            if t.run_id:
                trace.run_id = t.run_id
            tr.append(trace)
        return req, tr

    @app.post("/v1/traces", tags=["learning"], response_model=IngestResponse,
              responses={**err_responses(), 409: {"description": "a run id already stored, or repeated in the batch"},
                         429: {"description": "the identity's trace quota is used up (trace_quota_bytes)"}},
              summary="Ingest finished traces (Parquet, for learning)", openapi_extra=body(IngestRequest))
    async def ingest(request: Request) -> Response:
        # parsed and converted in a worker thread: a 1 MB batch (330,000 steps) takes seconds of CPU, which on the
        # event loop stalled every decision of the process meanwhile (session 21: a check waited 1.2 s)
        req, tr = await run_in_threadpool(_batch, await request.body())
        who = principal_of(request.scope).identity
        for t, trace in zip(req.traces, tr):  # a run another identity started is not its trace to give (run_binding)
            if not t.run_id:
                continue
            run_id = svc.binding.scope(t.run_id, who)  # "default": the caller's own default run
            if isinstance(run_id, Response):
                return run_id
            trace.run_id = run_id
            if (refused := await svc.binding.refused(run_id, who)) is not None:
                return refused
        try:
            name, rows = await run_in_threadpool(traces.add, tr, who)
        except TraceQuota as exc:  # the identity's trace quota (trace_quota_bytes): nothing of the batch kept
            return error(exc.status, str(exc))
        except TraceConflict as exc:
            return error(409, str(exc))
        return JSONResponse({"stored_runs": len(tr), "rows": rows, "file": name, "run_ids": [t.run_id for t in tr]})

    @app.get("/v1/traces/summary", tags=["learning"], summary="How many traces are stored")
    def traces_summary() -> Response:
        return JSONResponse(traces.summary())
