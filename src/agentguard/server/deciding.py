"""The pieces of the service's decision path around the core Pipeline: the request in progress
(:class:`Call`), the pipeline subclass that writes the service's audit records, the audit-store sink, the
guard wrapper that replays a run a guard let go (:class:`Replaying`), and the run-state snapshot a rebuild
restores. :mod:`.service` puts them together."""

from __future__ import annotations

import contextlib
import contextvars
from collections import abc
from dataclasses import dataclass, field
from typing import Hashable, Any, Iterator, Mapping

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ..core.audit import AuditRecord
from ..core.enforcement import Outcome
from ..core.errors import AgentGuardError, InputError
from ..core.guard import BaseGuard, Guard, arun_guard, run_guard
from ..core.pipeline import RESERVED_KEYS, Pipeline, RunState
from ..core.replacement import decided
from ..core.types import Context, Decision, Step, ToolCall, Trace, Verdict
from .audit import AuditStore
from .gate import error
from .guards import ServiceGuards
from .jsonutil import loads
from .models import StepIn
from .runs import ServiceRun, finish_in_thread
from .runslots import KIND_MARKS, SlotView

__all__ = ["CALL", "Call", "KINDS", "Pipes", "Replaying", "ServicePipeline", "SlotView", "StoreSink", "conflict",
           "decode_read", "evicted", "in_request", "memoryless", "proposal_of", "refused_now", "replay", "restore",
           "self_approval", "slot_covers", "snapshot", "state_of", "with_facts"]


KINDS = ("check", "step", "signal")  # the inputs a guard decides (an approval is answered by a human)


def to_step(s: StepIn) -> Step:
    """A validated step body as a core :class:`~agentguard.core.Step` (tool-call actions as ToolCall)."""
    import time

    action: Any = s.action
    if action is not None and not isinstance(action, str):
        action = ToolCall(action.name, action.arguments, action.call_id)
    return Step(state=s.state, action=action, observation=s.observation, output=s.output,
                signals=dict(s.signals), time=s.time if s.time is not None else time.time())


def evicted(v: Verdict) -> bool:
    """True when ``v`` is the fail-closed answer of a guard that let the run go (RunEvicted)."""
    if (v.details or {}).get("error") == "RunEvicted":
        return True
    return any(isinstance(t, abc.Mapping) and (t.get("details") or {}).get("error") == "RunEvicted"
               for t in (v.details or {}).get("verdicts") or [])


@dataclass
class Call:
    """One decision in progress (the audit sink and the record builder read it from a context variable)."""

    kind: str
    st: ServiceRun
    payload: dict[str, Any]
    digest_input: Any
    step: dict[str, Any] | None = None
    extra_numbers: dict[str, float] | None = None
    approval: dict[str, Any] | None = None
    record: AuditRecord | None = None
    inp: dict[str, Any] | None = None
    error: BaseException | None = None
    answer: tuple[Decision, str] = (Decision.HALT, "")
    extra: dict[str, Any] = field(default_factory=dict)
    principal: str = ""  # the identity of the credential that asked (or answered)
    idem: Any = None  # the request's IdemKey (.idempotency), if it was sent with an Idempotency-Key
    idem_row: dict[str, Any] | None = None  # its idempotency_keys row, written with the decision
    body: bytes | None = None  # the answer's JSON body, when it was built before the commit (a keyed request)
    version: int | None = None  # the run's version after this decision's commit (AuditStore.run_version)
    guard_version: str = ""  # the version of the guards that decide it (Pipes.version), recorded with it


CALL: contextvars.ContextVar[Call | None] = contextvars.ContextVar("agentguard_service_call", default=None)


@contextlib.contextmanager
def in_request(call: Call, runs: Any) -> Iterator[None]:
    """``call`` as the decision in progress (:data:`CALL`, which the sink and the record builder read) while the
    pipeline decides it. A decision that does not come back (cancelled: the core pipeline lets
    :class:`asyncio.CancelledError` through, even from its audit write; or anything else raised) drops the run's
    state from ``runs`` (a :class:`~.runs.ServiceRuns`; its guards forget the run), so the next request rebuilds it
    from the store. Before (session 26 red team), a request cancelled during its audit write left the guards'
    memory holding an input the store never got and its client never saw answered: a guard allowing ``send`` only
    after ``confirm`` ALLOWed the next ``send`` of the run on a ``confirm`` that was never stored. The service awaits
    a decision by guards with per-run memory to its end even when cancelled (:func:`.runs.finished`), so a guard's
    worker thread cannot record an input after the run was dropped and rebuilt."""
    token = CALL.set(call)
    try:
        yield
    except BaseException:
        runs.end_run(call.st.run_id)
        raise
    finally:
        CALL.reset(token)


