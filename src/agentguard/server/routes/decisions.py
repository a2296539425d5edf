"""Decision endpoints: ``POST /v1/check``, ``POST /v1/runs/{run_id}/steps``, ``POST /v1/runs/{run_id}/signals``.

Each parses its body, asks the guard in force (shared across runs; the run id is in the context),
writes the audit record and only then answers (:meth:`.service.Service.audit_and_answer`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ...core.types import Context, Step, ToolCall, Trace
from ..models import CheckRequest, SignalRequest, StepRequest, VerdictOut
from ..service import Service, check_run_id, to_step, validation_response
from .common import body, err_responses

__all__ = ["register"]


def register(app: FastAPI, svc: Service) -> Callable[[bytes], Awaitable[Response]]:
    """Add the decision routes; returns the ``/v1/check`` handler for the gate's lean path."""

    @app.post("/v1/check", tags=["guards"], response_model=VerdictOut, responses=err_responses(),
              summary="Check one tool call", openapi_extra=body(CheckRequest))
    async def check(request: Request) -> Response:
        return await check_raw(await request.body())

    async def check_raw(raw: bytes) -> Response:
        """The hot path (also reached straight from the gate, skipping routing): parse, decide, audit."""
        try:
            req: CheckRequest = svc.parse(CheckRequest, raw)
        except RequestValidationError as exc:
            return validation_response(list(exc.errors()))
        tc = req.tool_call
        call = ToolCall(tc.name, tc.arguments, tc.call_id)
        ctx = Context(run_id=req.run_id, trace=Trace(run_id=req.run_id), metadata=req.metadata)
        v = await svc.decide(svc.source.get().tool, ctx, call)
        resp, _ = await svc.audit_and_answer(req.run_id, "check",
                                             {"run_id": req.run_id, "tool_call": call.to_dict()}, v)
        return resp

    @app.post("/v1/runs/{run_id}/steps", tags=["guards"], response_model=VerdictOut, responses=err_responses(),
              summary="Feed one step of a run; get the proactive verdict", openapi_extra=body(StepRequest))
    async def step(run_id: str, request: Request) -> Response:
        req: StepRequest = svc.parse(StepRequest, await request.body())
        st = await svc.run_state(run_id)
        lock = st.extra.setdefault("alock", asyncio.Lock())
        async with lock:
            s = to_step(req)
            idx = len(st.trace)
            guard = svc.run_guard(st, "step", svc.source.get().step, svc.replay_steps)
            v = await svc.decide(guard, Context(run_id=run_id, trace=st.trace, state=s.state), s)
            payload = req.model_dump(mode="json")
            payload["time"] = s.time
            resp, did = await svc.audit_and_answer(run_id, "step", {"run_id": run_id, "idx": idx, "step": payload},
                                                   v, step={"idx": idx, "payload": payload})
            if did:
                st.trace.append(s)
                st.risk.append({"step": idx, "decision": v.decision.name, **{
                    k: float(x) for k, x in v.numbers.items() if isinstance(x, (int, float))}})
            return resp

    @app.post("/v1/runs/{run_id}/signals", tags=["guards"], response_model=VerdictOut,
              responses=err_responses(), summary="Stream signal values to the monitor",
              openapi_extra=body(SignalRequest))
    async def signals(run_id: str, request: Request) -> Response:
        req: SignalRequest = svc.parse(SignalRequest, await request.body())
        check_run_id(run_id)
        st = svc.runs.get(run_id)
        lock = st.extra.setdefault("slock", asyncio.Lock())
        async with lock:
            n = await run_in_threadpool(svc.store.count_decisions, run_id, "signal")
            if "signal_trace" not in st.extra or len(st.extra["signal_trace"].steps) != n:
                # first signal in this process, or another worker/replica streamed some: rebuild
                st.extra["signal_trace"] = await run_in_threadpool(svc.signal_trace, run_id)
                svc.drop_guard(st, "signal")
            strace: Trace = st.extra["signal_trace"]
            s = Step(signals=dict(req.signals), time=req.time if req.time is not None else time.time())
            guard = svc.run_guard(st, "signal", svc.source.get().signal, svc.replay_signals)
            v = await svc.decide(guard, Context(run_id=run_id, trace=strace), s)
            extra = {f"signal:{k}": float(x) for k, x in req.signals.items()}
            resp, did = await svc.audit_and_answer(run_id, "signal", {"run_id": run_id, "t": len(strace.steps),
                                                                      "signals": req.signals}, v, extra_numbers=extra)
            if did:
                strace.append(s)
            return resp

    return check_raw
