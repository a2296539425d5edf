"""Recording what an adapter sees as project traces (the JSON Lines format of ``write_traces``).

Every adapter takes an optional :class:`TraceRecorder`. The recorder keeps one
:class:`~agentguard.core.Trace` per run (a LangGraph thread, an Agents SDK trace, an MCP session, a
LiteLLM trace id, a stream), appends a :class:`~agentguard.core.Step` per tool call or stream step,
and, when the run ends, appends the trace as one line to ``path`` (same serialisation as
``write_traces``, so ``read_traces`` and the DTMC learner and calibrator read it back).

A step records: ``action`` the proposed :class:`~agentguard.core.ToolCall`; ``observation`` what the
agent got back (the tool's result, or the refusal message); ``output`` a text chunk (streams);
``signals`` the numbers the deciding guard reported plus ``decision`` (the verdict's integer,
0 = ALLOW ... 5 = HALT) so a trace shows which steps were blocked; ``state`` the concrete state the
call was decided in: what the adapter's ``state_fn`` computed (``agentguard learn`` needs it; see
:mod:`agentguard.spec.history` for the built-in call-history state, and docs/recipe.md). Trace labels
hold the adapter name, the count of blocked steps and whether the run was halted.

:func:`load_recording` reads a guard file's stack with its ``[recording]`` table (``path``, ``state``:
``"history"`` or ``"package.module:attr"``), what ``agentguard mcp-proxy`` and ``litellm-guardrail`` do,
so a Python adapter is set up from the same file::

    stack, recorder, state_fn = load_recording("record.toml")
    AgentGuardMiddleware(stack, recorder=recorder, state_fn=state_fn)
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Callable, Iterable

from ..core.guard import GuardStack
from ..core.shadow import Shadowed
from ..core.types import Trace, write_traces

__all__ = ["TraceRecorder", "load_recording"]


def load_recording(path: str | os.PathLike[str], *, record: str | None = None, state: str | None = None
                   ) -> tuple[GuardStack | Shadowed, "TraceRecorder | None", Callable[[Any, Any], Any] | None]:
    """``(stack, recorder, state_fn)`` of a guard file: the recorder appends to ``record`` or the file's
    ``[recording] path`` (None when neither names one); ``state_fn`` is ``state`` or the file's
    ``[recording] state`` (:func:`agentguard.spec.history.state_function`; None when neither names one)."""
    from ..config import build_stack, load_config
    from ..spec.history import state_function

    cfg = load_config(path)
    out = record or cfg.recording_path
    return build_stack(cfg), (TraceRecorder(out) if out else None), state_function(state or cfg.recording_state)


class TraceRecorder:
    """Collect traces per run; append finished ones to ``path`` (if given); ``save`` writes them all.

    Thread-safe (adapters may be called from several threads). ``max_open`` bounds the number of
    unfinished runs kept in memory: the oldest is finished (written) when the bound is passed.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, max_open: int = 10_000) -> None:
        self.path = os.fspath(path) if path is not None else None
        self.max_open = int(max_open)
        self._open: dict[str, Trace] = {}
        self.finished: list[Trace] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TraceRecorder(path={self.path!r}, open={len(self._open)}, finished={len(self.finished)})"

    def trace(self, run_id: str, **labels: Any) -> Trace:
        """The open trace of ``run_id`` (created on first use, labels merged)."""
        with self._lock:
            t = self._open.get(run_id)
            if t is None:
                t = Trace(labels=dict(labels), run_id=str(run_id))
                self._open[run_id] = t
                if len(self._open) > self.max_open:
                    oldest = next(iter(self._open))
                    self._finish_locked(oldest, {})
            elif labels:
                t.labels.update(labels)
            return t

    def finish(self, run_id: str, **labels: Any) -> Trace | None:
        """End a run: its trace moves to ``finished`` and is appended to ``path``."""
        with self._lock:
            return self._finish_locked(run_id, labels)

    def _finish_locked(self, run_id: str, labels: dict[str, Any]) -> Trace | None:
        t = self._open.pop(run_id, None)
        if t is None:
            return None
        t.labels.update(labels)
        self.finished.append(t)
        if self.path:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(t.to_dict(), default=str) + "\n")
        return t

    def finish_all(self) -> None:
        """Finish every open run (call on shutdown)."""
        with self._lock:
            for run_id in list(self._open):
                self._finish_locked(run_id, {})

    @property
    def traces(self) -> list[Trace]:
        """Finished traces, then the open ones."""
        with self._lock:
            return [*self.finished, *self._open.values()]

    def save(self, path: str | os.PathLike[str], traces: Iterable[Trace] | None = None) -> None:
        """Write all traces (finished and open) with :func:`~agentguard.core.write_traces`."""
        write_traces(os.fspath(path), list(traces) if traces is not None else self.traces)