def with_facts(metadata: Mapping[str, Any], facts: Mapping[str, Any] | None) -> dict[str, Any]:
    """A run's ``metadata`` with a request's ``facts`` in place of the previous request's (reserved keys stay)."""
    out = {k: v for k, v in metadata.items() if k in RESERVED_KEYS}
    out.update({k: v for k, v in (facts or {}).items() if k not in RESERVED_KEYS})
    return out


def snapshot(st: RunState) -> dict[str, Any]:
    """The run's enforcement state after a decision (stored with the input; a rebuild restores it)."""
    md = st.context.metadata
    return {"halted": [st.halted.reason, st.halted.guard] if st.halted is not None else None,
            "halted_tools": sorted(str(t) for t in md.get("halted_tools", ()) or ()),
            "replan_rounds": int(md.get("replan_rounds", 0) or 0)}


def slot_covers(st: ServiceRun, memoryless: abc.Container[str], slot: SlotView) -> bool:
    """Whether a held run's state ``st`` (its first ``st.stored`` inputs) is brought up to date by the run's
    shared slot (:class:`.runslots.RunSlots`) alone, as replaying the store's rows since would: nothing was
    stored since that must be replayed (no step, whose trace the state keeps; no input of a kind whose guards
    keep per-run memory, i.e. not in ``memoryless``), and the enforcement state before and after is the
    initial one (:func:`snapshot` all empty), so there is nothing to restore."""
    if slot.n < st.stored or not slot.trivial or any(snapshot(st).values()):
        return False
    return all(mark <= st.stored or (kind != "step" and kind in memoryless)
               for kind, mark in zip(KIND_MARKS, slot.marks))


def restore(st: RunState, snap: Mapping[str, Any]) -> None:
    h = snap.get("halted")
    md = st.context.metadata
    if h:
        st.halted = Verdict(Decision.HALT, str(h[0]), str(h[1] or ""))
        md["halted"] = st.halted.reason
    tools = snap.get("halted_tools") or []
    if tools:
        md["halted_tools"] = set(tools)
    if snap.get("replan_rounds"):
        md["replan_rounds"] = int(snap["replan_rounds"])


class ServicePipeline(Pipeline):
    """The core Pipeline with the service's run state (:class:`~.runs.ServiceRun`) and audit records (the
    service's decision id, kind, input digest, guard version, and the answered decision; the run's
    input row with its state after the decision goes in the same transaction)."""

    def __init__(self, svc: Any, guard: Guard, **kw: Any) -> None:
        super().__init__(guard, **kw)
        self.svc = svc

    def _new_run(self, run_id: Hashable) -> RunState:
        rid = str(run_id)
        return ServiceRun(Context(run_id=rid, trace=Trace(run_id=rid), metadata={"adapter": self.adapter}))

    def _audit_record(self, st: RunState, out: Outcome, kind: str) -> AuditRecord:
        call = CALL.get()
        if call is None or call.st is not st:
            raise AgentGuardError("a service decision is audited only inside its request")
        return self.svc.audit_record(call, out)


class StoreSink:
    """The pipelines' audit sink: the audit store, writing the decision, its step row and the run's input
    row in one transaction; returns after the commit (the error is kept for the request to read)."""

    def __init__(self, store: AuditStore) -> None:
        self.store = store

    @staticmethod
    def _call() -> Call:
        call = CALL.get()
        if call is None:
            raise AgentGuardError("no service request in progress")
        return call

    def write(self, record: AuditRecord) -> None:
        call = self._call()
        try:
            call.version = self.store.record(record, call.step, call.inp, call.idem_row)
        except BaseException as exc:
            call.error = exc
            raise

    async def awrite(self, record: AuditRecord) -> None:
        call = self._call()
        try:
            call.version = await self.store.arecord(record, call.step, call.inp, call.idem_row)
        except BaseException as exc:
            call.error = exc
            raise


