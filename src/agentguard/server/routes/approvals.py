"""``POST /v1/approvals``: a human's answer to an ESCALATE of ``/v1/check``, written to the audit store.

Body (:class:`~agentguard.server.models.ApprovalRequest`): the escalated decision's ``decision_id``, its
``run_id``, exactly the ``tool_call`` it checked, ``approved`` and ``approver`` (who answered). The
escalated decision must be a ``check`` of that run answered ESCALATE (else 409; an unknown id is 404),
and the tool call must be the one checked: the same input digest over run id, name, arguments and call
id (else 409), so an approval cannot be moved to another call. The answer is recorded as a decision of
kind ``approval`` (guard ``human:<approver>``, the reason naming the approver and the escalated
decision) whose id is derived from the escalated one: each escalation is answered once, and a second
answer (approve after reject, or the same approval replayed) is 409. The response is a verdict like
``/v1/check``'s: ALLOW when approved (the caller runs exactly that call), REJECT otherwise.
"""

from __future__ import annotations

import hashlib
import time

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ...core.audit import AuditRecord
from ...core.types import ToolCall
from ..audit import input_digest
from ..gate import JSONResponse, error
from ..models import ApprovalRequest, VerdictOut
from ..service import Service
from .common import body, err_responses

__all__ = ["approval_id", "register"]


def approval_id(decision_id: str) -> str:
    """The id of the approval record answering ``decision_id`` (one per escalation: the store's unique key)."""
    return "ap" + hashlib.sha256(("approval\x00" + decision_id).encode()).hexdigest()[:30]


def register(app: FastAPI, svc: Service) -> None:
    """Add ``POST /v1/approvals``."""

    @app.post("/v1/approvals", tags=["guards"], response_model=VerdictOut,
              responses={**err_responses(), 404: {"description": "no such decision"},
                         409: {"description": "not an escalation of this call, or already answered"}},
              summary="Answer an ESCALATE (approve or refuse exactly that call)", openapi_extra=body(ApprovalRequest))
    async def approve(request: Request) -> Response:
        req: ApprovalRequest = svc.parse(ApprovalRequest, await request.body())
        row = await run_in_threadpool(svc.store.decision, req.decision_id)
        if row is None:
            return error(404, f"no decision {req.decision_id!r}")
        tc = req.tool_call
        call = ToolCall(tc.name, tc.arguments, tc.call_id).to_dict()  # as /v1/check digested it
        digest = input_digest({"run_id": req.run_id, "tool_call": call})
        if row["kind"] != "check" or row["decision"] != "ESCALATE" or row["run_id"] != req.run_id:
            return error(409, f"decision {req.decision_id} is not an ESCALATE of a tool call in run {req.run_id}")
        if row["input_digest"] != digest:
            return error(409, f"decision {req.decision_id} escalated another tool call than {req.tool_call.name}")
        decided = "ALLOW" if req.approved else "REJECT"
        reason = (f"{'approved' if req.approved else 'refused'} by {req.approver} "
                  f"(escalation {req.decision_id}: {row['reason']})")
        rec = AuditRecord(time=time.time(), run_id=req.run_id, decision=decided, reason=reason,
                          guard=f"human:{req.approver}", numbers={}, decision_id=approval_id(req.decision_id),
                          kind="approval", input_digest=digest, guard_version=svc.source.version)
        try:
            await svc.store.arecord(rec)
        except Exception as exc:
            from sqlalchemy.exc import IntegrityError

            if isinstance(exc, IntegrityError):
                return error(409, f"decision {req.decision_id} was already answered")
            return error(503, f"audit store unavailable, no verdict given: {type(exc).__name__}")
        svc.metrics.decision("approval", decided)

        return JSONResponse({"decision_id": rec.decision_id, "run_id": req.run_id, "decision": decided,
                             "allowed": req.approved, "reason": reason, "guard": rec.guard, "numbers": {}})
