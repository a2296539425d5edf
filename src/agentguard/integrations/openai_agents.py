"""OpenAI Agents SDK adapter: tool input/output guardrails and a trace processor.

Usage::

    from agents import Agent, Runner, add_trace_processor
    from agentguard.integrations.openai_agents import AgentsGuard

    ag = AgentsGuard(stack)                       # any agentguard Guard
    agent = Agent(name="a", model=..., tools=ag.guard_tools([send_email, delete_file]))
    add_trace_processor(ag.trace_processor(TraceRecorder("traces.jsonl")))

Verdicts become the SDK's tool-guardrail behaviours (``@tool_input_guardrail``):

| verdict | behaviour |
|---|---|
| ALLOW | ``ToolGuardrailFunctionOutput.allow`` - the tool runs unchanged |
| REJECT, RECOVER | ``reject_content(message)`` - the tool does not run; the model receives the refusal |
| MODIFY | ``reject_content`` naming the corrected arguments (guardrails cannot rewrite them) |
| ESCALATE | the SDK's own human approval: the run stops with an interruption (``result.interruptions``); ``state = result.to_state(); state.approve(item)`` (or ``reject``) and ``Runner.run(agent, state)`` resumes; the approved call runs, exactly once. With an ``approve(verdict, call)`` callback, it decides instead |
| HALT | ``raise_exception`` - the SDK raises ``ToolInputGuardrailTripwireTriggered`` and the run stops |

How ESCALATE reaches the SDK: :meth:`AgentsGuard.guard_tools` sets each tool's ``needs_approval`` to a
function that asks the guard (the tool's own ``needs_approval=True`` still asks every time); when the
guard answers ESCALATE the SDK interrupts the run, exactly as for ``needs_approval=True``. The verdict is
kept for the call id, so the guard checks each call once. On the resumed run the input guardrail reads
the SDK's approval record (``RunContextWrapper.is_tool_approved``): approved -> ALLOW ("approved by a
human"), rejected -> the SDK's own rejection. An ESCALATE for a call the SDK was never asked about is
refused (fail closed).

Per-run facts: the ``context`` given to ``Runner.run(agent, input, context=...)`` (a dict, dataclass or
pydantic model) is merged into ``Context.metadata`` before each check; a policy reads it with
``{from = "metadata", key = "user_info.age"}``. A ``run_id`` in those facts names the guard's run (so a
resumed run, which has a new SDK trace, keeps its guard state); otherwise the SDK trace id does.

The optional output guardrail (``output_guard=``) checks a tool's result as
``Step(action=call, output=text)`` before the model sees it (REJECT replaces the result by the
refusal, HALT raises ``ToolOutputGuardrailTripwireTriggered``).

What it can see: the tool name, the JSON arguments, the call id and (output guardrail) the result of
*function tools*; it does not see hosted tools (web search, code interpreter run by OpenAI), handoffs,
or MCP tools the SDK calls directly (put :mod:`agentguard.integrations.mcp_proxy` in front of those).
Guardrails run inside the SDK's async loop, so the guard's ``acheck`` is used; sync ``Runner.run_sync``
works the same way. Streaming runs (``Runner.run_streamed``) are gated identically: tool calls are
complete before they execute. Per-run state is keyed on the SDK trace id (one per ``Runner.run``);
with tracing disabled every run shares the key ``"default"``.

:class:`AgentGuardTraceProcessor` records each SDK trace as a project :class:`~agentguard.core.Trace`:
one step per function-tool span (``ToolCall`` action, the output as observation, the guard's decision
as the ``decision`` signal when the call was guarded), so runs of unguarded agents can also be
recorded for DTMC learning and calibration.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections import OrderedDict, defaultdict, deque
from typing import Any, Awaitable, Callable

from ..core.errors import require
from ..core.guard import Guard
from ..core.types import Context, Decision, Step, ToolCall, Verdict
from .recording import TraceRecorder
from .runtime import GuardRuntime, as_facts, refusal_message

require("agents", "integrations")

from agents import (  # noqa: E402
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    ToolOutputGuardrailData,
    tool_input_guardrail,
    tool_output_guardrail,
)
from agents.tracing import TracingProcessor, get_current_trace  # noqa: E402

__all__ = ["AgentGuardTraceProcessor", "AgentsGuard"]

Approve = Callable[[Verdict, ToolCall], "bool | Awaitable[bool]"]
#: who answered, as the guard service's audit log records it (RemoteGuard escalations)
APPROVER = "human via the Agents SDK approval"


def _run_key() -> str:
    try:
        tr = get_current_trace()
    except Exception:
        tr = None
    tid = getattr(tr, "trace_id", None) if tr is not None else None
    return str(tid) if tid and tid != "no-op" else "default"


def _parse_args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    try:
        val = json.loads(raw)
    except (TypeError, ValueError):
        return {"_raw": str(raw)}
    return val if isinstance(val, dict) else {"_value": val}


def _fingerprint(call: ToolCall) -> str:
    return call.name + "\x00" + json.dumps(dict(call.arguments), sort_keys=True, default=str)


class AgentsGuard:
    """Build Agents SDK tool guardrails (and a trace processor) around any agentguard Guard."""

    def __init__(
        self,
        guard: Guard,
        *,
        output_guard: Guard | None = None,
        approve: Approve | None = None,
        on_error: Decision | str = Decision.HALT,
        state_fn: Callable[[Context, Any], Any] | None = None,
    ) -> None:
        self.runtime = GuardRuntime(guard, adapter="openai-agents", on_error=on_error, state_fn=state_fn)
        self.output_runtime = (
            GuardRuntime(output_guard, adapter="openai-agents", on_error=on_error)
            if output_guard is not None
            else None
        )
        self.approve = approve
        # ESCALATE verdicts handed to the SDK's approval flow, by call id (bounded)
        self._asked: OrderedDict[str, tuple[str, Verdict]] = OrderedDict()
        # verdicts by (trace id, tool name, raw arguments), read by the trace processor
        self._verdicts: dict[tuple[str, str, str], deque[Verdict]] = defaultdict(deque)
        self._lock = threading.Lock()
        self.input_guardrail = tool_input_guardrail(name="agentguard")(self._input)
        self.output_guardrail = tool_output_guardrail(name="agentguard_output")(self._output)

    def __repr__(self) -> str:
        return f"AgentsGuard({self.runtime.guard!r})"

    def guard_tools(self, tools: list[Any]) -> list[Any]:
        """Attach the input (and output) guardrail to each function tool; returns the same list."""
        for t in tools:
            if not hasattr(t, "tool_input_guardrails"):
                from ..core.errors import InputError

                raise InputError(f"{t!r} is not a function tool (only function tools take tool guardrails)")
            t.tool_input_guardrails = [*(t.tool_input_guardrails or []), self.input_guardrail]
            t.needs_approval = self._approval_check(getattr(t, "needs_approval", False), t.name)
            t.tool_output_guardrails = [*(t.tool_output_guardrails or []), self.output_guardrail]
        return tools

    def trace_processor(self, recorder: TraceRecorder) -> "AgentGuardTraceProcessor":
        """A trace processor that records runs, with this guard's decisions joined to the tool spans."""
        self._joined = True
        return AgentGuardTraceProcessor(recorder, guard=self)

    _joined = False  # verdicts are kept for a processor to join only once one exists (no unbounded growth)

    def _remember(self, key: str, name: str, raw: str, v: Verdict) -> None:
        if not self._joined:
            return
        with self._lock:
            self._verdicts[(key, name, raw)].append(v)

    def pop_verdict(self, key: str, name: str, raw: str) -> Verdict | None:
        with self._lock:
            q = self._verdicts.get((key, name, raw))
            if not q:
                return None
            v = q.popleft()
            if not q:
                del self._verdicts[(key, name, raw)]
            return v

    def forget(self, key: str) -> None:
        with self._lock:
            for k in [k for k in self._verdicts if k[0] == key]:
                del self._verdicts[k]
        self.runtime.finish(key)
        if self.output_runtime is not None:
            self.output_runtime.finish(key)

    def _context(self, wrapper: Any) -> tuple[str, Context]:
        facts = as_facts(getattr(wrapper, "context", None))
        key = str(facts.get("run_id") or _run_key())
        return key, self.runtime.context(key, **facts)

    def _approval_check(self, own: Any, tool: str) -> Callable[[Any, dict[str, Any], str], Awaitable[bool]]:
        """A ``needs_approval`` function: the tool's own setting, or the guard's ESCALATE."""

        async def needs_approval(wrapper: Any, params: dict[str, Any], call_id: str) -> bool:
            if own is True:
                return True
            if callable(own):
                mine = own(wrapper, params, call_id)
                if (await mine if inspect.isawaitable(mine) else mine) is True:
                    return True
            if self.approve is not None:
                return False  # the callback decides ESCALATE in the input guardrail
            call = ToolCall(tool, dict(params or {}), str(call_id))
            _, ctx = self._context(wrapper)
            v = await self.runtime.acheck(ctx, call)
            with self._lock:
                self._asked[call.call_id] = (_fingerprint(call), v)
                while len(self._asked) > 10_000:
                    self._asked.popitem(last=False)
            return v.decision is Decision.ESCALATE

        return needs_approval

    def _sdk_approval(self, tc: Any, call: ToolCall, v: Verdict) -> Verdict | None:
        """The SDK's approval record for an ESCALATE it was asked about: ALLOW / REJECT, or None while
        the human has not answered yet (the SDK interrupts the run before the tool runs)."""
        try:
            status = tc.is_tool_approved(call.name, call.call_id)
        except Exception:
            status = False
        if status is None:
            return None
        if status is True:
            return Verdict(Decision.ALLOW, f"approved by a human (SDK approval): {v.reason}", v.guard, v.numbers)
        return Verdict(Decision.REJECT, f"refused by a human (SDK approval): {v.reason}", v.guard, v.numbers)

    async def _input(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        tc = data.context
        raw = tc.tool_arguments or ""
        call = ToolCall(tc.tool_name, _parse_args(raw), tc.tool_call_id or "")
        key, ctx = self._context(tc)
        with self._lock:
            kept = self._asked.get(call.call_id)
        # the verdict needs_approval got, only for exactly this call (same name and arguments)
        v = kept[1] if kept is not None and kept[0] == _fingerprint(call) else None
        asked = v is not None
        if v is None:
            v = await self.runtime.acheck(ctx, call)
        if v.decision is Decision.ESCALATE and self.approve is None:
            answered = self._sdk_approval(tc, call, v) if asked else Verdict(
                Decision.REJECT, f"needs a human's approval, which this tool cannot ask for "
                "(attach it with AgentsGuard.guard_tools): " + v.reason, v.guard, v.numbers)
            if answered is None:  # pre-approval guardrail pass: the SDK asks the human next
                return ToolGuardrailFunctionOutput.allow(output_info=v.to_dict())
            # reported to the guard service when it escalated (its audit log records the approval)
            v = await self.runtime.aconfirm(v, call, answered, APPROVER) if asked else answered
        with self._lock:
            self._asked.pop(call.call_id, None)
        if v.decision is Decision.ESCALATE and self.approve is not None:
            try:
                ok = self.approve(v, call)
                if inspect.isawaitable(ok):
                    ok = await ok
            except Exception as exc:  # a failing approver refuses (fail closed)
                ok = False
                v = Verdict(Decision.REJECT, f"approval failed ({exc}): {v.reason}", v.guard, v.numbers)
            if ok is True:
                v = await self.runtime.aconfirm(v, call, Verdict(
                    Decision.ALLOW, f"approved by a human: {v.reason}", v.guard, v.numbers), "operator (approve callback)")
            elif v.decision is Decision.ESCALATE:
                v = await self.runtime.aconfirm(v, call, Verdict(
                    Decision.REJECT, f"refused by a human: {v.reason}", v.guard, v.numbers), "operator (approve callback)")
        self._remember(key, call.name, raw, v)
        info = v.to_dict()
        if v.decision is Decision.ALLOW:
            ctx.metadata.setdefault("allowed", {})[call.call_id] = v
            return ToolGuardrailFunctionOutput.allow(output_info=info)
        msg = refusal_message(v, call)
        if v.decision is Decision.MODIFY and isinstance(v.action, ToolCall):
            msg += f". Call {v.action.name} again with arguments {json.dumps(dict(v.action.arguments))}"
        self.runtime.record(ctx, call, v, observation=msg)
        if v.decision is Decision.HALT:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=info)
        return ToolGuardrailFunctionOutput.reject_content(msg, output_info=info)

    async def _output(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        tc = data.context
        call = ToolCall(tc.tool_name, _parse_args(tc.tool_arguments or ""), tc.tool_call_id or "")
        key, ctx = self._context(tc)
        v_in = ctx.metadata.get("allowed", {}).pop(call.call_id, None) or Verdict.allow(
            self.runtime.guard.name
        )
        text = data.output if isinstance(data.output, str) else str(data.output)
        if self.output_runtime is None:
            self.runtime.record(ctx, call, v_in, observation=text)
            return ToolGuardrailFunctionOutput.allow()
        octx = self.output_runtime.context(key)
        v = await self.output_runtime.acheck(octx, Step(action=call, output=text))
        self.runtime.record(ctx, call, v if v.blocks else v_in, observation=text)
        if v.decision is Decision.HALT:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=v.to_dict())
        if v.blocks:
            return ToolGuardrailFunctionOutput.reject_content(
                refusal_message(v, call), output_info=v.to_dict()
            )
        return ToolGuardrailFunctionOutput.allow(output_info=v.to_dict())


