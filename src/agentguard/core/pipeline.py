"""One decision path for every entry point: :class:`Pipeline`.

Every adapter (LangChain, OpenAI Agents, MCP, LiteLLM, streaming), the service and ``agentguard decide``
call :meth:`Pipeline.decide` / :meth:`Pipeline.adecide`; an adapter only translates its framework's
objects into a proposal and an :class:`~agentguard.core.enforcement.Outcome` back into the framework's
own shapes. One call of ``decide``:

1. **converts** the proposal once (:func:`to_proposal`: a ``ToolCall``, a ``Step``, or a mapping with a
   ``name`` read as a tool call; anything else fails closed);
2. finds the run's state in its **one home** (:class:`RunState` in a :class:`~.runs.RunMemory`): a run the
   memory had to let go is rebuilt (``rebuild``) or answered HALT, never started over; a run already
   halted stays halted (the latch lives here, not in an adapter or a field the client writes);
3. **decides fail-closed** (:func:`~.guard.run_guard`: an exception, a guard's cancellation, a non-Verdict
   or a late verdict never allows; a stack combines by :attr:`~.types.Decision.strictness`, so a refused
   call is never offered to a human) and a MODIFY's or RECOVER's replacement is decided too (:mod:`.replacement`);
4. **enforces**: an ESCALATE becomes ``Outcome(ask=True)`` (the adapter asks a human in its framework's
   own way and calls :meth:`Pipeline.resolve`); every other verdict goes through the enforcement
   strategy (:mod:`~.strategies`): the one given, else the ``strategy`` of the guard that decided (a
   policy table's ``strategy = "CRP+TEH"`` takes effect through every adapter), else
   :class:`~.strategies.Default`;
5. **audits** (one :class:`~.audit.AuditRecord` per decision and per human answer; a sink that fails
   turns the outcome into the fail-closed refusal, with ``extra['audit_error']``);
6. **remembers**: a stopping outcome latches HALT; :meth:`Pipeline.record` appends to the run's trace.

Calls decided together (one model turn) are matched to their outcomes by what they are
(:func:`call_key`: the tool name and canonical arguments), never by a call id the client chose: see
:meth:`Pipeline.decide_turn` and :meth:`Pipeline.take`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

from .audit import AuditRecord, AuditSink
from .enforcement import Enforcement, Outcome
from .errors import InputError
from .guard import Guard, fail_closed
from .proposal import approval_request, call_key, to_proposal
from .replacement import adecided, decided
from .runs import RunEvicted, RunMemory, end_run, walk_guards
from .shadow import Shadowed
from .telemetry import decision_span, enable_from_env
from .strategies import Default, halted_tool, strategy as strategy_by_name, tool_of
from .types import Context, Decision, Step, ToolCall, Trace, Verdict

__all__ = ["Pipeline", "RunState", "approval_request", "call_key", "to_proposal"]  # the last three from .proposal

#: ``Context.metadata`` keys the pipeline and the strategies own; facts from a request never set them
RESERVED_KEYS = frozenset({"adapter", "halted", "halted_tools", "replan_rounds"})


@dataclass
class RunState:
    """The one home of a run's state: its context (trace, facts, strategy counters), the latched HALT,
    the outcomes of calls decided but not yet executed, and the locks that serialise its decisions."""

    context: Context
    halted: Verdict | None = None
    pending: dict[str, list[Outcome]] = field(default_factory=dict)
    decisions: int = 0
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _alocks: dict[int, asyncio.Lock] = field(default_factory=dict, repr=False)

    @property
    def run_id(self) -> str:
        return self.context.run_id

    def alock(self) -> asyncio.Lock:
        """The run's asyncio lock for the running event loop."""
        loop = id(asyncio.get_running_loop())
        with self.lock:
            lk = self._alocks.get(loop)
            if lk is None:
                lk = self._alocks[loop] = asyncio.Lock()
            return lk


