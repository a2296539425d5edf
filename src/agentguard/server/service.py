"""What every route of the service shares: its stores, its guards, and the decide-audit-answer path.

:class:`Service` holds the settings, the guard source, the audit and trace stores, the run registry
and the metrics of one application, plus the steps every decision endpoint takes: parse the body,
ask the guard (fail closed), write the audit record, and only then answer.

Per-run memory: the service shares ONE instance of each guard across all runs and passes the run id
in ``Context.run_id``; a stateful guard keeps its per-run state in an
:class:`agentguard.core.RunMemory` keyed by it. When a run ends (it expires, is evicted, or its
cached state is dropped because another replica moved it on) the service calls ``end_run(run_id)``
on every guard inside the stack that has one (:func:`agentguard.core.runs.end_run`), and when a
process meets a run it has not seen (or a hot reload swaps the guards) it replays the run's earlier
inputs into the guard so its state is the same as if it had seen them.

Fallback for third-party guards: a guard that keeps per-sequence state in itself (it has a
``reset()`` method) but has no ``end_run`` cannot be shared across runs. Such a guard gets a per-run
deep copy, reset and replayed, as before (:func:`.guards.needs_copy`). Guards with ``end_run`` (all
shipped ones, once converted) are never copied.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ..core.audit import AuditRecord
from ..core.errors import InputError
from ..core.guard import arun_guard
from ..core.runs import end_run
from ..core.types import Context, Decision, Step, ToolCall, Trace, Verdict
from .audit import AuditStore, input_digest, new_decision_id
from .gate import JSONResponse, error
from .guards import GuardSource, fresh_copy, needs_copy, valid_run_id
from .jsonutil import RequestJSONError, loads_request
from .metrics import Metrics
from .models import StepIn
from .runs import RunRegistry, RunState
from .settings import ServerSettings
from .traces import TraceStore

__all__ = ["Service", "to_step", "validation_response"]


def validation_response(errors: list[dict[str, Any]]) -> JSONResponse:
    """400 for malformed JSON, 422 with a one-line summary for invalid fields."""
    if any(e.get("type") == "json_invalid" for e in errors):
        e = next(e for e in errors if e.get("type") == "json_invalid")
        ctx = e.get("ctx", {}).get("error", "")
        return error(400, f"malformed JSON body: {ctx or e.get('msg', '')}".rstrip(": "))
    parts = []
    clean = []
    for e in errors[:20]:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
        clean.append({"loc": [str(x) for x in e.get("loc", ())], "msg": e.get("msg"), "type": e.get("type")})
    more = f" (+{len(errors) - 20} more)" if len(errors) > 20 else ""
    return error(422, "invalid request: " + "; ".join(parts) + more, clean)


def to_step(s: StepIn) -> Step:
    """A validated step body as a core :class:`~agentguard.core.Step` (tool-call actions as ToolCall)."""
    action: Any = s.action
    if action is not None and not isinstance(action, str):
        action = ToolCall(action.name, action.arguments, action.call_id)
    return Step(state=s.state, action=action, observation=s.observation, output=s.output,
                signals=dict(s.signals), time=s.time if s.time is not None else time.time())


def check_run_id(run_id: str) -> None:
    if not valid_run_id(run_id):
        raise InputError(f"invalid run id {run_id[:40]!r}: use 1-128 characters from A-Z a-z 0-9 _ . : -")


class Service:
    """The state of one application and the decide -> audit -> answer path its routes share."""

    def __init__(self, settings: ServerSettings, source: GuardSource, store: AuditStore) -> None:
        self.settings = settings
        self.source = source
        self.store = store
        self.traces = TraceStore(settings.traces_dir)
        self.runs = RunRegistry(settings.run_ttl_s, on_drop=self._on_drop)
        self.metrics = Metrics()
        g = self.metrics.gauges
        g["agentguard_active_runs"] = lambda: len(self.runs)
        g["agentguard_runs_expired_total"] = lambda: self.runs.expired_total
        g["agentguard_audit_batches_total"] = lambda: store.stats["batches"]
        g["agentguard_audit_records_total"] = lambda: store.stats["records"]
        g["agentguard_guard_reloads_total"] = lambda: source.reloads

    # -- parsing and deciding ---------------------------------------------------------------------
    @staticmethod
    def parse(model: type, raw: bytes) -> Any:
        if not raw:
            raise RequestValidationError([{"type": "json_invalid", "loc": ("body",), "msg": "empty body",
                                           "ctx": {"error": "empty body"}}])
        try:
            data = loads_request(raw)
        except RequestJSONError as exc:
            raise RequestValidationError([{"type": "json_invalid", "loc": ("body",), "msg": str(exc),
                                           "ctx": {"error": str(exc)}}]) from None
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False, include_input=False)) from None

    @staticmethod
    async def decide(guard: Any, context: Context, proposal: Any) -> Verdict:
        """The guard's verdict under the one fail-closed rule (:func:`agentguard.core.guard.arun_guard`):
        anything it raises, SystemExit included, is a HALT and the service keeps answering."""
        return await arun_guard(guard, context, proposal)

    async def audit_and_answer(self, run_id: str, kind: str, digest_input: Any, v: Verdict,
                               step: dict[str, Any] | None = None,
                               extra_numbers: dict[str, float] | None = None) -> tuple[Response, str]:
        """Write the verdict's audit record, then answer; 503 (no verdict) when the write fails."""
        numbers: dict[str, float] = {}
        for k, x in v.numbers.items():
            try:
                numbers[str(k)] = float(x)
            except (TypeError, ValueError):
                continue
        stored = {**numbers, **extra_numbers} if extra_numbers else numbers
        rec = AuditRecord(time=time.time(), run_id=run_id, decision=v.decision.name, reason=v.reason,
                          guard=v.guard or "?", numbers=stored, decision_id=new_decision_id(), kind=kind,
                          input_digest=input_digest(digest_input), guard_version=self.source.version)
        try:
            await self.store.arecord(rec, step)
        except Exception as exc:
            from sqlalchemy.exc import IntegrityError

            if isinstance(exc, IntegrityError) and step is not None:
                return error(409, f"step {step['idx']} of run {run_id} was recorded concurrently; retry"), ""
            return error(503, f"audit store unavailable, no verdict given: {type(exc).__name__}"), ""
        self.metrics.decision(kind, v.decision.name)
        body: dict[str, Any] = {
            "decision_id": rec.decision_id, "run_id": run_id, "decision": v.decision.name,
            "allowed": v.decision is Decision.ALLOW, "reason": v.reason, "guard": rec.guard, "numbers": numbers,
        }
        if v.action is not None:
            body["action"] = v.action.to_dict() if hasattr(v.action, "to_dict") else v.action
        if step is not None:
            body["step"] = step["idx"]
        return JSONResponse(body), rec.decision_id

    # -- runs ---------------------------------------------------------------------------------------
    def _rebuild(self, run_id: str) -> tuple[Trace, float] | None:
        rows = self.store.run_steps(run_id)
        if not rows:
            return None
        trace = Trace(run_id=run_id)
        for r in rows:
            trace.append(to_step(StepIn.model_validate(r["payload"])))
        return trace, float(rows[-1]["ts"])

    async def run_state(self, run_id: str) -> RunState:
        """The run's state, rebuilt from the audit store when another worker/replica moved it on."""
        check_run_id(run_id)
        runs = self.runs
        st = runs.peek(run_id)
        n, _last = await run_in_threadpool(self.store.run_step_count, run_id)
        if st is not None and len(st.trace) != n:
            runs.forget(run_id)  # another worker/replica appended steps: rebuild from the store
        if st is None or len(st.trace) != n:
            if n:
                rebuilt = await run_in_threadpool(self._rebuild, run_id)
                return runs.get(run_id, rebuild=lambda _r: rebuilt)
        return runs.get(run_id)

    def signal_trace(self, run_id: str) -> Trace:
        """The signals a run streamed so far, from the audit store (``signal:<name>`` numbers)."""
        t = Trace(run_id=run_id)
        for d in self.store.decisions(run_id=run_id, kind="signal", limit=1_000_000):
            sig = {k[7:]: float(x) for k, x in d["numbers"].items() if k.startswith("signal:")}
            if sig:
                t.append(Step(signals=sig, time=d["ts"]))
        return t

    def run_guard(self, st: RunState, kind: str, base: Any, replay: Callable[[RunState, Any], None]) -> Any:
        """The guard that decides for this run: ``base`` itself (shared; its per-run memory is keyed
        by the run id), or a per-run copy for a stateful guard without ``end_run`` (fallback). The
        first time a process uses a guard for a run (a new run, a run rebuilt from the store, a
        hot-reloaded guard) the guard forgets any stale state of that run id and is brought up to date
        by replaying the run's earlier inputs."""
        key = f"{kind}_guard"
        held = st.extra.get(key)
        if held is not None and held[0] is base:
            return held[1]
        if needs_copy(base):
            g = fresh_copy(base)
        else:
            g = base
            end_run(g, st.run_id)
        replay(st, g)
        st.extra[key] = (base, g)
        return g

    def drop_guard(self, st: RunState, kind: str) -> None:
        """Forget the run in the guard of ``kind`` (before its state is rebuilt)."""
        held = st.extra.pop(f"{kind}_guard", None)
        if held is not None and held[1] is held[0]:
            end_run(held[1], st.run_id)

    def _on_drop(self, st: RunState) -> None:
        """A run left the registry (expired, evicted or forgotten): its guards forget it."""
        for kind in ("step", "signal"):
            self.drop_guard(st, kind)

    @staticmethod
    def replay_steps(st: RunState, g: Any) -> None:
        prefix = Trace(run_id=st.run_id)
        for s in st.trace.steps:
            try:
                g.check(Context(run_id=st.run_id, trace=prefix, state=s.state), s)
            except Exception:  # noqa: BLE001 - it failed (closed) when first checked; replay only rebuilds state
                pass
            prefix.append(s)

    @staticmethod
    def replay_signals(st: RunState, g: Any) -> None:
        prefix = Trace(run_id=st.run_id)
        for s in st.extra.get("signal_trace", Trace()).steps:
            try:
                g.check(Context(run_id=st.run_id, trace=prefix), s)
            except Exception:  # noqa: BLE001 - it failed (closed) when first checked; replay only rebuilds state
                pass
            prefix.append(s)
