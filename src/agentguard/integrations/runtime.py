"""What every adapter shares: per-run contexts, fail-closed checking, and recording.

An adapter turns a framework's tool call into a :class:`~agentguard.core.ToolCall`, asks
:class:`GuardRuntime` for a verdict, enforces it in the framework's own terms, and reports what
happened (:meth:`GuardRuntime.record`). The runtime keeps one :class:`~agentguard.core.Context` per
run key (thread id, trace id, MCP session), so stateful guards (a proactive guard tracking the
abstract state, a monitor accumulating a score) see the run's history in ``context.trace``.

Guarantee: :meth:`check` and :meth:`acheck` never let an exception or a non-Verdict through as an
ALLOW: any error in the guard becomes ``fail_closed(...)`` with ``on_error`` (HALT by default).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable

from ..core.guard import Guard, arun_guard, fail_closed, run_guard
from ..core.types import Context, Decision, Step, ToolCall, Trace, Verdict
from .recording import TraceRecorder

__all__ = ["GuardRuntime", "as_facts", "refusal_message"]


def as_facts(obj: Any) -> dict[str, Any]:
    """Per-run facts as a plain dict for ``Context.metadata``: a mapping, a dataclass, a pydantic model
    or any object with public attributes (the framework's run context: LangChain's runtime
    ``context``, the Agents SDK's ``RunContextWrapper.context``); ``None`` and scalars give ``{}``.

    These facts are what policies read with ``{from = "metadata", key = "user_info.age"}``: the
    application sets them (trusted), the model never writes them.
    """
    if obj is None or isinstance(obj, (str, bytes, int, float, bool)):
        return {}
    if isinstance(obj, dict):
        return dict(obj)
    try:
        import dataclasses

        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    except Exception:  # pragma: no cover - defensive
        pass
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            out = dump()
            return dict(out) if isinstance(out, dict) else {}
        except Exception:
            return {}
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        return {k: v for k, v in attrs.items() if not k.startswith("_")}
    return {}


def refusal_message(verdict: Verdict, call: ToolCall | None = None) -> str:
    """The text an agent sees when its call is refused (names the guard, the decision and the reason)."""
    what = f"tool call {call.name}" if call is not None else "action"
    return (
        f"agentguard refused {what} ({verdict.decision.name} by {verdict.guard or 'guard'}): {verdict.reason}"
    )


class GuardRuntime:
    """Per-run contexts around one guard (usually a GuardStack), plus optional trace recording.

    ``state_fn(context, call) -> state`` (optional) sets ``context.state`` before each check, for
    guards that decide on a concrete state (the proactive guard's abstraction); ``max_runs`` bounds
    the number of runs kept (least recently used are dropped and their traces finished); ``timeout_s``
    (optional) is a deadline per check after which the verdict is the fail-closed one.
    """

    def __init__(
        self,
        guard: Guard,
        *,
        recorder: TraceRecorder | None = None,
        adapter: str = "",
        on_error: Decision | str = Decision.HALT,
        state_fn: Callable[[Context, Any], Any] | None = None,
        max_runs: int = 10_000,
        timeout_s: float | None = None,
    ) -> None:
        if not isinstance(guard, Guard):
            from ..core.errors import InputError

            raise InputError(f"{guard!r} is not a Guard (needs name, check and acheck)")
        self.guard = guard
        self.recorder = recorder
        self.adapter = adapter
        self.on_error = Decision.parse(on_error)
        self.state_fn = state_fn
        self.max_runs = int(max_runs)
        self.timeout_s = timeout_s  # deadline per check (a GuardStack's own timeout_s applies inside it)
        self._contexts: OrderedDict[str, Context] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GuardRuntime({self.guard!r}, adapter={self.adapter!r}, runs={len(self._contexts)})"

    # -- contexts -------------------------------------------------------------------------------
    def context(self, run_key: str, **metadata: Any) -> Context:
        """The context of a run (created on first use; shares its trace with the recorder)."""
        run_key = str(run_key)
        with self._lock:
            ctx = self._contexts.get(run_key)
            if ctx is not None:
                self._contexts.move_to_end(run_key)
                if metadata:
                    ctx.metadata.update(metadata)
                return ctx
            trace = (
                self.recorder.trace(run_key, adapter=self.adapter)
                if self.recorder is not None
                else Trace(labels={"adapter": self.adapter}, run_id=run_key)
            )
            ctx = Context(run_id=run_key, trace=trace, metadata={"adapter": self.adapter, **metadata})
            self._contexts[run_key] = ctx
            evicted = None
            if len(self._contexts) > self.max_runs:
                evicted, _ = self._contexts.popitem(last=False)
        if evicted is not None and self.recorder is not None:
            self.recorder.finish(evicted)
        return ctx

    def finish(self, run_key: str, **labels: Any) -> Trace | None:
        """End a run: forget its context and finish its recorded trace."""
        with self._lock:
            ctx = self._contexts.pop(str(run_key), None)
        if ctx is None:
            return None
        ctx.trace.labels.update(labels)
        if self.recorder is not None:
            return self.recorder.finish(str(run_key))
        return ctx.trace

    # -- checking -------------------------------------------------------------------------------
    def _prepare(self, ctx: Context, proposal: Any) -> None:
        if self.state_fn is not None:
            ctx.state = self.state_fn(ctx, proposal)

    def check(self, ctx: Context, proposal: Any) -> Verdict:
        """The guard's verdict on ``proposal`` in ``ctx`` under the core's fail-closed rule
        (:func:`agentguard.core.guard.run_guard`: any BaseException or a late verdict never allows)."""
        try:
            self._prepare(ctx, proposal)
        except BaseException as exc:  # noqa: BLE001 - a failing state function fails closed too
            return fail_closed(self.guard.name, exc, self.on_error)
        return run_guard(self.guard, ctx, proposal, timeout_s=self.timeout_s, on_error=self.on_error)

    async def acheck(self, ctx: Context, proposal: Any) -> Verdict:
        """Async :meth:`check` (:func:`agentguard.core.guard.arun_guard`: a synchronous guard runs in a
        worker thread, off the event loop, and is abandoned at ``timeout_s``)."""
        try:
            self._prepare(ctx, proposal)
        except BaseException as exc:  # noqa: BLE001
            return fail_closed(self.guard.name, exc, self.on_error)
        return await arun_guard(self.guard, ctx, proposal, timeout_s=self.timeout_s, on_error=self.on_error)

    # -- a human's answer to an ESCALATE --------------------------------------------------------------
    def _settlers(self) -> list[Any]:
        out, todo = [], [self.guard]
        while todo:
            g = todo.pop(0)
            if callable(getattr(g, "settle_approval", None)):
                out.append(g)
            todo.extend(getattr(g, "guards", None) or [])
        return out

    def settle_approval(self, verdict: Verdict, call: Any, approved: bool, approver: str) -> Verdict | None:
        """Report a human's answer to the ESCALATE ``verdict`` to the guard that keeps its own record of
        it (the service's ``RemoteGuard``: ``POST /v1/approvals``, the audit log records ``approver``).
        Returns that guard's verdict (ALLOW only when it confirms an approval; fail closed otherwise), or
        None when no guard answers for ``verdict`` (the adapter's own approval then stands)."""
        for g in self._settlers():
            try:
                v = g.settle_approval(verdict, call, approved, approver)
            except Exception as exc:  # noqa: BLE001 - fail closed
                return Verdict(Decision.REJECT, f"approval not recorded ({type(exc).__name__}: {exc})", g.name)
            if v is not None:
                return v if isinstance(v, Verdict) else Verdict(Decision.REJECT, "approval not recorded", g.name)
        return None

    async def asettle_approval(self, verdict: Verdict, call: Any, approved: bool, approver: str) -> Verdict | None:
        """Async :meth:`settle_approval` (``asettle_approval`` of the guard when it has one)."""
        for g in self._settlers():
            try:
                fn = getattr(g, "asettle_approval", None)
                v = await fn(verdict, call, approved, approver) if callable(fn) else \
                    g.settle_approval(verdict, call, approved, approver)
            except Exception as exc:  # noqa: BLE001 - fail closed
                return Verdict(Decision.REJECT, f"approval not recorded ({type(exc).__name__}: {exc})", g.name)
            if v is not None:
                return v if isinstance(v, Verdict) else Verdict(Decision.REJECT, "approval not recorded", g.name)
        return None

    @staticmethod
    def _confirmed(answer: Verdict, settled: Verdict | None) -> Verdict:
        if settled is None or answer.decision is not Decision.ALLOW or settled.decision is Decision.ALLOW:
            return answer
        return Verdict(Decision.REJECT, settled.reason, settled.guard or answer.guard)

    def confirm(self, escalation: Verdict, call: Any, answer: Verdict, approver: str) -> Verdict:
        """The adapter's ``answer`` (ALLOW: the human approved; anything else: refused) to ``escalation``
        after :meth:`settle_approval`: an approval the escalating guard does not confirm becomes REJECT."""
        return self._confirmed(answer, self.settle_approval(escalation, call, answer.decision is Decision.ALLOW,
                                                            approver))

    async def aconfirm(self, escalation: Verdict, call: Any, answer: Verdict, approver: str) -> Verdict:
        """Async :meth:`confirm`."""
        return self._confirmed(answer, await self.asettle_approval(
            escalation, call, answer.decision is Decision.ALLOW, approver))

    # -- recording ------------------------------------------------------------------------------
    def record(
        self,
        ctx: Context,
        proposal: Any,
        verdict: Verdict,
        observation: Any = None,
        output: str | None = None,
    ) -> Step:
        """Append what happened to the run's trace (and so to the recorder)."""
        signals = {"decision": float(int(verdict.decision))}
        for k, v in verdict.numbers.items():
            try:
                signals[k] = float(v)
            except (TypeError, ValueError):
                pass
        step = Step(state=ctx.state, action=proposal, observation=observation, output=output, signals=signals)
        ctx.trace.append(step)
        labels = ctx.trace.labels
        if verdict.blocks:
            labels["blocked"] = int(labels.get("blocked", 0)) + 1
        if verdict.decision is Decision.HALT:
            labels["halted"] = True
            labels["halt_reason"] = verdict.reason
        return step
