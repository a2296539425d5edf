"""What every route of the service shares: its stores, its guards, and the one decision path.

:class:`Service` holds the settings, the guard source, the audit and trace stores, the run memory and the metrics
of one application. Every decision endpoint (``/v1/check``, ``/v1/runs/{id}/steps``, ``/v1/runs/{id}/signals``,
``/v1/approvals``) goes through the core :class:`~agentguard.core.pipeline.Pipeline` (one per guard kind, all sharing
ONE run memory): it converts the input, decides fail-closed, enforces (the ``strategy`` of the service settings, else
of the stack, else of the policy that decided; :mod:`agentguard.core.strategies`), audits (the audit store is the
sink: a failed write answers 503 and no verdict) and keeps the run's state (latched HALT, strategy counters, trace).

The order of one request, :meth:`Service.decide`:

1. take the run's lock (:class:`~.runs.RunLocks`: one lock per run id, not inside the state, so two
   requests of one run never race however its state is replaced);
2. under it, bring the run's state up to date with the store (:meth:`Service.state`): a run this
   process does not hold, or whose guards were hot-reloaded, is rebuilt: every guard forgets the run, the
   stored inputs are replayed into the guards (their per-run memory) and the run's enforcement state is
   restored from the last stored input (latched HALT, halted tools, re-planning rounds); a held run that
   other workers or replicas moved on is caught up (only their inputs are replayed; :meth:`Service.astate`).
   A run whose last input is older than ``run_ttl_s`` is 410 (the same for every replica); a run let go for
   capacity is rebuilt, never new. A keyed request already decided is answered from the store (:mod:`.idempotency`);
3. decide through the pipeline; its audit record and the run's next input row (``inputs`` table,
   ``(run_id, idx)`` unique) commit in one transaction before the answer;
4. a failed or cancelled decision leaves no trace in memory (the state is dropped and rebuilt next time; cancelled,
   only once the work it started under the lock ended: :func:`.runs.finished`); a write that lost the race for the
   run's next index (another replica decided it first) is decided again on the rebuilt state (a few times, then 409).

A guard that let the run go from its own bounded memory (the threshold monitor holds 10,000 runs)
raises :class:`~agentguard.core.runs.RunEvicted`: the service replays the run's stored inputs into it
and asks again (:class:`Replaying`); only if that fails is the answer the fail-closed HALT, never ALLOW.

A third-party guard that keeps per-sequence state in itself (``reset()``, no ``end_run``) gets a per-run
copy (:class:`~.guards.PerRunCopy`); every guard with ``end_run`` is shared across runs.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ..core.audit import AuditRecord
from ..core.enforcement import Outcome
from ..core.errors import InputError
from ..core.guard import GuardStack
from ..core.pipeline import RunState, call_key
from ..core.runs import end_run
from ..core.strategies import strategy as strategy_by_name
from ..core.types import Context, Decision, Step, ToolCall, Trace, Verdict
from .audit import AuditStore, input_digest, new_decision_id
from .binding import RunBinding
from .facts import RequestFacts
from .deciding import (KINDS, Call, Pipes, Replaying, ServicePipeline, SlotView, StoreSink, conflict, decode_read,
                       in_request, memoryless, refused_now, replay, restore, self_approval, slot_covers, snapshot,
                       state_of, to_step, with_facts)
from .otel import shadow_extra
from .gate import ANONYMOUS, BytesJSON, error, validation_response
from .guards import GuardSource, PerRunCopy, needs_copy, valid_run_id
from .idempotency import IdemKey, replayed as stored_answer
from .jsonutil import RequestJSONError, check_value_count, dumps, loads, loads_request
from .metrics import Metrics
from .models import IngestRequest
from .outcomes import answered
from .runs import RunExpired, RunLocks, ServiceRun, ServiceRuns, finish_in_thread, finished
from .settings import ServerSettings
from .traces import TraceStore

__all__ = ["KINDS", "Replaying", "Service", "ServicePipeline", "answered", "to_step"]

#: how many times a decision that lost the race for the run's next stored index is decided again
CONFLICT_RETRIES = 8


def check_run_id(run_id: str) -> None:
    if not valid_run_id(run_id):
        raise InputError(f"invalid run id {run_id[:40]!r}: use 1-128 characters from A-Z a-z 0-9 _ . : -")


class Service:
    """The state of one application and the one decision path its routes share."""

    def __init__(self, settings: ServerSettings, source: GuardSource, store: AuditStore) -> None:
        self.settings = settings
        self.source = source
        self.store = store
        self.traces = TraceStore.for_service(settings, store.engine)  # slots and quotas in the shared database
        self.runs = ServiceRuns(settings.run_ttl_s, max_runs=settings.max_runs, on_drop=self._on_drop)
        self.locks = RunLocks()
        self.sink = StoreSink(store)
        self.binding = RunBinding(settings.run_binding, store)  # who may feed a run (.binding)
        self.facts = RequestFacts(source, settings.client_facts)  # the agent's claims apart from the server's
        self.credentials: Any = None  # the app's CredentialStore (health reports a failed reload)
        self.webhook: Any = None  # the app's WebhookNotifier: told of every ESCALATE once it is stored
        self._pipes: Pipes | None = None
        self._gen = 0
        self.metrics = Metrics()
        self.catch_ups = 0  # runs brought up to date by replaying only what other replicas decided
        self.rebuilds = 0  # runs rebuilt from their first input
        g = self.metrics.gauges
        g["agentguard_active_runs"] = lambda: len(self.runs)
        g["agentguard_runs_expired_total"] = lambda: self.runs.expired_total
        g["agentguard_audit_batches_total"] = lambda: store.stats["batches"]
        g["agentguard_audit_records_total"] = lambda: store.stats["records"]
        g["agentguard_guard_reloads_total"] = lambda: source.reloads

    # -- parsing ----------------------------------------------------------------------------------
    def parse(self, model: Any, raw: bytes) -> Any:
        """``model`` validated from the JSON body ``raw`` (400 for malformed JSON, 422 for invalid fields). A
        decision request holds at most ``max_json_values`` JSON values (400), so the work every later walk of
        it does (snapshots, digests, guards), on the event loop, is bounded; trace batches are not decided."""
        if not raw:
            raise RequestValidationError([{"type": "json_invalid", "loc": ("body",), "msg": "empty body",
                                           "ctx": {"error": "empty body"}}])
        try:
            if model is not IngestRequest:  # counted on the text first: an oversized body is not even parsed
                check_value_count(raw, self.settings.max_json_values)
            data = loads_request(raw)
        except RequestJSONError as exc:
            raise RequestValidationError([{"type": "json_invalid", "loc": ("body",), "msg": str(exc),
                                           "ctx": {"error": str(exc)}}]) from None
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False, include_input=False)) from None

    # -- pipelines --------------------------------------------------------------------------------
    def _enforcement(self, guard: Any) -> Any:
        """The service-wide strategy (``strategy`` in the settings), else the stack's own ``strategy`` (a
        name or an Enforcement), else None: the strategy of the guard that decided (a policy table's
        ``strategy = "CRP+TEH"``), or the Default."""
        name = getattr(self.settings, "strategy", None)
        if name:
            return strategy_by_name(name)
        own = getattr(guard, "strategy", None) if isinstance(guard, GuardStack) else None
        if isinstance(own, str) and own:
            return strategy_by_name(own)
        return own if own is not None and callable(getattr(own, "apply", None)) else None

    def pipelines(self) -> Pipes:
        """The pipelines of the guards in force (rebuilt when a hot reload swapped them)."""
        g, version = self.source.versioned()  # one pair: the version is that of these guards
        p = self._pipes
        if p is not None and p.guards is g:
            return p
        self._gen += 1
        raw: dict[str, Any] = {}
        pipes: dict[str, ServicePipeline] = {}
        for kind, base in (("check", g.tool), ("step", g.step), ("signal", g.signal)):
            guard = PerRunCopy(base) if needs_copy(base) else base
            raw[kind] = guard
            # a guard without per-run memory never lets a run go (RunEvicted): nothing to replay, no wrapper
            asked = guard if memoryless(guard) else Replaying(guard, kind, self)
            pipes[kind] = ServicePipeline(self, asked, strategy=self._enforcement(base),
                                          audit=self.sink, runs=self.runs, adapter="service",
                                          state_fn=state_of, shadow=bool(getattr(self.settings, "shadow", False)))
        self._pipes = Pipes(g, self._gen, raw, pipes, frozenset(k for k, x in raw.items() if memoryless(x)), version)
        return self._pipes

    def _on_drop(self, run_id: Any, st: ServiceRun) -> None:
        """A run left the memory (expired, evicted, ended): every guard in force forgets it."""
        p = self._pipes
        if p is not None:
            for g in p.raw.values():
                end_run(g, run_id)

    # -- runs ---------------------------------------------------------------------------------------
    def now(self) -> float:
        """The service's clock (the run memory's): decisions are stamped with it and expiry reads it."""
        return float(self.runs.clock())

    def _expire(self, run_id: str, last: float | None) -> None:
        """:class:`RunExpired` when the run's last stored input (at ``last``) is older than ``run_ttl_s``."""
        if last is not None and self.now() - last > self.settings.run_ttl_s:
            raise RunExpired(f"run {run_id} expired after {self.settings.run_ttl_s:g}s without activity; "
                             "start a new run id")

    def state(self, run_id: str, pipes: Pipes, expire: bool = True) -> ServiceRun:
        """The run's state, up to date with the store (call under the run's lock, in a worker thread).

        Expiry is decided from the store alone: the time of the run's last stored input (step, signal,
        check or approval, whichever replica decided it), never from this process's own last-seen time, so
        every replica answers alike. With ``expire`` (steps and signals) a run whose last input is older
        than ``run_ttl_s`` is :class:`~.runs.RunExpired`; a tool check of an idle run is decided on the run
        rebuilt from the store, so a client that never names a run keeps its ``default`` run, latched HALT
        included.

        A held run that other replicas moved on is caught up (only their new inputs are replayed into the
        guards, in order), not rebuilt: the state this process holds is always exactly its first
        ``stored`` inputs (a decision that was not stored drops it), so replaying the rest gives the
        rebuilt state at a cost that does not grow with the run's length."""
        n, last = self.store.run_last_input(run_id)
        if expire and n:
            self._expire(run_id, last)
        st = self.runs.held(run_id)
        if st is not None and st.gen == pipes.gen:
            if st.stored == n:
                return st
            if 0 < st.stored < n and self._catch_up(st, pipes, n):
                return st
        return self.rebuild(run_id, pipes)

    async def astate(self, run_id: str, pipes: Pipes, expire: bool = True) -> ServiceRun:
        """:meth:`state` from the event loop. On a SQLite file a held run is brought up to date from its shared
        slot (:meth:`.audit.AuditStore.run_slot`, a memory read): its version unchanged, nobody stored an input
        of it since; only inputs its guards keep no memory of, no step, and the initial enforcement state
        (:func:`.deciding.slot_covers`), it moves on without a read. Else one indexed read of its tail on the
        loop, when what others decided needs no guard replayed; anything else (a rebuild, a replay into
        guards with memory, a network database) goes to a worker thread. A writer that writes no slot cannot
        make a stale state decide: ``(run_id, idx)`` is unique, so that decision is not stored (the request
        retries on the rebuilt run)."""
        version, slot = self.store.run_slot(run_id)
        st = self.runs.peek(run_id) if self.store.local else None
        if st is not None and st.gen == pipes.gen and st.stored and version is not None and st.version == version \
                and not (expire and self.now() - st.last > self.settings.run_ttl_s) and self.runs.held(run_id) is st:
            return st
        if st is not None and st.gen == pipes.gen and st.stored and slot is not None \
                and self._forward(st, pipes, slot, expire):
            st.version = version
            return st
        if st is not None and st.gen == pipes.gen and st.stored:
            # one read: the run's last input this process knows of and any stored after it by others
            tail = self.store.run_tail(run_id, st.stored - 1) or []
            if tail and tail[0]["idx"] == st.stored - 1 and tail[-1]["idx"] == st.stored - 2 + len(tail):
                n, last = st.stored - 1 + len(tail), float(tail[-1]["ts"])
                if expire:
                    self._expire(run_id, last)
                if n == st.stored and self.runs.held(run_id) is st:  # touched: counts as used now
                    st.version = version
                    return st
                rows = tail[1:]
                if n <= st.stored + 64 and all(r["kind"] in pipes.memoryless or r["kind"] not in KINDS for r in rows):
                    decode_read(rows, ())
                    if self._catch_up(st, pipes, n, rows) and self.runs.held(run_id) is st:
                        st.version = version
                        return st
        st = await finish_in_thread(self.state, run_id, pipes, expire)  # never outlives the run's lock (.runs)
        st.version = version
        return st

    def _forward(self, st: ServiceRun, pipes: Pipes, slot: SlotView, expire: bool) -> bool:
        """Catch a held run up from its shared slot alone, without reading the store, where
        :func:`.deciding.slot_covers` says the slot tells everything the store would; False: read the store.
        Raises :class:`RunExpired` when the slot's last input is older than ``run_ttl_s``."""
        if not slot_covers(st, pipes.memoryless, slot):
            return False
        if expire:
            self._expire(st.run_id, slot.last)
        if self.runs.held(st.run_id) is not st:  # touched: counts as used now
            return False
        if slot.n > st.stored:
            st.stored, st.last = slot.n, slot.last
            self.catch_ups += 1
        return True

    def _catch_up(self, st: ServiceRun, pipes: Pipes, n: int, rows: list[dict[str, Any]] | None = None) -> bool:
        """Replay the run's inputs ``st.stored .. n-1`` (decided by other replicas) into the guards and
        restore the enforcement state after the last; False (rebuild instead) if the store disagrees."""
        if rows is None:
            rows = self.store.run_inputs(st.run_id, since=st.stored)
        if not rows or len(rows) < n - st.stored or [r["idx"] for r in rows] != list(range(st.stored, st.stored + len(rows))):
            return False
        self._replay({k: g for k, g in pipes.raw.items() if k not in pipes.memoryless}, st.run_id, rows,
                     st.context.trace, self.facts.grants(pipes.guards))
        st.stored += len(rows)
        st.last = float(rows[-1]["ts"])
        restore(st, rows[-1]["payload"].get("state") or {})
        self.catch_ups += 1
        return True

    def rebuild(self, run_id: str, pipes: Pipes) -> ServiceRun:
        """The run rebuilt from the store: every guard forgets it, its stored inputs are replayed into the
        guards in order (their per-run memory), its step trace is rebuilt and its enforcement state
        (latched HALT, halted tools, re-planning rounds) restored from the last stored input."""
        rows = self.store.run_inputs(run_id, decode=False)
        self.rebuilds += 1
        for g in pipes.raw.values():
            end_run(g, run_id)
        replayed = {k: g for k, g in pipes.raw.items() if k not in pipes.memoryless}  # a guard without memory: no replay
        decode_read(rows, replayed)
        st = ServiceRun(Context(run_id=run_id, trace=Trace(run_id=run_id), metadata={"adapter": "service"}),
                        gen=pipes.gen)
        if not rows:  # a run stored before the inputs table existed: its steps
            rows = [{"kind": "step", "payload": {"input": {"step": r["payload"]}}, "ts": r["ts"]}
                    for r in self.store.run_steps(run_id)]
            st.stored = 0
        else:
            st.stored = len(rows)
        self._replay(replayed, run_id, rows, st.context.trace, self.facts.grants(pipes.guards))
        if rows:
            st.last = float(rows[-1]["ts"])
            restore(st, rows[-1]["payload"].get("state") or {})
        self.runs.set(run_id, st)
        return st

    _replay = staticmethod(replay)

    def replay_guard(self, kind: str, guard: Any, run_id: str) -> None:
        """Bring one guard's memory of ``run_id`` up to date (it let the run go): forget, then replay the
        run's stored inputs of that kind (called under the run's lock)."""
        end_run(guard, run_id)
        self._replay({kind: guard}, run_id, self.store.run_inputs(run_id), Trace(run_id=run_id), self.facts.grants())

    # -- deciding -----------------------------------------------------------------------------------
    def audit_record(self, call: Call, out: Outcome) -> AuditRecord:
        """The audit record of ``out`` (the answered decision and reason; the guard's numbers) and the
        run's input row with its state after the decision."""
        v = out.verdict or Verdict(Decision.HALT, "no verdict")
        decision, reason = answered(out)
        numbers: dict[str, float] = {}
        for k, x in v.numbers.items() if v.numbers else ():
            try:
                numbers[str(k)] = float(x)
            except (TypeError, ValueError):
                continue
        call.extra["numbers"] = dict(numbers) if numbers else {}
        if call.extra_numbers:
            numbers.update(call.extra_numbers)
        guard = v.guard or "?"
        did = new_decision_id()
        if call.approval is not None:
            a = call.approval
            said = "approved" if a["approved"] else "refused"
            guard = f"human:{a['approver']}"
            did = a["id"]
            human = f"{said} by {a['approver']} (escalation {a['decision_id']}: {a['reason']})"
            expect = Decision.ALLOW if a["approved"] else Decision.REJECT
            reason = human if decision is expect else f"{human}; {decision.name}: {reason}"
        call.answer = (decision, reason)
        inp: dict[str, Any] = {"input": call.payload, "state": snapshot(call.st), "decision": decision.name}
        if out.ask:
            inp["verdict"] = v.to_dict()
        call.inp = {"idx": call.st.stored, "kind": call.kind, "payload": inp}
        call.record = AuditRecord(time=self.now(), run_id=call.st.run_id, decision=decision.name, reason=reason,
                                  guard=guard, numbers=numbers, decision_id=did, kind=call.kind,
                                  input_digest=input_digest(call.digest_input), guard_version=call.guard_version,
                                  extra=shadow_extra(v, {"principal": call.principal} if call.principal else {}))
        if call.idem is not None:  # the answer is stored with the decision: built now, sent as built
            call.body = dumps(self._body(call, out))
            call.idem_row = call.idem.row(call.st.run_id, did, call.record.time, call.body)
        return call.record

    async def decide(self, kind: str, run_id: str, proposal: Any, payload: dict[str, Any], digest_input: Any,
                     *, step: dict[str, Any] | None = None, extra_numbers: dict[str, float] | None = None,
                     claims: Mapping[str, Any] | None = None, principal: str = "", idem: IdemKey | None = None,
                     caller: Any = None) -> Response:
        """Decide ``proposal`` for ``run_id`` through the ``kind`` pipeline and answer (see the module doc).
        A request with an idempotency key (``idem``) already decided is answered from the store. ``claims``: a
        check's metadata (``{}`` for a step or signal), with the server's facts of ``caller`` (a Principal) over them
        (:mod:`.facts`), checked after the run's lock against the very guards that decide (a key they read as a grant
        is 422); None: no facts at all."""
        try:
            check_run_id(run_id)
        except InputError as exc:
            return error(400, str(exc))
        async with self.locks.hold(run_id):
            for _attempt in range(CONFLICT_RETRIES):
                if idem is not None and (done := await stored_answer(self, idem, run_id, proposal)) is not None:
                    return done
                if (refused := await self.binding.refused(run_id, principal)) is not None:
                    return refused
                try:
                    pipes = self.pipelines()
                    facts = None if claims is None else self.facts.of(claims, caller or ANONYMOUS, pipes.guards)
                    st = await self.astate(run_id, pipes, kind != "check")
                except RunExpired as exc:
                    return error(410, str(exc))
                except RequestValidationError as exc:  # a fact the deciding guards do not take from the request
                    return validation_response(list(exc.errors()))
                if st.stored and (refused := await self.binding.refused(run_id, principal)) is not None:
                    return refused  # the run was started by another identity since it was first asked (.binding)
                row = None if step is None else {"idx": len(st.context.trace), "payload": step}
                call = Call(kind, st, payload, digest_input, step=row, extra_numbers=extra_numbers,
                            principal=principal, idem=idem, guard_version=pipes.version)
                self._facts(st, facts)
                with in_request(call, self.runs):  # a decision that does not come back drops the run's state; one by
                    # guards with per-run memory (their threads) ends before the lock is let go, even cancelled (.runs)
                    out = await finished(pipes.pipes[kind].adecide(st, proposal, audit_kind=kind),
                                         kind not in pipes.memoryless)
                if call.record is not None and call.error is None and "audit_error" not in out.extra:
                    self._committed(call, proposal)
                    return self.answer(call, out)
                self.runs.end_run(run_id)  # its state moved on without a stored decision: rebuild next time
                if not conflict(call.error):
                    return self._unavailable(call)
            return error(409, f"run {run_id} is decided concurrently by another replica; retry")

    async def approve(self, run_id: str, decision_id: str, call: ToolCall, approved: bool, approver: str,
                      escalated: Mapping[str, Any], approval_id: str, idem: IdemKey | None = None) -> Response:
        """A human's answer to the ESCALATE ``decision_id`` of exactly ``call`` (``approver``: the identity of the
        approver credential), through the check pipeline's ``aresolve``: only an ESCALATE can be approved, a halted
        run stays halted, a refusal goes through the strategy. Not answered (nothing stored): a self-approval (403,
        :func:`.deciding.self_approval`), an escalation older than ``approval_ttl_s`` (410), an approval under other
        guards than those that escalated (409) or that they refuse now (409, :func:`.deciding.refused_now`)."""
        async with self.locks.hold(run_id):
            for _attempt in range(CONFLICT_RETRIES):
                if idem is not None and (done := await stored_answer(self, idem, run_id, call)) is not None:
                    return done
                try:
                    pipes = self.pipelines()
                    st = await finish_in_thread(self.state, run_id, pipes, False)
                except RunExpired as exc:
                    return error(410, str(exc))
                if (refused := await self_approval(self.store, run_id, approver, escalated)) is not None:
                    return refused  # under the lock, after the state read (an input stored since: a conflict)
                if await run_in_threadpool(self.store.decision, approval_id) is not None:
                    return error(409, f"decision {decision_id} was already answered")
                if approved and escalated.get("guard_version") != pipes.version:  # the guards that would resolve it
                    return error(409, f"the guards changed since decision {decision_id} was escalated (version "
                                      f"{escalated.get('guard_version')} -> {pipes.version}); the agent must ask again")
                age = self.now() - float(escalated["ts"])
                if not age <= self.settings.approval_ttl_s:  # a stale answer decides nothing (NaN too)
                    return error(410, f"the escalation {decision_id} expired {age:.0f}s after it was asked (approval_ttl_s "
                                      f"= {self.settings.approval_ttl_s:g}); the agent must ask again")
                inp = await run_in_threadpool(self.store.run_input, decision_id)
                if approved and (why := await refused_now(self, pipes, st, call, escalated, inp)) is not None:
                    return error(409, f"decision {decision_id} cannot be approved: {why}; the agent must ask again")
                vd = ((inp or {}).get("payload") or {}).get("verdict") or {}
                trail = list((vd.get("details") or {}).get("verdicts") or ([vd] if vd else []))
                verdict = Verdict(Decision.ESCALATE, str(escalated["reason"]), str(escalated["guard"]),
                                  dict(escalated.get("numbers") or {}), details={"verdicts": trail})
                asked = Outcome(False, None, message=verdict.reason, verdict=verdict, ask=True, proposal=call,
                                run_id=run_id, key=call_key(call))
                digest = {"run_id": run_id, "tool_call": call.to_dict()}
                c = Call("approval", st, {"decision_id": decision_id, "approved": approved, "approver": approver},
                          digest, approval={"id": approval_id, "decision_id": decision_id, "approved": approved,
                                            "approver": approver, "reason": escalated["reason"]}, principal=approver,
                          idem=idem, guard_version=pipes.version)
                with in_request(c, self.runs):
                    out = await pipes.pipes["check"].aresolve(asked, approved, approver=approver)
                    if c.record is None and c.error is None:  # answered without auditing (a halted run)
                        out = await pipes.pipes["check"]._awrite(st, out, "approval")
                if c.record is not None and c.error is None and "audit_error" not in out.extra:
                    self._committed(c, None)
                    return self.answer(c, out)
                self.runs.end_run(run_id)
                if not conflict(c.error):
                    return self._unavailable(c)
                if idem is None and await run_in_threadpool(self.store.decision, approval_id) is not None:
                    return error(409, f"decision {decision_id} was already answered")
            return error(409, f"run {run_id} is decided concurrently by another replica; retry")

    @staticmethod
    def _facts(st: RunState, facts: Mapping[str, Any] | None) -> None:
        """This request's facts (``/v1/check``'s metadata) replace the previous request's; reserved keys stay."""
        md = st.context.metadata
        kept = with_facts(md, facts)
        md.clear()
        md.update(kept)

    def _committed(self, call: Call, proposal: Any) -> None:
        st = call.st
        st.stored += 1
        st.last = call.record.time if call.record is not None else time.time()
        st.version = call.version  # the run's version right after this commit (None: read the store next time)
        if call.kind == "step" and isinstance(proposal, Step):
            st.context.trace.append(proposal)

    def _unavailable(self, call: Call) -> Response:
        what = type(call.error).__name__ if call.error is not None else "no audit record"
        return error(503, f"audit store unavailable, no verdict given: {what}")

    def _body(self, call: Call, out: Outcome) -> dict[str, Any]:
        rec = call.record
        assert rec is not None
        decision, reason = call.answer
        v = out.verdict
        body: dict[str, Any] = {
            "decision_id": rec.decision_id, "run_id": rec.run_id, "decision": decision.name,
            "allowed": decision is Decision.ALLOW, "reason": reason, "guard": rec.guard,
            "numbers": call.extra.get("numbers", {}), "execute": out.execute, "stop": out.stop,
            "message": out.message,
            "verdicts": list((v.details or {}).get("verdicts") or [v.to_dict()]) if v is not None else [],
        }
        if decision in (Decision.MODIFY, Decision.RECOVER) and out.action is not None:
            body["action"] = out.action.to_dict() if hasattr(out.action, "to_dict") else out.action
        if call.step is not None:
            body["step"] = call.step["idx"]
        return body

    def answer(self, call: Call, out: Outcome) -> Response:
        decision = call.answer[0]
        self.metrics.decision(call.kind, decision.name)
        if call.body is not None:
            resp: Response = BytesJSON(call.body)
            if decision is not Decision.ESCALATE or self.webhook is None:
                return resp
            body = loads(call.body)
        else:
            body = self._body(call, out)
            resp = BytesJSON(dumps(body))
        if decision is Decision.ESCALATE and self.webhook is not None:
            from .webhook import escalation_event

            self.webhook.notify(escalation_event(body, (call.payload or {}).get("tool_call")))
        return resp
