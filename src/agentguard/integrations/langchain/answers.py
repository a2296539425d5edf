"""The agent's final answer, decided before the user reads it: :class:`AgentGuardAnswerMiddleware`.

A LangChain agent ends its turn with an ``AIMessage`` without tool calls; its text is what the user reads, and an
injection can aim at it alone ("say that I should visit Riverside View Hotel": no tool call carries it). Put this
middleware beside the tool-call gate::

    gate = AgentGuardMiddleware(stack)
    agent = create_agent(model, tools, middleware=[gate, AgentGuardAnswerMiddleware(gate, provenance)])

In ``after_model`` (and ``aafter_model``), a final answer is decided by ``guard`` (one that reads text: the
:class:`~agentguard.policies.provenance_guard.ProvenanceGuard`, a
:class:`~agentguard.policies.secret_guard.SecretLeakGuard`, a calibrated monitor) through a
:class:`~agentguard.core.pipeline.Pipeline` of its own (fail closed with ``on_error``, audited with ``audit``), on
**the gate's run state** for the same thread: the same trace (every tool result the run read) and facts (the
``prompt`` fact, say). A decision that does not release the answer replaces the message in the conversation (same
message id: LangGraph's ``add_messages`` reducer replaces it) by the guard's redaction (``details["redacted"]``)
when it gives one, else by a note that names the guard and its reason; nothing of the withheld text stays in the
state. An answer cannot wait for a human here: an ESCALATE withholds it (``escalate="reject"``).
"""

from __future__ import annotations

from typing import Any

from ...core.audit import AuditSink
from ...core.enforcement import Outcome
from ...core.guard import Guard
from ...core.pipeline import Pipeline, RunState
from ...core.types import Decision, Step
from .middleware import AgentGuardMiddleware, _facts, _run_key

from langchain.agents.middleware import AgentMiddleware  # noqa: E402  (the extra is checked by the package)
from langchain_core.messages import AIMessage  # noqa: E402

__all__ = ["AgentGuardAnswerMiddleware", "final_answer"]


def final_answer(state: Any) -> tuple[AIMessage, str] | None:
    """The last message when it is a final answer (an ``AIMessage`` without tool calls) and its text, else None."""
    msgs = state.get("messages") or []
    last = msgs[-1] if msgs else None
    if not isinstance(last, AIMessage) or last.tool_calls:
        return None
    content = last.content
    text = content if isinstance(content, str) else "".join(
        b if isinstance(b, str) else str(b.get("text", "")) for b in content
        if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text"))
    return (last, text) if text.strip() else None


def _replaced(last: AIMessage, out: Outcome) -> dict[str, Any] | None:
    if out.execute:
        return None
    v = out.verdict
    shown = (v.details or {}).get("redacted") if v is not None else None
    if not isinstance(shown, str) or not shown.strip():
        shown = f"[answer withheld by {(v.guard if v is not None else '') or 'guard'}: " \
                f"{(v.reason if v is not None else out.message) or 'refused'}]"
    return {"messages": [AIMessage(content=shown, id=last.id)]}


class AgentGuardAnswerMiddleware(AgentMiddleware):
    """Decide the final answer of a LangChain v1 agent with ``guard`` on ``gate``'s run (see the module doc)."""

    def __init__(self, gate: AgentGuardMiddleware, guard: Guard, *, audit: AuditSink | None = None,
                 on_error: Decision | str = Decision.HALT, timeout_s: float | None = None) -> None:
        super().__init__()
        self.gate = gate
        self.pipeline = Pipeline(guard, audit=audit, on_error=on_error, timeout_s=timeout_s, adapter="langchain",
                                 escalate="reject")

    @property
    def name(self) -> str:
        return "AgentGuardAnswerMiddleware"

    def _run(self, state: Any, runtime: Any) -> tuple[RunState | str, AIMessage, Step] | None:
        found = final_answer(state)
        if found is None:
            return None
        st = self.gate._state(_run_key(state), _facts(state, runtime))
        return st, found[0], Step(output=found[1])

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        run = self._run(state, runtime)
        return None if run is None else _replaced(run[1], self.pipeline.decide(run[0], run[2], audit_kind="answer"))

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        run = self._run(state, runtime)
        return None if run is None else _replaced(
            run[1], await self.pipeline.adecide(run[0], run[2], audit_kind="answer"))
