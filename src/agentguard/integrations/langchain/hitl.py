"""LangChain's human-in-the-loop shapes for an ask: the ``HITLRequest`` an interrupt carries (what the
approver sees: every guard's verdict) and the human's decision read back from the resume value (fail
closed: anything that is not a valid decision is a reject)."""

from __future__ import annotations

from typing import Any

from ...core.enforcement import Outcome
from ...core.pipeline import approval_request
from ...core.types import ToolCall

__all__ = ["APPROVER", "DECISIONS", "Human", "as_reviewed", "hitl_decision", "hitl_request"]

DECISIONS = ["approve", "edit", "reject", "respond"]
#: who answered, as the guard service's audit log records it (RemoteGuard escalations)
APPROVER = "human via LangChain HITL"


def hitl_request(outcome: Outcome) -> dict[str, Any]:
    """LangChain's ``HITLRequest`` for one asked outcome; the description is what the approver must see
    (every guard's verdict), repeated as data under ``agentguard`` (call, reason, ``verdicts``)."""
    call = outcome.proposal
    req = approval_request(outcome)
    name = getattr(call, "name", "?")
    return {
        "action_requests": [
            {"name": name, "args": dict(getattr(call, "arguments", {}) or {}), "description": req["text"]}
        ],
        "review_configs": [{"action_name": name, "allowed_decisions": list(DECISIONS)}],
        "agentguard": {
            "tool_call_id": getattr(call, "call_id", ""),
            "verdict": outcome.verdict.to_dict() if outcome.verdict is not None else None,
            "verdicts": req["verdicts"],
            "reason": req["reason"],
        },
    }


def hitl_decision(answer: Any) -> dict[str, Any]:
    """The human's decision from a resume value: LangChain's ``{"decisions": [d]}`` (or a bare
    decision), legacy ``True`` / ``{"approved": True}`` / ``"approve"``; anything else is a reject."""
    if isinstance(answer, dict) and isinstance(answer.get("decisions"), list):
        ds = answer["decisions"]
        answer = ds[0] if len(ds) == 1 else None
    if isinstance(answer, list):
        answer = answer[0] if len(answer) == 1 else None
    if _approved(answer):
        return {"type": "approve"}
    if isinstance(answer, dict) and answer.get("type") in ("edit", "reject", "respond"):
        return dict(answer)
    return {"type": "reject", "message": f"no valid decision in the resume value {str(answer)[:200]!r}"}


def _approved(answer: Any) -> bool:
    if answer is True:
        return True
    if isinstance(answer, dict):  # both fields given: both must approve (a contradiction refuses)
        if "type" in answer and "approved" in answer:
            return answer["type"] == "approve" and answer["approved"] is True
        return answer.get("approved") is True or answer.get("type") == "approve"
    return isinstance(answer, str) and answer.strip().lower() in ("approve", "approved", "yes", "y")


class Human:
    """A human's answer to an ask, translated: ``kind`` (approve / edit / reject / respond), the edited
    call, and the text the model reads when the call does not run."""

    __slots__ = ("kind", "edited", "text")

    def __init__(self, decision: dict[str, Any], asked: Outcome, call: ToolCall) -> None:
        kind, why = decision["type"], asked.verdict.reason if asked.verdict is not None else ""
        self.edited: ToolCall | None = None
        self.text = ""
        if kind == "edit":
            ea = decision.get("edited_action")
            if isinstance(ea, dict) and ea.get("name") == call.name and isinstance(ea.get("args"), dict):
                self.edited = ToolCall(call.name, dict(ea["args"]), call.call_id)
            else:
                kind, why = "reject", f"an edit must name the same tool {call.name} and give args: {why}"
        if kind == "respond" and not isinstance(decision.get("message"), str):
            kind = "reject"
        if kind == "respond":
            self.text = decision["message"]
        elif kind == "reject":
            note = decision.get("message") if isinstance(decision.get("message"), str) else ""
            self.text = f"agentguard: tool call {call.name} refused by a human{': ' + note if note else ''} ({why})"
        self.kind = kind


def as_reviewed(request: Any) -> Any:
    """``request`` as LangChain's own ``HumanInTheLoopMiddleware`` runs it: a reviewer's ``edit`` (kept in the state
    under its ``hitl_edited_tool_calls`` key, by call id) replaces the model's call in that middleware's
    ``wrap_tool_call``, which may sit inside the gate (listed after it): the gate judged the model's call, then the
    edit ran unjudged (a redirect to another tool, ``read_path("/etc/shadow")``), or the pinned original ran though the
    reviewer had replaced it. The edit is applied here with that middleware's own reading (``_reviewer_edit``,
    ``_apply_edit``: another tool is looked up in ``runtime.tools``, an unknown one raises, so nothing runs), and the
    gate judges and pins what it will run; applied again inside, it is the same call. Unchanged when no edit is held
    for this call (or LangChain has no such middleware)."""
    try:
        from langchain.agents.middleware.human_in_the_loop import (
            _EDITED_TOOL_CALLS_KEY,
            HumanInTheLoopMiddleware,
        )
    except ImportError:  # pragma: no cover - a LangChain without it: no edit to apply
        return request
    state = getattr(request, "state", None)
    held = (state.get(_EDITED_TOOL_CALLS_KEY) if isinstance(state, dict)
            else getattr(state, _EDITED_TOOL_CALLS_KEY, None))
    if not held:
        return request
    reviewer = HumanInTheLoopMiddleware(interrupt_on={})
    executed = reviewer._reviewer_edit(request)
    return request if executed is None else reviewer._apply_edit(request, executed)
