"""``POST /v1/approvals``: a human's answer to an ESCALATE of ``/v1/check``, written to the audit store.

Who answered is the caller's credential (:mod:`..credentials`): it must hold the ``approver`` role (403
otherwise; the gate checks it) and its identity is what the audit log records (``human:<identity>``);
the body's ``approver`` field, if sent, is ignored. An approver may not answer an escalation of a run its
own identity asked anything of (it started or fed the run, or asked the escalated call): 403
(self-approval).

Body (:class:`~agentguard.server.models.ApprovalRequest`): the escalated decision's ``decision_id``, its
``run_id``, exactly the ``tool_call`` it checked, and ``approved``. The
escalated decision must be a ``check`` of that run answered ESCALATE (else 409; an unknown id is 404),
and the tool call must be the one checked: the same input digest over run id, name, arguments and call
id (else 409), so an approval cannot be moved to another call. The answer is recorded as a decision of
kind ``approval`` (guard ``human:<approver>``, the reason naming the approver and the escalated
decision) whose id is derived from the escalated one: each escalation is answered once, and a second
answer (approve after reject, or the same approval replayed) is 409. The answer goes through the check
pipeline (:meth:`.service.Service.approve`, the core ``Pipeline.aresolve``): the response is a verdict
like ``/v1/check``'s: ALLOW when approved (the caller runs exactly that call), REJECT (or what the
enforcement strategy makes of a refusal) otherwise, HALT when the run was halted meanwhile. Only an
ESCALATE can be approved, and a stack answers ESCALATE only when no guard refused (REJECT and HALT
dominate ESCALATE), so a refused call can never be approved; nor one the check guards refuse in the run as it is
when the answer comes (409: :func:`..deciding.refused_now` asks them again, where they keep no per-run memory; a
flow rule armed since the escalation refuses it). An approval is decided by the guards that escalated: when the guard files were reloaded since (another ``guard_version`` in force), approving is 409
and the agent must ask again (the new guards may refuse the call); refusing is still recorded. Sent again with the same
``Idempotency-Key`` header, an answered approval gets its stored answer back (not 409).
"""

from __future__ import annotations

import hashlib

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ...core.types import ToolCall
from ..audit import input_digest
from ..deciding import self_approval
from ..gate import error, principal_of
from ..idempotency import IdempotencyError, idem_key, key_from_headers
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
        raw = await request.body()
        req: ApprovalRequest = svc.parse(ApprovalRequest, raw)
        who = principal_of(request.scope)
        try:
            idem = idem_key(key_from_headers(request.scope.get("headers", ())), who.identity, "/v1/approvals", raw)
        except IdempotencyError as exc:
            return error(400, str(exc))
        if not who.has("approver"):  # the gate refuses it already; never answered without an identity
            return error(403, f"the credential of {who.identity!r} may not answer escalations: it needs the "
                              "approver role")
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
        # an approval under other guards than those that escalated is 409: checked by Service.approve under the run's
        # lock against the very guards that resolve it (here, a reload could come between the check and the answer)
        # self-approval (403): asked here (refused without the run's lock or a rebuild) and again by Service.approve under
        # the lock, after the run's state is read (authoritative: the approver cannot feed the run in between)
        if (refused := await self_approval(svc.store, req.run_id, who.identity, row)) is not None:
            return refused
        return await svc.approve(req.run_id, req.decision_id, ToolCall(tc.name, tc.arguments, tc.call_id),
                                 req.approved, who.identity, row, approval_id(req.decision_id), idem)
