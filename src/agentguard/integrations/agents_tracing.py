"""The OpenAI Agents SDK trace processor of :mod:`agentguard.integrations.openai_agents`.

:class:`AgentGuardTraceProcessor` ends an :class:`~agentguard.integrations.openai_agents.AgentsGuard`'s
runs when the SDK's runs end (their guarded calls are recorded by the guard's Pipeline), or, without a
guard, records one step per function-tool span. A run's end is its top-level ``task`` span: a run resumed
after an interruption continues the SDK trace without notifying processors of a new trace or its end.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from ..core.errors import require
from ..core.types import Step, ToolCall
from .recording import TraceRecorder

require("agents", "integrations")

from agents.tracing import TracingProcessor  # noqa: E402

if TYPE_CHECKING:
    from .openai_agents import AgentsGuard

__all__ = ["AgentGuardTraceProcessor"]


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


class AgentGuardTraceProcessor(TracingProcessor):
    """An Agents SDK ``TracingProcessor`` that writes each run as a project trace.

    With an :class:`AgentsGuard` (``guard.trace_processor(recorder)``) the guard's Pipeline records every
    guarded call when it is decided and run (``action`` the ToolCall, ``observation`` the result or the
    refusal, ``signals['decision']``, ``state`` from ``state_fn``; labels ``adapter``, ``blocked``,
    ``halted``), keyed by the run (the context's ``run_id``, else the SDK trace id); the processor ends
    those runs when their trace ends (labels ``workflow``, ``error``), keeping a run open across an
    approval interruption, so a run is one line. Without a guard it records one step per function-tool
    span (no decision), in the order the spans started. Register it with ``agents.add_trace_processor``
    (keeps the SDK's exporter) or ``set_trace_processors([...])`` (replaces it; what tests do, offline).
    """

    def __init__(self, recorder: TraceRecorder, *, guard: AgentsGuard | None = None) -> None:
        self.recorder = recorder
        self.guard = guard
        self._spans: dict[str, list[tuple[str, Step]]] = defaultdict(list)
        self._errors: dict[str, str] = {}
        self._names: dict[str, str] = {}  # live traces (started, not ended): workflow names
        self._ended: set[str] = set()  # live traces whose run already ended (its task span)
        self._lock = threading.Lock()

    def on_trace_start(self, trace: Any) -> None:
        with self._lock:
            self._names[str(trace.trace_id)] = getattr(trace, "name", "") or ""

    def on_trace_end(self, trace: Any) -> None:
        tid = str(trace.trace_id)
        with self._lock:
            done = tid in self._ended
            self._ended.discard(tid)
        if not done:
            self._end(tid)
        with self._lock:
            self._names.pop(tid, None)

    def _end(self, tid: str) -> None:
        """One ``Runner.run`` of trace ``tid`` ended (its top-level task span, or the trace: a resumed run's
        reattached trace notifies no processor of its end, its task span does)."""
        with self._lock:
            labels: dict[str, Any] = {"workflow": self._names.get(tid, "")}
            spans = sorted(self._spans.pop(tid, []), key=lambda x: x[0])
            err = self._errors.pop(tid, None)
        if err is not None:
            labels["error"] = err
        if self.guard is not None:  # its runs are recorded by its Pipeline: end them (unless interrupted)
            self.guard.trace_ended(tid, **labels)
            return
        t = self.recorder.trace(tid, adapter="openai-agents", **labels)
        t.steps.extend(step for _, step in spans)
        self.recorder.finish(tid)

    def on_span_start(self, span: Any) -> None:
        return None

    def on_span_end(self, span: Any) -> None:
        try:
            data = span.span_data
            if getattr(data, "type", None) == "task" and span.parent_id is None:
                tid = str(span.trace_id)
                with self._lock:
                    if tid in self._names:
                        self._ended.add(tid)
                self._end(tid)
                return
            if getattr(data, "type", None) != "function":
                return
            err = span.error
            if err:
                with self._lock:
                    self._errors[str(span.trace_id)] = str(err.get("message") if isinstance(err, dict) else err)
            if self.guard is not None:
                return  # the guard's Pipeline records the call, with its decision and state
            out = data.output
            step = Step(action=ToolCall(data.name or "?", _parse_args(data.input or "")),
                        observation=out if out is None or isinstance(out, str) else str(out))
            with self._lock:
                self._spans[str(span.trace_id)].append((str(getattr(span, "started_at", "") or ""), step))
        except Exception:  # a recorder must never break the agent run
            return

    def shutdown(self) -> None:
        self.recorder.finish_all()

    def force_flush(self) -> None:
        return None