class Replaying(BaseGuard):
    """``guard`` as the pipeline asks it; when it answers that it let the run go from its own bounded
    memory (RunEvicted, e.g. the threshold monitor's 10,000 runs), the run's stored inputs of this kind
    are replayed into it (``replay(kind, run_id)``) and it is asked again. If it still cannot answer,
    its fail-closed HALT stands: an evicted run is never treated as new."""

    def __init__(self, guard: Guard, kind: str, svc: Any) -> None:
        self.guard = guard
        self.kind = kind
        self.svc = svc
        self.name = str(getattr(guard, "name", kind))

    def __repr__(self) -> str:
        return f"Replaying({self.guard!r})"

    def check(self, context: Context, proposal: Any) -> Verdict:
        v = run_guard(self.guard, context, proposal)
        if evicted(v):
            self.svc.replay_guard(self.kind, self.guard, context.run_id)
            v = run_guard(self.guard, context, proposal)
        return v

    async def acheck(self, context: Context, proposal: Any) -> Verdict:
        v = await arun_guard(self.guard, context, proposal)
        if evicted(v):
            await finish_in_thread(self.svc.replay_guard, self.kind, self.guard, context.run_id)  # under the lock
            v = await arun_guard(self.guard, context, proposal)
        return v


@dataclass
class Pipes:
    """The pipelines of one generation of guards (a hot reload builds the next generation)."""

    guards: ServiceGuards
    gen: int
    raw: dict[str, Any]
    pipes: dict[str, ServicePipeline]
    memoryless: frozenset[str] = frozenset()  # kinds whose guards keep no per-run memory (nothing to replay)
    version: str = ""  # the version of ``guards`` (GuardSource.versioned: read with them, never after a reload)


def memoryless(guard: Any) -> bool:
    """True when no guard inside ``guard`` keeps per-run memory, so replaying a run into it changes
    nothing: every guard in it is a stack or declares itself fast and pure (its own class sets
    ``inline_safe = True``) and has neither ``end_run`` nor ``reset``."""
    from ..core.guard import GuardStack, declares_inline_safe
    from ..core.runs import walk_guards

    for g in walk_guards(guard):
        if type(g) is GuardStack:
            continue
        if not declares_inline_safe(g):
            return False
        if callable(getattr(g, "end_run", None)) or callable(getattr(g, "reset", None)):
            return False
    return True


async def refused_now(svc: Any, pipes: Pipes, st: RunState, call: ToolCall, escalated: Mapping[str, Any],
                      inp: Mapping[str, Any] | None) -> str | None:
    """Why an approval of the escalated ``call`` (its decision row ``escalated``, its input row ``inp``) may not run
    it in the run as it is now (``st``, under the run's lock), or None. The check guards are asked again (the facts:
    the escalated request's claims and the server's facts of the credential of the identity that asked); anything
    but ALLOW or ESCALATE is the reason.

    Only where the check guards keep no per-run memory (``pipes.memoryless``: asking again changes nothing, as a
    rebuild would not replay it); guards with memory are not asked again (a limit: an approval then resolves the
    escalation as it was asked). Session 26 red team: ``send_email`` to eve was ESCALATEd in a clean run, the run then
    read an inbox that asked to forward everything to eve (a flow rule REJECTed the same call from then on), and the
    earlier escalation, approved, answered ALLOW: a call the guards refused ran on an approval. An asker whose
    credential is gone (or ambiguous) is refused too: its facts cannot be known."""
    if "check" not in pipes.memoryless:
        return None
    asker = str(escalated.get("principal") or "")
    claims = (((inp or {}).get("payload") or {}).get("input") or {}).get("metadata") or {}
    who = svc.credentials.principal(asker) if svc.credentials is not None else None
    if who is None:
        return f"the credential of {asker!r} that asked for it is not in force, so its facts are not known"
    try:
        facts = svc.facts.of(claims, who, pipes.guards)
    except Exception as exc:  # noqa: BLE001 - a claim its credential now sets, or a grant: refused
        return f"its facts are not the request's to send any more ({type(exc).__name__})"
    ctx = Context(run_id=st.run_id, trace=st.context.trace, metadata=with_facts(st.context.metadata, facts))
    v = await arun_guard(pipes.raw["check"], ctx, call)
    if v.decision in (Decision.ALLOW, Decision.ESCALATE):
        return None
    return f"the guards in force answer {v.decision.name} for it in the run as it is now ({v.reason[:200]})"


