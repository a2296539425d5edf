"""A Python client of the guard service, and :class:`RemoteGuard`: the service as an agentguard Guard.

``RemoteGuard`` plugs the service into anything that takes a Guard (a GuardStack, the framework
adapters): a ToolCall goes to ``POST /v1/check``, a Step to ``POST /v1/runs/{run_id}/steps`` (the run id
is the context's), signal values to ``/signals``. It fails closed: a network error, a timeout, a
non-200 answer or an unreadable body yields a blocking verdict (HALT by default), never ALLOW.

    client = GuardServiceClient("http://127.0.0.1:8787", token)
    v = client.check(ToolCall("rent_car", {}), run_id="r1", metadata={"user_info": {...}})
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..core import telemetry
from ..core.errors import AgentGuardError, InputError, require
from ..core.guard import BaseGuard, fail_closed
from ..core.types import Context, Decision, Step, ToolCall, Trace, Verdict

__all__ = ["GuardServiceClient", "GuardServiceError", "RemoteGuard"]



def _trace_headers() -> dict[str, str] | None:
    """The current trace context (``traceparent``) when telemetry is on: the service's spans join the trace."""
    if telemetry.active() is None:
        return None
    headers: dict[str, str] = {}
    telemetry.inject(headers)
    return headers or None

class GuardServiceError(AgentGuardError):
    """The service refused a request or could not be reached; the message says which and why."""


def _verdict(body: Mapping[str, Any]) -> Verdict:
    """The service's answer as a Verdict: its decision (what the client must do, after the service's
    enforcement strategy), with ``details`` carrying the decision id and run, every guard's own verdict
    (``verdicts``: what an approver is shown) and the service's ``message`` for the agent."""
    try:
        details: dict[str, Any] = {"decision_id": body.get("decision_id"), "run_id": body.get("run_id")}
        trail = body.get("verdicts")
        if isinstance(trail, list) and trail:
            details["verdicts"] = [dict(t) for t in trail if isinstance(t, Mapping)]
        if body.get("message"):
            details["message"] = str(body["message"])
        return Verdict(Decision.parse(body["decision"]), str(body.get("reason", "")), str(body.get("guard", "")),
                       {k: float(v) for k, v in (body.get("numbers") or {}).items()}, body.get("action"), details)
    except (KeyError, TypeError, ValueError, InputError) as exc:
        raise GuardServiceError(f"unreadable verdict from the service: {exc}") from None


