"""Decision endpoints: ``POST /v1/check``, ``POST /v1/runs/{run_id}/steps``, ``POST /v1/runs/{run_id}/signals``.

Each parses its body and hands the input to :meth:`.service.Service.decide`: under the run's lock, the
run's state is brought up to date with the store, the core Pipeline of that guard kind decides
(fail-closed, enforced, audited before the answer) and the answer says what the client must do. A
request sent with an ``Idempotency-Key`` header is answered from the store when it was already decided
(:mod:`..idempotency`); a malformed key is 400. Under ``run_binding = "identity"`` the run ``default`` (and a
check without ``run_id``) is the caller's own default run, answered under its scoped id (:meth:`..binding.RunBinding.scope`).
Every decision, a step's and a signal's too, is taken with the server's facts of the caller (:mod:`..facts`: its
``principal`` and its credential's ``facts``); a step or signal claims none of its own.
"""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.responses import Response

from ...core.types import Step, ToolCall
from ..checkparse import read_check
from ..credentials import Principal
from ..gate import error, principal_of, validation_response
from ..idempotency import IdemKey, IdempotencyError, caller_facts, idem_key, key_from_headers
from ..models import CheckRequest, SignalRequest, StepRequest, VerdictOut
from ..service import Service, to_step
from .common import body, err_responses

__all__ = ["register"]


def keyed(headers: Any, principal: Principal, path: str, raw: bytes) -> IdemKey | None:
    """The request's :class:`~..idempotency.IdemKey` (None without an ``Idempotency-Key`` header), its digest
    covering the caller's credential (roles, facts: :func:`~..idempotency.caller_facts`); raises
    :class:`~..idempotency.IdempotencyError` for a malformed one."""
    key = key_from_headers(headers)
    return None if key is None else idem_key(key, principal.identity, path, raw,
                                             caller_facts(principal.roles, principal.facts))


def register(app: FastAPI, svc: Service) -> Callable[[bytes, Principal, Any], Awaitable[Response]]:
    """Add the decision routes; returns the ``/v1/check`` handler for the gate's lean path."""

    async def read(request: Request, model: Any) -> tuple[Any, Principal, IdemKey | None] | Response:
        """The parsed body (a malformed one raises the 422 validation error), the caller and the request's
        idempotency key; a 400 response for a malformed key."""
        raw = await request.body()
        req = svc.parse(model, raw)
        who = principal_of(request.scope)
        try:
            return req, who, keyed(request.scope.get("headers", ()), who, request.url.path, raw)
        except IdempotencyError as exc:
            return error(400, str(exc))

    @app.post("/v1/check", tags=["guards"], response_model=VerdictOut, responses=err_responses(),
              summary="Check one tool call", openapi_extra=body(CheckRequest))
    async def check(request: Request) -> Response:
        return await check_raw(await request.body(), principal_of(request.scope), request.scope.get("headers", ()))

    async def check_raw(raw: bytes, principal: Principal, headers: Any = ()) -> Response:
        """The hot path (also reached straight from the gate, skipping routing): parse, decide, audit."""
        got = read_check(raw, svc.settings.max_json_values)  # None: the full reader below (and its error)
        try:
            if got is None:
                req: CheckRequest = svc.parse(CheckRequest, raw)
                tc = req.tool_call
                got = (req.run_id, tc.name, tc.arguments, tc.call_id, req.metadata)
            idem = keyed(headers, principal, "/v1/check", raw) if headers else None
        except RequestValidationError as exc:
            return validation_response(list(exc.errors()))
        except IdempotencyError as exc:
            return error(400, str(exc))
        asked, name, arguments, call_id, metadata = got
        run_id = svc.binding.scope(asked, principal.identity)  # "default": the caller's own (..binding)
        if isinstance(run_id, Response):
            return run_id
        call = ToolCall(name, arguments, call_id)
        as_dict = call.to_dict()  # read only from here on: stored with the input and digested
        return await svc.decide("check", run_id, call, {"tool_call": as_dict, "metadata": metadata},
                                {"run_id": run_id, "tool_call": as_dict}, claims=metadata,
                                principal=principal.identity, idem=idem, caller=principal)

    @app.post("/v1/runs/{run_id}/steps", tags=["guards"], response_model=VerdictOut, responses=err_responses(),
              summary="Feed one step of a run; get the proactive verdict", openapi_extra=body(StepRequest))
    async def step(run_id: str, request: Request) -> Response:
        got = await read(request, StepRequest)
        if isinstance(got, Response):
            return got
        req, who, idem = got
        scoped = svc.binding.scope(run_id, who.identity)  # "default": the caller's own (..binding)
        if isinstance(scoped, Response):
            return scoped
        run_id = scoped
        s = to_step(req)
        payload = req.model_dump(mode="json")
        payload["time"] = s.time
        return await svc.decide("step", run_id, s, {"step": payload}, {"run_id": run_id, "step": payload},
                                step=payload, claims={}, principal=who.identity, idem=idem, caller=who)

    @app.post("/v1/runs/{run_id}/signals", tags=["guards"], response_model=VerdictOut,
              responses=err_responses(), summary="Stream signal values to the monitor",
              openapi_extra=body(SignalRequest))
    async def signals(run_id: str, request: Request) -> Response:
        got = await read(request, SignalRequest)
        if isinstance(got, Response):
            return got
        req, who, idem = got
        scoped = svc.binding.scope(run_id, who.identity)  # "default": the caller's own (..binding)
        if isinstance(scoped, Response):
            return scoped
        run_id = scoped
        t = req.time if req.time is not None else time.time()
        s = Step(signals=dict(req.signals), time=t)
        extra = {f"signal:{k}": float(x) for k, x in req.signals.items()}
        return await svc.decide("signal", run_id, s, {"signals": dict(req.signals), "time": t},
                                {"run_id": run_id, "t": t, "signals": req.signals}, extra_numbers=extra,
                                claims={}, principal=who.identity, idem=idem, caller=who)

    return check_raw