class Pipeline:
    """Convert, decide fail-closed, enforce, audit, remember: see the module docstring.

    ``guard``: any :class:`~.guard.Guard` (usually a :class:`~.guard.GuardStack`). ``strategy``: an
    :class:`~.enforcement.Enforcement` or a strategy name (``"CRP+TEH"``); None uses each deciding
    guard's own ``strategy`` or :class:`~.strategies.Default`. ``audit``: a sink (``write`` or ``awrite``).
    ``runs``: the run memory (``max_runs`` runs; ``rebuild(run_id) -> RunState | None`` restores an
    evicted run). ``state_fn(context, proposal)`` sets ``context.state`` before each decision.
    ``recorder``: a trace recorder (``trace(run_id, adapter=...)`` / ``finish(run_id)``).
    ``escalate``: ``"ask"`` (an ESCALATE asks a human) or ``"reject"`` (refused without asking).
    ``approval_ttl_s``: an ``ask`` answered later than this is refused (None: never expires).
    ``shadow``: the whole guard observes only (:mod:`.shadow`: audited, the outcome is ALLOW). Each
    decision is an OpenTelemetry span when :mod:`.telemetry` is on.
    """

    def __init__(self, guard: Guard, *, strategy: Enforcement | str | None = None,
                 audit: AuditSink | None = None, runs: RunMemory[RunState] | None = None,
                 max_runs: int = 10_000, rebuild: Callable[[Hashable], RunState | None] | None = None,
                 on_error: Decision | str = Decision.HALT, timeout_s: float | None = None,
                 state_fn: Callable[[Context, Any], Any] | None = None, adapter: str = "",
                 recorder: Any = None, escalate: str = "ask", shadow: bool = False,
                 approval_ttl_s: float | None = 3600.0) -> None:
        if not isinstance(guard, Guard):
            raise InputError(f"{guard!r} is not a Guard (needs name, check and acheck)")
        if shadow:
            guard = Shadowed(None, [guard], name=str(guard.name), on_error=on_error)
        enable_from_env()
        if escalate not in ("ask", "reject"):
            raise InputError(f"escalate must be 'ask' or 'reject', not {escalate!r}")
        self.guard = guard
        self.enforcement: Enforcement | None = (strategy_by_name(strategy) if isinstance(strategy, str)
                                                else strategy)
        self.audit = audit
        self.runs: RunMemory[RunState] = runs if runs is not None else RunMemory(
            self._no_factory, max_runs, rebuild=rebuild, on_drop=self._dropped)
        self.on_error = Decision.parse(on_error)
        if not self.on_error.refuses:
            raise InputError(f"on_error must block (REJECT, ESCALATE or HALT), not {self.on_error.name}")
        self.timeout_s = timeout_s
        self.state_fn = state_fn
        self.adapter = adapter
        self.recorder = recorder
        self.escalate = escalate
        self.approval_ttl_s = approval_ttl_s
        tree = walk_guards(guard)
        self._strategies: dict[str, Enforcement] = {
            str(g.name): g.strategy for g in tree
            if isinstance(getattr(g, "strategy", None), Enforcement) and getattr(g, "name", None)}
        self._settlers = [g for g in tree if callable(getattr(g, "settle_approval", None))]
        self._default = Default()

    def __repr__(self) -> str:
        strat = getattr(self.enforcement, "name", "per-guard")
        return f"Pipeline({self.guard!r}, enforcement={strat}, adapter={self.adapter!r}, runs={len(self.runs)})"

    # -- runs -------------------------------------------------------------------------------------
    @staticmethod
    def _no_factory() -> RunState:  # pragma: no cover - RunMemory.get is never called without a run
        raise AssertionError("runs are created by Pipeline.run")

    def _dropped(self, run_id: Hashable, st: RunState) -> None:
        end_run(self.guard, run_id)

    def _new_run(self, run_id: Hashable) -> RunState:
        run_id = str(run_id)
        trace = (self.recorder.trace(run_id, adapter=self.adapter) if self.recorder is not None
                 else Trace(labels={"adapter": self.adapter}, run_id=run_id))
        return RunState(Context(run_id=run_id, trace=trace, metadata={"adapter": self.adapter}))

    def run(self, run_id: str, /, **facts: Any) -> RunState:
        """The state of ``run_id`` (created on first use). ``facts`` (trusted per-run facts the
        application sets) are merged into ``context.metadata``, except :data:`RESERVED_KEYS`.
        Raises :class:`~.runs.RunEvicted` for a run that was evicted and cannot be rebuilt."""
        st = self.runs.get(str(run_id), self._new_run)
        for k, v in facts.items():
            if k not in RESERVED_KEYS:
                st.context.metadata[k] = v
        return st

    def finish(self, run_id: str, **labels: Any) -> Trace | None:
        """End a run on purpose: its state and every guard's memory of it are forgotten, its trace is
        labelled and finished (returned)."""
        st = self.runs.peek(str(run_id))
        self.runs.end_run(str(run_id))
        if st is None:
            return None
        st.context.trace.labels.update(labels)
        if self.recorder is not None:
            return self.recorder.finish(str(run_id))
        return st.context.trace

    def halted(self, run_id: str) -> Verdict | None:
        """The latched HALT of a run (None while it runs; a HALT for a run evicted beyond rebuilding)."""
        st = self.runs.peek(str(run_id))
        if st is not None:
            return st.halted
        if self.runs.evicted(str(run_id)):
            return Verdict.halt(f"run {run_id} was evicted and cannot be rebuilt", self.guard.name)
        return None

    # -- deciding ---------------------------------------------------------------------------------
    def _state(self, run: str | Context | RunState, facts: Mapping[str, Any]) -> RunState:
        if isinstance(run, RunState):
            return run
        if isinstance(run, Context):
            st = self.run(run.run_id, **facts)
            if run is not st.context:  # a caller's own context: its facts and trace are what it says
                for k, v in run.metadata.items():
                    if k not in RESERVED_KEYS:
                        st.context.metadata[k] = v
                if run.trace.steps and not st.context.trace.steps:
                    st.context.trace.steps.extend(run.trace.steps)
                if run.state is not None:
                    st.context.state = run.state
            return st
        return self.run(str(run), **facts)

    def _prepare(self, st: RunState, proposal: Any, refuse: Verdict | None = None) -> tuple[Any, Verdict | None]:
        """The typed proposal, and the verdict answering without the guards: the run's HALT, else ``refuse``."""
        if st.halted is not None:
            return proposal, Verdict(Decision.HALT, f"run halted earlier: {st.halted.reason}",
                                     st.halted.guard or self.guard.name)
        try:
            typed = to_proposal(proposal)
            if self.state_fn is not None:
                st.context.state = self.state_fn(st.context, typed)
        except BaseException as exc:  # noqa: BLE001 - unreadable input or a failing state function: fail closed
            return proposal, fail_closed(self.guard.name, exc, self.on_error)
        return typed, refuse if refuse is None or isinstance(refuse, Verdict) and refuse.decision.refuses \
            else Verdict.halt(f"refuse= is not a refusal: {type(refuse).__name__}")

    def _strategy(self, verdict: Verdict) -> Enforcement:
        if self.enforcement is not None:
            return self.enforcement
        return self._strategies.get(verdict.guard, self._default)

    def _enforce(self, st: RunState, verdict: Verdict, proposal: Any) -> Outcome:
        if verdict.decision is Decision.ESCALATE and halted_tool(st.context.metadata, proposal) is not None:
            verdict = Verdict(Decision.REJECT, f"tool {tool_of(proposal)} was halted earlier in this run (not asked): "
                              f"{verdict.reason}", verdict.guard, verdict.numbers, details=verdict.details)
        if verdict.decision is Decision.ESCALATE and self.escalate == "ask":
            out = Outcome(False, None, message=f"waiting for human approval: {verdict.reason}", verdict=verdict, ask=True)
        else:
            if verdict.decision is Decision.ESCALATE:  # escalate="reject": refused without asking
                verdict = Verdict(Decision.REJECT, f"needs human approval (not asked): {verdict.reason}",
                                  verdict.guard, verdict.numbers, details=verdict.details)
            try:
                out = self._strategy(verdict).apply(verdict, st.context, proposal)
            except BaseException as exc:  # noqa: BLE001 - a failing strategy fails closed
                v = fail_closed(getattr(self._strategy(verdict), "name", "strategy"), exc, self.on_error)
                out = Outcome(False, None, stop=v.decision is Decision.HALT, message=v.reason, verdict=v)
            if not isinstance(out, Outcome) or (out.execute and verdict.decision.refuses):
                out = Outcome(False, None, stop=True, message=f"enforcement gave no valid outcome: {verdict.reason}",
                              verdict=verdict)
            if out.verdict is None:
                out.verdict = verdict
        out.proposal, out.run_id = proposal, st.run_id
        out.extra.setdefault("state", st.context.state)  # the state it was decided in, for record()
        if out.ask:  # resolve() refuses an answer after approval_ttl_s, or for a call changed since it was asked
            out.extra.setdefault("asked_at", time.time())
            out.key = out.key or (call_key(proposal) if isinstance(proposal, ToolCall) else "")
        if out.stop and st.halted is None:  # the first halt is the run's reason (no re-wrapping per later call)
            st.halted = out.verdict if out.verdict is not None and out.verdict.decision is Decision.HALT else \
                Verdict(Decision.HALT, out.message or "run stopped", getattr(out.verdict, "guard", "") or "")
            st.context.metadata["halted"] = st.halted.reason
        return out

    def _audit_record(self, st: RunState, out: Outcome, kind: str) -> AuditRecord:
        v = out.verdict or Verdict(Decision.HALT, "no verdict")
        numbers: dict[str, float] = {}
        for k, x in v.numbers.items():
            try:
                numbers[str(k)] = float(x)
            except (TypeError, ValueError):
                continue
        call = out.proposal.to_dict() if isinstance(out.proposal, ToolCall) else {}
        extra: dict[str, Any] = {"adapter": self.adapter, "execute": out.execute, "stop": out.stop, "ask": out.ask}
        for k in ("verdicts", "shadow"):
            if v.details.get(k):
                extra[k] = v.details[k]
        for k in ("approver", "human"):
            if k in out.extra:
                extra[k] = out.extra[k]
        return AuditRecord(time=time.time(), run_id=st.run_id, decision=v.decision.name, reason=v.reason,
                           guard=v.guard, numbers=numbers, kind=kind, call=call, extra=extra)

    def _audit_failed(self, out: Outcome, exc: BaseException) -> Outcome:
        v = fail_closed("audit", exc, self.on_error)
        return Outcome(False, None, stop=v.decision is Decision.HALT, message=f"no decision without an audit record: "
                       f"{v.reason}", verdict=v, proposal=out.proposal, run_id=out.run_id, key=out.key,
                       extra={"audit_error": f"{type(exc).__name__}: {exc}"})

    def _write(self, st: RunState, out: Outcome, kind: str) -> Outcome:
        if self.audit is None:
            return out
        try:
            self.audit.write(self._audit_record(st, out, kind))
        except BaseException as exc:  # noqa: BLE001 - no audit record, no permission
            return self._audit_failed(out, exc)
        return out

    async def _awrite(self, st: RunState, out: Outcome, kind: str) -> Outcome:
        if self.audit is None:
            return out
        try:
            rec = self._audit_record(st, out, kind)
            awrite = getattr(self.audit, "awrite", None)
            if callable(awrite):
                await awrite(rec)
            else:
                self.audit.write(rec)
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, asyncio.CancelledError):
                raise
            return self._audit_failed(out, exc)
        return out

    def _start(self, run: str | Context | RunState, facts: Mapping[str, Any]) -> RunState | Outcome:
        try:
            return self._state(run, facts)
        except RunEvicted as exc:
            v = Verdict(Decision.HALT, str(exc), self.guard.name, details={"error": "RunEvicted"})
            rid = run.run_id if isinstance(run, (Context, RunState)) else str(run)
            return Outcome(False, None, stop=True, message=v.reason, verdict=v, run_id=rid)

    def decide(self, run: str | Context | RunState, proposal: Any, /, *, audit_kind: str = "check",
               refuse: Verdict | None = None, **facts: Any) -> Outcome:
        """The outcome for ``proposal`` in ``run`` (a run id, a Context or a RunState); see the module doc.
        ``refuse``: the adapter's refusal before the guard, enforced, audited and remembered like any verdict."""
        st = self._start(run, facts)
        if isinstance(st, Outcome):
            return st
        with st.lock:
            typed, early = self._prepare(st, proposal, refuse)
            with decision_span(self.adapter, st.run_id, typed, audit_kind) as span:
                v = early or decided(self.guard, st.context, typed, timeout_s=self.timeout_s, on_error=self.on_error)
                st.decisions += 1
                out = span.done(self._write(st, self._enforce(st, v, typed), audit_kind))
            return out

    async def adecide(self, run: str | Context | RunState, proposal: Any, /, *, audit_kind: str = "check",
                      refuse: Verdict | None = None, **facts: Any) -> Outcome:
        """Async :meth:`decide`: synchronous guards run in worker threads, abandoned at ``timeout_s``."""
        st = self._start(run, facts)
        if isinstance(st, Outcome):
            return st
        async with st.alock():
            typed, early = self._prepare(st, proposal, refuse)
            with decision_span(self.adapter, st.run_id, typed, audit_kind) as span:
                v = early or await adecided(self.guard, st.context, typed, timeout_s=self.timeout_s,
                                              on_error=self.on_error)
                st.decisions += 1
                out = span.done(await self._awrite(st, self._enforce(st, v, typed), audit_kind))
            return out

    # -- a model turn: several calls decided together, matched by identity -------------------------
    def _hold(self, st: RunState, outs: Sequence[Outcome]) -> None:
        with st.lock:
            for o in outs:
                if not o.key and isinstance(o.proposal, (ToolCall, Step)):
                    o.key = call_key(o.proposal)  # computed only for held outcomes (a turn), not per decision
                st.pending.setdefault(o.key, []).append(o)

    def decide_turn(self, run: str | Context | RunState, calls: Iterable[Any], /, **facts: Any) -> list[Outcome]:
        """Decide every call of one model turn before any runs; each outcome is held until :meth:`take`.
        A stopping outcome stops the whole turn (the calls after it are answered with the HALT)."""
        st = self._start(run, facts)
        outs = [self.decide(run if isinstance(st, Outcome) else st, c) for c in calls]
        if not isinstance(st, Outcome):
            self._hold(st, outs)
        return outs

    async def adecide_turn(self, run: str | Context | RunState, calls: Iterable[Any], /, **facts: Any) -> list[Outcome]:
        """Async :meth:`decide_turn`."""
        st = self._start(run, facts)
        outs = [await self.adecide(run if isinstance(st, Outcome) else st, c) for c in calls]
        if not isinstance(st, Outcome):
            self._hold(st, outs)
        return outs

    def take(self, run: str | Context | RunState, call: Any) -> Outcome | None:
        """The held outcome of ``call`` (matched by :func:`call_key`, never by call id), removed; when
        several identical calls are held, the strictest outcome goes first. None when none is held."""
        st = self._start(run, {})
        if isinstance(st, Outcome):
            return st
        try:
            key = call_key(to_proposal(call))
        except InputError:
            return None
        with st.lock:
            held = st.pending.get(key)
            if not held:
                return None
            i = max(range(len(held)), key=lambda j: (int(held[j].stop), getattr(held[j].verdict, "decision", Decision.HALT)
                                                     .strictness))
            out = held.pop(i)
            if not held:
                del st.pending[key]
            return out

    def drop_pending(self, run: str | Context | RunState) -> None:
        """Forget the held outcomes of a run (its turn ended)."""
        st = self.runs.peek(run.run_id if isinstance(run, (Context, RunState)) else str(run))
        if st is not None:
            with st.lock:
                st.pending.clear()

    # -- a human's answer to an ask ----------------------------------------------------------------
    def _answer(self, st: RunState, asked: Outcome, approved: bool, approver: str,
                settled: Verdict | None) -> Outcome:
        v = asked.verdict or Verdict(Decision.ESCALATE, "approval")
        if approved and (settled is None or settled.decision is Decision.ALLOW):
            ok = Verdict(Decision.ALLOW, f"approved by {approver}: {v.reason}", v.guard, v.numbers, details=v.details)
            out = Outcome(True, asked.proposal, message=ok.reason, verdict=ok,
                          extra={"human": "approved", "approver": approver, "state": asked.extra.get("state")})
        else:
            why = (f"approval not confirmed by {settled.guard}: {settled.reason}" if approved and settled is not None
                   else f"not approved by {approver}: {v.reason}")
            refused = Verdict(Decision.REJECT, why, v.guard, v.numbers, details=v.details)
            out = self._enforce(st, refused, asked.proposal)
            out.extra.update({"human": "refused", "approver": approver, "state": asked.extra.get("state")})
        out.proposal, out.run_id, out.key = asked.proposal, st.run_id, asked.key
        return out

    def _expired(self, asked: Outcome, st: RunState) -> Verdict | None:
        """The refusal of an answer after ``approval_ttl_s``, for a changed call, or for a tool halted since it was asked."""
        if asked.key and isinstance(asked.proposal, ToolCall) and call_key(asked.proposal) != asked.key:
            return Verdict(Decision.REJECT, "the call changed after it was asked about: decide it again", "pipeline")
        if halted_tool(st.context.metadata, asked.proposal) is not None:
            return Verdict(Decision.REJECT, f"tool {tool_of(asked.proposal)} was halted after it was asked", "pipeline")
        at, ttl = asked.extra.get("asked_at"), self.approval_ttl_s
        age = time.time() - at if isinstance(at, float) else None
        if ttl is None or age is None or age <= ttl:
            return None
        return Verdict(Decision.REJECT, f"approval expired ({age:.0f} s after it was asked, approval_ttl_s={ttl:g})",
                       "pipeline")

    def _settle(self, asked: Outcome, approved: bool, approver: str) -> Verdict | None:
        for g in self._settlers:
            try:
                v = g.settle_approval(asked.verdict, asked.proposal, approved, approver)
            except Exception as exc:  # noqa: BLE001 - fail closed
                return Verdict(Decision.REJECT, f"approval not recorded ({type(exc).__name__}: {exc})", g.name)
            if v is not None:
                return v if isinstance(v, Verdict) else Verdict(Decision.REJECT, "approval not recorded", g.name)
        return None

    async def _asettle(self, asked: Outcome, approved: bool, approver: str) -> Verdict | None:
        for g in self._settlers:
            try:
                fn = getattr(g, "asettle_approval", None)
                v = (await fn(asked.verdict, asked.proposal, approved, approver) if callable(fn)
                     else g.settle_approval(asked.verdict, asked.proposal, approved, approver))
            except Exception as exc:  # noqa: BLE001 - fail closed
                return Verdict(Decision.REJECT, f"approval not recorded ({type(exc).__name__}: {exc})", g.name)
            if v is not None:
                return v if isinstance(v, Verdict) else Verdict(Decision.REJECT, "approval not recorded", g.name)
        return None

    def _check_asked(self, asked: Outcome) -> None:
        if not asked.ask or asked.verdict is None or asked.verdict.decision is not Decision.ESCALATE:
            raise InputError("resolve() answers an outcome with ask=True (an ESCALATE), nothing else")

    def resolve(self, asked: Outcome, approved: bool, *, approver: str = "human") -> Outcome:
        """A human's answer to an ``ask`` outcome: only ``approved is True`` runs the call, and then only
        exactly the proposal that was asked about, after the escalating guard (the service's
        RemoteGuard) confirms it. A refusal goes through the enforcement strategy like any REJECT.
        For an edited call, decide the edited call again (:meth:`decide`) and resolve that outcome."""
        self._check_asked(asked)
        st = self._start(asked.run_id, {})
        if isinstance(st, Outcome):
            return st
        with st.lock:
            if st.halted is not None:
                return self._enforce(st, Verdict(Decision.HALT, f"run halted earlier: {st.halted.reason}",
                                                 st.halted.guard), asked.proposal)
            out = self._answer(st, asked, approved is True, approver,
                               self._expired(asked, st) or self._settle(asked, approved is True, approver))
            return self._write(st, out, "approval")

    async def aresolve(self, asked: Outcome, approved: bool, *, approver: str = "human") -> Outcome:
        """Async :meth:`resolve`."""
        self._check_asked(asked)
        st = self._start(asked.run_id, {})
        if isinstance(st, Outcome):
            return st
        async with st.alock():
            if st.halted is not None:
                return self._enforce(st, Verdict(Decision.HALT, f"run halted earlier: {st.halted.reason}",
                                                 st.halted.guard), asked.proposal)
            settled = self._expired(asked, st) or await self._asettle(asked, approved is True, approver)
            out = self._answer(st, asked, approved is True, approver, settled)
            return await self._awrite(st, out, "approval")

    # -- recording ----------------------------------------------------------------------------------
    def record(self, outcome: Outcome, observation: Any = None, output: str | None = None) -> Step | None:
        """Append what happened (the outcome, and what the tool returned) to the run's trace."""
        st = self.runs.peek(outcome.run_id)
        if st is None:
            return None
        v = outcome.verdict or Verdict(Decision.HALT, "no verdict")
        signals = {"decision": float(int(v.decision))}
        for k, x in v.numbers.items():
            try:
                signals[k] = float(x)
            except (TypeError, ValueError):
                pass
        with st.lock:
            step = Step(state=outcome.extra.get("state", st.context.state), action=outcome.proposal, observation=observation, output=output,
                        signals=signals)
            st.context.trace.append(step)
            labels = st.context.trace.labels
            if not outcome.execute:
                labels["blocked"] = int(labels.get("blocked", 0)) + 1
            if outcome.stop or v.decision is Decision.HALT:
                labels["halted"] = True
                labels["halt_reason"] = v.reason
        return step