def _step_json(step: Step | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(step, Mapping):
        return dict(step)
    d = step.to_dict()
    if not isinstance(step.action, (ToolCall, str, type(None))):
        d["action"] = str(step.action)
    return {k: d[k] for k in ("state", "action", "observation", "output", "signals", "time")}


class GuardServiceClient:
    """Synchronous and asynchronous calls to one service (``httpx``; keep-alive connections)."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 5.0) -> None:
        self.httpx = require("httpx", "server")
        self.base_url = base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"}
        self.timeout = timeout
        self._client = None
        self._aclient = None

    # -- plumbing ---------------------------------------------------------------------------------
    def _sync(self):
        if self._client is None:
            self._client = self.httpx.Client(base_url=self.base_url, headers=self.headers, timeout=self.timeout)
        return self._client

    def _async(self):
        if self._aclient is None:
            self._aclient = self.httpx.AsyncClient(base_url=self.base_url, headers=self.headers,
                                                   timeout=self.timeout)
        return self._aclient

    def _answer(self, r: Any) -> dict[str, Any]:
        try:
            body = r.json()
        except ValueError:
            body = {}
        if r.status_code != 200:
            raise GuardServiceError(f"service answered {r.status_code}: {body.get('error', r.text[:200])}")
        return body

    def _post(self, path: str, payload: Mapping[str, Any]) -> dict[str, Any]:  # the trace context goes along
        try:
            r = self._sync().post(path, json=payload, headers=_trace_headers())
        except self.httpx.HTTPError as exc:
            raise GuardServiceError(f"cannot reach the guard service at {self.base_url}: "
                                    f"{type(exc).__name__}: {exc}") from None
        return self._answer(r)

    async def _apost(self, path: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        try:
            r = await self._async().post(path, json=payload, headers=_trace_headers())
        except self.httpx.HTTPError as exc:
            raise GuardServiceError(f"cannot reach the guard service at {self.base_url}: "
                                    f"{type(exc).__name__}: {exc}") from None
        return self._answer(r)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    # -- API --------------------------------------------------------------------------------------
    @staticmethod
    def _check_payload(call: ToolCall | Mapping[str, Any], run_id: str, metadata: Mapping[str, Any] | None):
        tc = call.to_dict() if isinstance(call, ToolCall) else dict(call)
        return {"run_id": run_id, "tool_call": tc, "metadata": dict(metadata or {})}

    def check(self, call: ToolCall | Mapping[str, Any], run_id: str = "default",
              metadata: Mapping[str, Any] | None = None) -> Verdict:
        return _verdict(self._post("/v1/check", self._check_payload(call, run_id, metadata)))

    async def acheck(self, call: ToolCall | Mapping[str, Any], run_id: str = "default",
                     metadata: Mapping[str, Any] | None = None) -> Verdict:
        return _verdict(await self._apost("/v1/check", self._check_payload(call, run_id, metadata)))

    @staticmethod
    def _approval_payload(decision_id: str, run_id: str, call: ToolCall | Mapping[str, Any], approved: bool,
                          approver: str) -> dict[str, Any]:
        tc = call.to_dict() if isinstance(call, ToolCall) else dict(call)
        body = {"decision_id": decision_id, "run_id": run_id, "tool_call": tc, "approved": approved is True}
        if approver:
            body["approver"] = approver
        return body

    def approve(self, decision_id: str, run_id: str, call: ToolCall | Mapping[str, Any], approved: bool,
                approver: str = "") -> Verdict:
        """Answer the service's ESCALATE ``decision_id`` of exactly ``call`` (``POST /v1/approvals``):
        ALLOW when approved and recorded, REJECT when refused; a second answer raises (409). This client's
        token must be an approver credential (403 otherwise, and for an identity that asked for the run's
        decisions itself); the service records that credential's identity, ``approver`` is only sent along."""
        return _verdict(self._post("/v1/approvals", self._approval_payload(decision_id, run_id, call, approved,
                                                                          approver)))

    async def aapprove(self, decision_id: str, run_id: str, call: ToolCall | Mapping[str, Any], approved: bool,
                       approver: str = "") -> Verdict:
        return _verdict(await self._apost("/v1/approvals", self._approval_payload(decision_id, run_id, call,
                                                                                 approved, approver)))

    def step(self, run_id: str, step: Step | Mapping[str, Any]) -> Verdict:
        return _verdict(self._post(f"/v1/runs/{run_id}/steps", _step_json(step)))

    async def astep(self, run_id: str, step: Step | Mapping[str, Any]) -> Verdict:
        return _verdict(await self._apost(f"/v1/runs/{run_id}/steps", _step_json(step)))

    def signals(self, run_id: str, values: Mapping[str, float]) -> Verdict:
        return _verdict(self._post(f"/v1/runs/{run_id}/signals", {"signals": dict(values)}))

    async def asignals(self, run_id: str, values: Mapping[str, float]) -> Verdict:
        return _verdict(await self._apost(f"/v1/runs/{run_id}/signals", {"signals": dict(values)}))

    def ingest(self, traces: Sequence[Trace]) -> dict[str, Any]:
        payload = {"traces": [{"run_id": t.run_id, "labels": dict(t.labels), "steps": [_step_json(s) for s in t]}
                              for t in traces]}
        return self._post("/v1/traces", payload)


def _as_step(context: Context, proposal: Any) -> Any:
    """A tool call sent to the steps endpoint (``mode="step"``) goes as ``Step(state=context.state,
    action=call)``: the concrete state the adapter's ``state_fn`` computed, for the service's proactive
    guard to abstract."""
    if isinstance(proposal, ToolCall):
        return Step(state=context.state, action=proposal)
    return proposal


class RemoteGuard(BaseGuard):
    """The guard service as a :class:`~agentguard.core.Guard` (fails closed with ``on_error``).

    ``mode``: ``"auto"`` (ToolCall -> check, Step -> steps endpoint, mapping of numbers -> signals),
    or force ``"check"``, ``"step"`` (a tool call then goes to the steps endpoint as a step whose state is
    ``context.state``, what the adapter's ``state_fn`` computed) or ``"signal"``. ``context.metadata`` is
    sent with tool calls.
    ``client`` carries the agent's credential (role ``agent``); ``approvals``, a client with the
    approver's credential (role ``approver``), reports the human's answers: the service refuses an
    answer sent with the agent's credential (403), and the adapters then refuse the call (fail closed).
    """

    def __init__(self, client: GuardServiceClient, *, mode: str = "auto", name: str = "remote",
                 on_error: Decision | str = Decision.HALT, approvals: GuardServiceClient | None = None) -> None:
        if mode not in ("auto", "check", "step", "signal"):
            raise InputError(f"mode must be auto, check, step or signal, not {mode!r}")
        self.client = client
        #: the client that reports a human's answers: it must carry an *approver* credential (the
        #: service records that credential's identity and refuses the agent's own); default ``client``
        self.approvals = approvals
        self.mode = mode
        self.name = name
        self.on_error = Decision.parse(on_error)

    def _route(self, proposal: Any) -> str:
        if self.mode != "auto":
            return self.mode
        if isinstance(proposal, ToolCall):
            return "check"
        if isinstance(proposal, Step):
            return "step"
        if isinstance(proposal, Mapping) and proposal and all(isinstance(v, (int, float)) for v in proposal.values()):
            return "signal"
        raise InputError(f"RemoteGuard cannot send a {type(proposal).__name__}")

    def check(self, context: Context, proposal: Any) -> Verdict:
        try:
            route = self._route(proposal)
            if route == "check":
                call = proposal.action if isinstance(proposal, Step) else proposal
                return self.client.check(call, context.run_id, context.metadata)
            if route == "step":
                return self.client.step(context.run_id, _as_step(context, proposal))
            return self.client.signals(context.run_id, proposal.signals if isinstance(proposal, Step) else proposal)
        except Exception as exc:  # fail closed
            return fail_closed(self.name, exc, self.on_error)

    async def acheck(self, context: Context, proposal: Any) -> Verdict:
        try:
            route = self._route(proposal)
            if route == "check":
                call = proposal.action if isinstance(proposal, Step) else proposal
                return await self.client.acheck(call, context.run_id, context.metadata)
            if route == "step":
                return await self.client.astep(context.run_id, _as_step(context, proposal))
            sig = proposal.signals if isinstance(proposal, Step) else proposal
            return await self.client.asignals(context.run_id, sig)
        except Exception as exc:
            return fail_closed(self.name, exc, self.on_error)

    # -- a human's answer to the service's ESCALATE --------------------------------------------------
    @staticmethod
    def _escalation(verdict: Verdict) -> tuple[str, str] | None:
        d = verdict.details or {}
        did, run = d.get("decision_id"), d.get("run_id")
        if verdict.decision is not Decision.ESCALATE or not isinstance(did, str) or not isinstance(run, str):
            return None
        return did, run

    def _settled(self, v: Verdict, approved: bool) -> Verdict:
        if approved is True and v.decision is Decision.ALLOW:
            return v
        if approved is True:  # the service did not agree: never run
            return Verdict(Decision.REJECT, f"the guard service did not confirm the approval: {v.reason}", v.guard)
        return Verdict(Decision.REJECT, v.reason, v.guard)

    def settle_approval(self, verdict: Verdict, call: ToolCall, approved: bool, approver: str) -> Verdict | None:
        """Report a human's answer to this service's ESCALATE ``verdict`` of ``call`` (``POST
        /v1/approvals``; the audit log records ``approver``): ALLOW only when approved and recorded,
        REJECT otherwise (an unreachable service or a refused answer included: fail closed); None when
        ``verdict`` is not an escalation of this service."""
        esc = self._escalation(verdict)
        if esc is None:
            return None
        try:
            client = self.approvals or self.client
            return self._settled(client.approve(esc[0], esc[1], call, approved is True, approver), approved)
        except Exception as exc:  # fail closed
            return Verdict(Decision.REJECT, f"the guard service did not record the answer ({exc})", self.name)

    async def asettle_approval(self, verdict: Verdict, call: ToolCall, approved: bool,
                               approver: str) -> Verdict | None:
        esc = self._escalation(verdict)
        if esc is None:
            return None
        try:
            v = await (self.approvals or self.client).aapprove(esc[0], esc[1], call, approved is True, approver)
            return self._settled(v, approved)
        except Exception as exc:  # fail closed
            return Verdict(Decision.REJECT, f"the guard service did not record the answer ({exc})", self.name)