async def self_approval(store: AuditStore, run_id: str, approver: str, escalated: Mapping[str, Any]) -> Response | None:
    """The 403 when ``approver`` (an identity) asked for the escalation (``escalated``: its decision row) or for any
    decision of the run (it started or fed it), else None. Call under the run's lock, after its state was read: an
    input of the run stored since (on any replica) takes the index the answer would be stored at, so the answer
    conflicts and is asked here again. Before (session 26 red team), only the route asked, before the lock: an
    identity holding the agent and approver roles (``run_binding = "shared"``) fed the run between that check and its
    own answer, and approved an escalation of a run it had asked something of. The route still asks first (a refusal
    then costs no lock and no rebuild)."""
    askers = await run_in_threadpool(store.run_principals, run_id)
    if approver == escalated.get("principal") or approver in askers:
        return error(403, f"self-approval refused: {approver!r} asked for decisions of run {run_id}, so it cannot "
                          "answer its escalations")
    return None


def proposal_of(kind: str, payload: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The proposal and the facts of a stored input (what a replay feeds the guard)."""
    if kind == "check":
        return ToolCall.from_dict(payload["tool_call"]), dict(payload.get("metadata") or {})
    if kind == "step":
        return to_step(StepIn.model_validate(payload["step"])), {}
    if kind == "signal":
        return Step(signals=dict(payload["signals"]), time=float(payload.get("time") or 0.0)), {}
    raise InputError(f"not a guard input: {kind}")


def replay(guards: Mapping[str, Any], run_id: str, rows: list[dict[str, Any]], trace: Trace,
           grants: abc.Container[str] = ()) -> None:
    """Feed the stored inputs ``rows`` in order to the guards of their kind (``guards``; an approval
    has none), growing ``trace`` with the steps. A stored check's facts are the agent's claims as it sent them;
    those the guards replayed into read as grants (``grants``: :meth:`.facts.RequestFacts.grants` of these guards)
    are dropped, as a live request holding them is refused. Before (session 21 red team), a claim sent while no
    guard read it as a grant (``{"grant": "wire_money"}``) was stored, and after a reload to guards that do, the
    run's rebuild fed it to them: the next check of that run was ALLOWed on the agent's own grant."""
    for r in rows:
        kind = r["kind"]
        if kind not in KINDS or (kind != "step" and kind not in guards):
            continue
        try:
            proposal, facts = proposal_of(kind, r["payload"]["input"])
        except Exception:  # noqa: BLE001 - unreadable stored input: nothing to replay
            continue
        if facts:
            facts = {k: v for k, v in facts.items() if k not in grants}
        g = guards.get(kind)
        if g is not None:
            ctx = Context(run_id=run_id, trace=trace, state=state_of(None, proposal), metadata=facts)
            decided(g, ctx, proposal)  # as decided live (a replacement re-asked); only memory matters
        if kind == "step":
            trace.append(proposal)


def decode_read(rows: list[dict[str, Any]], replayed: abc.Container[str]) -> None:
    """Decode the stored payloads (``raw``) of the rows a replay reads: those of a kind in ``replayed``
    (guards with per-run memory), the steps (the trace) and the last (the enforcement state after it)."""
    for i, r in enumerate(rows):
        raw = r.pop("raw")
        if r["kind"] in replayed or r["kind"] == "step" or i == len(rows) - 1:
            r["payload"] = loads(raw)


def state_of(_context: Any, proposal: Any) -> Any:
    """The concrete state a guard sees: a step's own state (None for tool calls and signals)."""
    return proposal.state if isinstance(proposal, Step) else None


def conflict(exc: BaseException | None) -> bool:
    if exc is None:
        return False
    from sqlalchemy.exc import IntegrityError

    return isinstance(exc, IntegrityError)
