"""Request and response bodies of the HTTP API (pydantic v2; unknown fields are refused).

Every body is JSON validated against these models before anything else happens; values are plain
data (strings, numbers, lists, objects) and are never evaluated.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "ApprovalRequest",
    "CheckRequest",
    "ErrorOut",
    "IngestRequest",
    "IngestResponse",
    "RUN_ID_PATTERN",
    "SignalRequest",
    "StepIn",
    "StepRequest",
    "ToolCallIn",
    "TraceIn",
    "VerdictOut",
]

RUN_ID_PATTERN = r"^[A-Za-z0-9_.:\-]{1,128}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ToolCallIn(_Strict):
    """A tool call: name, JSON arguments, optional call id (``id``, as an OpenAI tool call names it, is an
    alias of ``call_id``; both with different values are refused). Any other key is refused (422)."""

    name: str = Field(min_length=1, max_length=256)
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: str = Field(default="", max_length=256)
    id: Optional[str] = Field(default=None, max_length=256, exclude=True,
                              description="alias of call_id (the id of an OpenAI-style tool call)")

    @model_validator(mode="after")
    def _id_alias(self) -> "ToolCallIn":
        if self.id is not None:
            if self.call_id and self.call_id != self.id:
                raise ValueError("'call_id' and 'id' (its alias) differ")
            self.call_id = self.id
        return self


class CheckRequest(_Strict):
    """``POST /v1/check``: is this tool call allowed?"""

    run_id: str = Field(default="default", pattern=RUN_ID_PATTERN)
    tool_call: ToolCallIn
    metadata: dict[str, Any] = Field(default_factory=dict)


class ApprovalRequest(_Strict):
    """``POST /v1/approvals``: a human's answer to an ESCALATE of ``/v1/check`` (the escalated decision's
    id, its run and exactly the tool call it checked). Who answered is the caller's approver credential;
    ``approver``, if sent, is ignored (kept so that older clients are not refused)."""

    decision_id: str = Field(min_length=1, max_length=32)
    run_id: str = Field(pattern=RUN_ID_PATTERN)
    tool_call: ToolCallIn
    approved: bool = Field(strict=True)
    approver: Optional[str] = Field(default=None, max_length=100, description="ignored: the approver is the "
                                    "identity of the credential that sends the answer")


def _finite(d: dict[str, float]) -> dict[str, float]:
    for k, v in d.items():
        if not math.isfinite(v):
            raise ValueError(f"signal {k!r} must be a finite number")
    return d


class StepIn(_Strict):
    """One step of a run: state (abstract or concrete), the action (a tool call or a string such as
    ``"find Pot"``), observation, output chunk, named signal values."""

    state: Any = None
    action: Optional[ToolCallIn | str] = None
    observation: Any = None
    output: Optional[str] = None
    signals: dict[str, float] = Field(default_factory=dict)
    time: Optional[float] = None

    _check_signals = field_validator("signals")(classmethod(lambda cls, v: _finite(v)))


class StepRequest(StepIn):
    """``POST /v1/runs/{run_id}/steps``: feed one step, get the proactive verdict."""


class SignalRequest(_Strict):
    """``POST /v1/runs/{run_id}/signals``: stream signal values (e.g. a verifier score) to the monitor."""

    signals: dict[str, float] = Field(min_length=1, max_length=64)
    time: Optional[float] = None

    _check_signals = field_validator("signals")(classmethod(lambda cls, v: _finite(v)))


class TraceIn(_Strict):
    run_id: Optional[str] = Field(default=None, pattern=RUN_ID_PATTERN)
    labels: dict[str, Any] = Field(default_factory=dict)
    steps: list[StepIn] = Field(default_factory=list, max_length=10_000)


class IngestRequest(_Strict):
    """``POST /v1/traces``: finished traces to keep for learning."""

    traces: list[TraceIn] = Field(min_length=1, max_length=10_000)


class VerdictOut(BaseModel):
    """A verdict as answered (what the client must do, after the enforcement strategy); it is already in
    the audit store under ``decision_id``."""

    decision_id: str
    run_id: str
    decision: str = Field(description="ALLOW (run the call), MODIFY or RECOVER (run `action` instead), REJECT "
                                      "(do not run it; the run goes on), ESCALATE (ask a human: POST "
                                      "/v1/approvals) or HALT (the run stops)")
    allowed: bool
    reason: str
    guard: str
    numbers: dict[str, float] = Field(default_factory=dict)
    action: Any = None
    step: Optional[int] = None
    execute: Optional[bool] = Field(default=None, description="the call (or `action`) may run")
    stop: Optional[bool] = Field(default=None, description="the run is halted: every later input is HALT")
    message: str = Field(default="", description="text for the agent (a refusal to re-plan around, an alert)")
    verdicts: list[dict[str, Any]] = Field(default_factory=list, description="every guard's own verdict")


class IngestResponse(BaseModel):
    stored_runs: int
    rows: int
    file: str
    run_ids: list[str] = Field(description="the id each trace was stored under, in order: its run id, or "
                                           "`<run id>@<16 hex>` where another identity had stored that run id first "
                                           "(run_binding = identity)")


class ErrorOut(BaseModel):
    error: str
    detail: Any = None