class AgentGuardTraceProcessor(TracingProcessor):
    """An Agents SDK ``TracingProcessor`` that writes each run as a project trace.

    One step per function-tool span: ``action`` the ToolCall, ``observation`` the output (or the
    refusal), ``signals['decision']`` the guard's decision when an :class:`AgentsGuard` checked the call
    (absent for unguarded calls). Labels: ``adapter``, ``workflow``, ``blocked``, ``halted``, ``error``.
    Register it with ``agents.add_trace_processor`` (keeps the SDK's exporter) or
    ``set_trace_processors([...])`` (replaces it; what tests do, to stay offline).
    """

    def __init__(self, recorder: TraceRecorder, *, guard: AgentsGuard | None = None) -> None:
        self.recorder = recorder
        self.guard = guard

    def on_trace_start(self, trace: Any) -> None:
        self.recorder.trace(trace.trace_id, adapter="openai-agents", workflow=getattr(trace, "name", ""))

    def on_trace_end(self, trace: Any) -> None:
        self.recorder.finish(trace.trace_id)
        if self.guard is not None:
            self.guard.forget(trace.trace_id)

    def on_span_start(self, span: Any) -> None:
        return None

    def on_span_end(self, span: Any) -> None:
        try:
            data = span.span_data
            if getattr(data, "type", None) != "function":
                return
            raw = data.input or ""
            t = self.recorder.trace(span.trace_id)
            call = ToolCall(data.name or "?", _parse_args(raw))
            signals: dict[str, float] = {}
            v = self.guard.pop_verdict(span.trace_id, call.name, raw) if self.guard is not None else None
            if v is not None:
                signals["decision"] = float(int(v.decision))
                signals.update({k: float(x) for k, x in v.numbers.items()})
                if v.blocks:
                    t.labels["blocked"] = int(t.labels.get("blocked", 0)) + 1
                if v.decision is Decision.HALT:
                    t.labels["halted"] = True
            err = span.error
            if err:
                t.labels["error"] = err.get("message") if isinstance(err, dict) else str(err)
            out = data.output
            t.append(
                Step(
                    action=call,
                    observation=out if out is None or isinstance(out, str) else str(out),
                    signals=signals,
                )
            )
        except Exception:  # a recorder must never break the agent run
            return

    def shutdown(self) -> None:
        self.recorder.finish_all()

    def force_flush(self) -> None:
        return None
