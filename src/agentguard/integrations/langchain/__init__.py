"""LangChain v1 / LangGraph adapter: an ``AgentMiddleware`` that puts a guard in front of every tool call.

Usage::

    from langchain.agents import create_agent
    from agentguard.integrations.langchain import AgentGuardMiddleware

    agent = create_agent(model, tools, middleware=[AgentGuardMiddleware(stack)],
                         checkpointer=InMemorySaver())   # a checkpointer is needed for ESCALATE

Every decision goes through one :class:`~agentguard.core.pipeline.Pipeline` (``adapter="langchain"``):
it decides fail-closed, applies the enforcement strategy (``strategy=`` here, else the deciding
guard's own, e.g. a policy table's ``strategy = "CRP+TEH"``, else the default), audits and keeps the
run's state (its latched HALT included). This module only translates LangChain's objects to proposals
and the pipeline's :class:`~agentguard.core.enforcement.Outcome` back to LangChain's shapes:

- ``after_model`` / ``aafter_model`` (predictive check): every tool call the model just proposed is
  decided *before any of them runs* (:meth:`Pipeline.decide_turn`); an outcome that stops the run ends
  it there (``jump_to: end``), answering each proposed call with a refusal ToolMessage so the
  conversation stays well formed. The other outcomes are held and enforced when the call reaches the
  tool node, matched to it by what the call is (tool name and arguments, :meth:`Pipeline.take`), never
  by the call id the model gave (ids may be duplicated, empty or missing).
- ``wrap_tool_call`` / ``awrap_tool_call`` (gate): the held outcome, else a decision now. What runs is
  exactly ``outcome.call`` (the proposal, or the arguments a MODIFY / same-tool RECOVER gave); a
  refused call is answered with a ``ToolMessage(status="error")`` the model sees (a RECOVER whose
  fallback is another tool cannot run in this tool node: refused); an outcome that stops the run also
  ends it (``before_model`` jumps to the end while the pipeline says the run is halted).
  ``on_reject="end"`` is shorthand for ``strategy="TT"`` (any refusal ends the run).
- An ESCALATE (``outcome.ask``) asks a human through a LangGraph ``interrupt`` whose value is
  LangChain's own ``HITLRequest`` (``action_requests`` / ``review_configs``, what Agent Chat UI and
  ``HumanInTheLoopMiddleware`` use); its description shows every guard's verdict
  (:func:`~agentguard.core.pipeline.approval_request`). Resumed with LangChain's ``HITLResponse``:
  ``Command(resume={"decisions": [{"type": "approve"}]})`` runs exactly the asked call
  (:meth:`Pipeline.resolve`, which lets the escalating guard, e.g. the service's RemoteGuard, confirm);
  ``edit`` (``edited_action={"name", "args"}``, same tool) decides the edited call, and an edit that
  asks again counts as the human's approval of exactly that edit; ``reject`` (optional ``message``)
  refuses it; ``respond`` (``message``) answers in the tool's place without running it. Anything else
  refuses (fail closed); ``True`` / ``{"approved": True}`` are still read as approve.
  ``escalate="reject"`` refuses without asking. A call some guard refuses is never offered to a human
  (REJECT and HALT dominate ESCALATE in a stack).
- Every call is judged as its tool will read it: LangChain validates the model's arguments with the
  tool's pydantic schema and hands the function the validated values (a stripped string, ``" 5000 "``
  or ``5000.0`` as the int ``5000``, an alias mapped to its field, defaults filled in), so the proposal
  the Pipeline decides carries those values (the tools are learnt from the model request, in
  ``wrap_model_call``, for ``after_model``); what runs is the model's arguments that read as exactly the
  decided call (a guard's MODIFY must read as itself, else it is refused). A named state field LangGraph's
  tool node injects (``Annotated[str, InjectedState("target")]``, which another tool's ``Command`` may have set)
  is judged under the argument it fills, and checked again when the tool runs; an injected argument reaches the
  tool only from the tool node, never from the model's arguments (:mod:`.reading`).
- What runs is checked where the tool starts (:mod:`.seal`): while the gate's handler runs, the first LangChain
  tool to start must be the decided call (its name and non-injected arguments), once; a middleware listed after
  the gate that swaps in another tool (``request.override(tool=...)``) has that tool raise at its start, and the
  model reads a refusal.
- ``before_agent`` clears a finished run's halt mark in the state; ``after_agent`` finishes the run
  (:meth:`Pipeline.finish`: its state, trace and every guard's memory of it).

What it can see: the tool name, arguments and call id, the agent state (messages) and the thread id.
Per-run facts for the policies (the user's age, the task, trusted data): pass them as LangGraph's
runtime context (``create_agent(..., context_schema=Facts)`` and ``agent.invoke(..., context=Facts(...))``;
a dict, dataclass or pydantic model) and/or in the state key ``agentguard_facts`` (a dict given in the
input); both are merged into ``Context.metadata`` before each decision (runtime context wins), where a
policy reads them with ``{from = "metadata", key = "..."}``.
Sync (``invoke``/``stream``) uses the guard's ``check``, async (``ainvoke``/``astream``) its ``acheck``.
It gates tool *calls*; it does not see streamed model tokens (use
:mod:`agentguard.integrations.streaming` for that) and it cannot see tools run outside the agent's
tool node. A run is keyed on the LangGraph ``thread_id`` (or, without one, on the id of the run's
first message).
"""

from __future__ import annotations

from ...core.errors import require

require("langchain.agents.middleware", "integrations")

from .answers import AgentGuardAnswerMiddleware  # noqa: E402
from .hitl import hitl_decision, hitl_request  # noqa: E402
from .middleware import AgentGuardMiddleware, AgentGuardState, AgentGuardToolGate  # noqa: E402
from .scripted import scripted_chat_model  # noqa: E402

__all__ = [
    "AgentGuardAnswerMiddleware",
    "AgentGuardMiddleware",
    "AgentGuardState",
    "AgentGuardToolGate",
    "hitl_decision",
    "hitl_request",
    "scripted_chat_model",
]
