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

from dataclasses import replace
from typing import Annotated, Any, Awaitable, Callable

from ..core.audit import AuditSink
from ..core.enforcement import Enforcement, Outcome
from ..core.errors import InputError, require
from ..core.guard import Guard
from ..core.pipeline import RESERVED_KEYS, Pipeline, RunState, approval_request
from ..core.runs import RunEvicted
from ..core.types import Context, Decision, ToolCall
from .recording import TraceRecorder
from .runtime import as_facts, refusal_message

require("langchain.agents.middleware", "integrations")

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402
from typing_extensions import NotRequired  # noqa: E402

__all__ = [
    "AgentGuardMiddleware",
    "AgentGuardState",
    "AgentGuardToolGate",
    "hitl_decision",
    "hitl_request",
    "scripted_chat_model",
]

HALT_KEY = "agentguard_halt"
FACTS_KEY = "agentguard_facts"
DECISIONS = ["approve", "edit", "reject", "respond"]
#: who answered, as the guard service's audit log records it (RemoteGuard escalations)
APPROVER = "human via LangChain HITL"

Run = RunState | str  # a run's state, or its key when the pipeline could not give one (evicted: decided HALT)


def _latest(old: str | None, new: str | None) -> str | None:
    """Reducer of ``agentguard_halt``: several calls of one turn may stop the run in the same step."""
    return new


class AgentGuardState(AgentState):
    """The agent state plus ``agentguard_halt`` (the reason, once the guard has stopped the run) and
    ``agentguard_facts`` (per-run facts for the policies, given in the input)."""

    agentguard_halt: NotRequired[Annotated[str | None, _latest]]
    agentguard_facts: NotRequired[dict[str, Any] | None]


def _facts(state: Any, runtime: Any) -> dict[str, Any]:
    """The run's facts: the state's ``agentguard_facts`` overlaid with the runtime context."""
    out: dict[str, Any] = {}
    st = state.get(FACTS_KEY) if isinstance(state, dict) else getattr(state, FACTS_KEY, None)
    if isinstance(st, dict):
        out.update(st)
    out.update(as_facts(getattr(runtime, "context", None)))
    return out


def hitl_request(outcome: Outcome) -> dict[str, Any]:
    """LangChain's ``HITLRequest`` for one asked outcome; the description is what the approver must see
    (every guard's verdict), repeated as data under ``agentguard`` (call, reason, ``verdicts``)."""
    call = outcome.proposal
    req = approval_request(outcome)
    name = getattr(call, "name", "?")
    return {
        "action_requests": [
            {"name": name, "args": dict(getattr(call, "arguments", {}) or {}), "description": req["text"]}
        ],
        "review_configs": [{"action_name": name, "allowed_decisions": list(DECISIONS)}],
        "agentguard": {
            "tool_call_id": getattr(call, "call_id", ""),
            "verdict": outcome.verdict.to_dict() if outcome.verdict is not None else None,
            "verdicts": req["verdicts"],
            "reason": req["reason"],
        },
    }


def hitl_decision(answer: Any) -> dict[str, Any]:
    """The human's decision from a resume value: LangChain's ``{"decisions": [d]}`` (or a bare
    decision), legacy ``True`` / ``{"approved": True}`` / ``"approve"``; anything else is a reject."""
    if isinstance(answer, dict) and isinstance(answer.get("decisions"), list):
        ds = answer["decisions"]
        answer = ds[0] if len(ds) == 1 else None
    if isinstance(answer, list):
        answer = answer[0] if len(answer) == 1 else None
    if _approved(answer):
        return {"type": "approve"}
    if isinstance(answer, dict) and answer.get("type") in ("edit", "reject", "respond"):
        return dict(answer)
    return {"type": "reject", "message": f"no valid decision in the resume value {str(answer)[:200]!r}"}


def _config_thread(config: Any) -> str | None:
    try:
        tid = (config or {}).get("configurable", {}).get("thread_id")
    except AttributeError:
        return None
    return str(tid) if tid is not None else None


def _run_key(state: Any, config: Any = None) -> str:
    tid = _config_thread(config)
    if tid is None:
        try:
            from langgraph.config import get_config

            tid = _config_thread(get_config())
        except Exception:  # outside a runnable context
            tid = None
    if tid is not None:
        return tid
    msgs = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    if msgs:
        first = msgs[0]
        return str(getattr(first, "id", None) or id(first))
    return "default"


def _to_call(tc: Any) -> ToolCall:
    return ToolCall(str(tc.get("name") or "?"), dict(tc.get("args") or {}), str(tc.get("id") or ""))


def _approved(answer: Any) -> bool:
    if answer is True:
        return True
    if isinstance(answer, dict):
        return answer.get("approved") is True or answer.get("type") == "approve"
    return isinstance(answer, str) and answer.strip().lower() in ("approve", "approved", "yes", "y")


def _refusal_text(out: Outcome, call: ToolCall) -> str:
    """What the model reads for a call that does not run: the verdict (decision, guard, reason) and
    what the strategy adds (re-plan instructions, a halted tool, a fallback that cannot run here)."""
    v = out.verdict
    if v is None or not v.blocks:  # e.g. a tool halted earlier (TEH) that a guard would allow now
        return f"agentguard refused tool call {call.name}: {out.message or 'not allowed'}"
    text = refusal_message(v, call)
    if out.message and any(k in out.extra for k in ("replan", "halted_tool", "reflect", "not_here")):
        text += f". {out.message}"
    return text


class _Human:
    """A human's answer to an ask, translated: ``kind`` (approve / edit / reject / respond), the edited
    call, and the text the model reads when the call does not run."""

    __slots__ = ("kind", "edited", "text")

    def __init__(self, decision: dict[str, Any], asked: Outcome, call: ToolCall) -> None:
        kind, why = decision["type"], asked.verdict.reason if asked.verdict is not None else ""
        self.edited: ToolCall | None = None
        self.text = ""
        if kind == "edit":
            ea = decision.get("edited_action")
            if isinstance(ea, dict) and ea.get("name") == call.name and isinstance(ea.get("args"), dict):
                self.edited = ToolCall(call.name, dict(ea["args"]), call.call_id)
            else:
                kind, why = "reject", f"an edit must name the same tool {call.name} and give args: {why}"
        if kind == "respond" and not isinstance(decision.get("message"), str):
            kind = "reject"
        if kind == "respond":
            self.text = decision["message"]
        elif kind == "reject":
            note = decision.get("message") if isinstance(decision.get("message"), str) else ""
            self.text = f"agentguard: tool call {call.name} refused by a human{': ' + note if note else ''} ({why})"
        self.kind = kind


class AgentGuardMiddleware(AgentMiddleware):
    """Gate every tool call of a LangChain v1 agent with any agentguard Guard (see the module doc).

    ``strategy``: the enforcement strategy (an :class:`~agentguard.core.enforcement.Enforcement` or a
    name such as ``"CRP+TEH"``); None uses the deciding guard's own ``strategy`` (a policy's), else the
    default. ``audit``: an audit sink (a failing sink refuses, fail closed). ``recorder``: a trace
    recorder. ``escalate``: ``"interrupt"`` (ask through LangGraph) or ``"reject"``. ``on_error``: the
    decision for a guard that fails (HALT). ``state_fn(context, call)`` sets ``context.state``.
    """

    state_schema = AgentGuardState

    def __init__(
        self,
        guard: Guard,
        *,
        strategy: Enforcement | str | None = None,
        recorder: TraceRecorder | None = None,
        audit: AuditSink | None = None,
        on_reject: str = "message",
        escalate: str = "interrupt",
        check_proposals: bool = True,
        on_error: Decision | str = Decision.HALT,
        state_fn: Callable[[Context, Any], Any] | None = None,
        timeout_s: float | None = None,
        max_runs: int = 10_000,
    ) -> None:
        super().__init__()
        if on_reject not in ("message", "end"):
            raise InputError(f"on_reject must be 'message' or 'end', not {on_reject!r}")
        if escalate not in ("interrupt", "reject"):
            raise InputError(f"escalate must be 'interrupt' or 'reject', not {escalate!r}")
        if on_reject == "end":
            if strategy is not None:
                raise InputError("give on_reject='end' (the TT strategy) or a strategy, not both")
            strategy = "TT"
        self.pipeline = Pipeline(
            guard, enforcement=strategy, audit=audit, max_runs=max_runs, on_error=on_error, timeout_s=timeout_s,
            state_fn=state_fn, adapter="langchain", recorder=recorder,
            escalate="ask" if escalate == "interrupt" else "reject",
        )
        self.on_reject = on_reject
        self.escalate = escalate
        self.check_proposals = check_proposals

    @property
    def name(self) -> str:
        return "AgentGuardMiddleware"

    # -- runs -------------------------------------------------------------------------------------
    def _state(self, key: str, facts: dict[str, Any] | None = None) -> Run:
        """The run's state with this step's facts merged in (the key alone for a run the pipeline lost:
        deciding on it answers HALT)."""
        try:
            st = self.pipeline.run(key)
        except RunEvicted:
            return key
        if facts:
            self._merge(st, facts)
        return st

    @staticmethod
    def _merge(st: Run, facts: dict[str, Any]) -> None:
        if isinstance(st, RunState) and facts:
            with st.lock:
                md = st.context.metadata
                for k, v in facts.items():
                    if k not in RESERVED_KEYS:
                        md[k] = v

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if state.get(HALT_KEY) and self.pipeline.halted(_run_key(state)) is None:
            return {HALT_KEY: None}  # a finished run's mark; a run still halted stays halted
        return None

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if state.get(HALT_KEY):
            return {"jump_to": "end"}
        halted = self.pipeline.halted(_run_key(state))
        if halted is not None:
            return {"jump_to": "end", HALT_KEY: halted.reason or "halted"}
        return None

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_model(state, runtime)

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        self.pipeline.finish(_run_key(state), halted=bool(state.get(HALT_KEY)))
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    # -- a model turn, decided before any call runs ---------------------------------------------------
    def _proposals(self, state: Any) -> list[ToolCall]:
        if not self.check_proposals:
            return []
        msgs = state.get("messages") or []
        last = msgs[-1] if msgs else None
        return [_to_call(tc) for tc in last.tool_calls] if isinstance(last, AIMessage) and last.tool_calls else []

    def _turn(self, state: Any, runtime: Any) -> tuple[Run, list[ToolCall]]:
        calls = self._proposals(state)
        if not calls:
            return "", calls
        st = self._state(_run_key(state), _facts(state, runtime))
        self.pipeline.drop_pending(st)  # outcomes of an earlier turn never answer this one
        return st, calls

    def _turn_result(self, st: Run, calls: list[ToolCall], outs: list[Outcome]) -> dict[str, Any] | None:
        halting = next((o for o in outs if o.stop), None)
        if halting is None:
            return None
        self.pipeline.drop_pending(st)
        hv = halting.verdict
        reason = (hv.reason if hv is not None else halting.message) or "halted"
        msgs = []
        for call, o in zip(calls, outs):
            if o.stop or not (o.execute or o.ask):
                text = _refusal_text(o, call)
            else:
                text = f"not run: the run was halted by {(hv.guard if hv is not None else '') or 'guard'}: {reason}"
                o = replace(o, execute=False, action=None, ask=False, message=text)
            self.pipeline.record(o, observation=text)
            msgs.append(ToolMessage(text, tool_call_id=call.call_id, name=call.name, status="error"))
        return {"jump_to": "end", HALT_KEY: reason, "messages": msgs}

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        st, calls = self._turn(state, runtime)
        if not calls:
            return None
        return self._turn_result(st, calls, self.pipeline.decide_turn(st, calls))

    @hook_config(can_jump_to=["end"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        st, calls = self._turn(state, runtime)
        if not calls:
            return None
        return self._turn_result(st, calls, await self.pipeline.adecide_turn(st, calls))

    # -- the gate ------------------------------------------------------------------------------------
    def _begin(self, request: Any) -> tuple[Run, ToolCall, Outcome | None]:
        """The run, the call, and the outcome held for it; the run's facts are merged in only when the
        call is still to be decided (a held outcome was decided with them)."""
        key = _run_key(request.state, getattr(request.runtime, "config", None))
        st, call = self._state(key), _to_call(request.tool_call)
        out = self._take(st, call)
        if out is None:
            self._merge(st, _facts(request.state, request.runtime))
        return st, call, out

    def _take(self, st: Run, call: ToolCall) -> Outcome | None:
        """The outcome held for this call (decided after the model, or asked before a resume)."""
        if isinstance(st, RunState) and not st.pending:  # nothing held (the tool gate, mostly): no lookup
            return None
        return self.pipeline.take(st, call)

    @staticmethod
    def _hold(st: Run, out: Outcome) -> None:
        """Keep an asked outcome for the resumed tool node (LangGraph re-runs the node on resume: the
        human's answer goes to the same decision, and the guard is asked once)."""
        if isinstance(st, RunState):
            with st.lock:
                st.pending.setdefault(out.key, []).append(out)

    @staticmethod
    def _unhold(st: Run, out: Outcome) -> None:
        if isinstance(st, RunState):
            with st.lock:
                held = st.pending.get(out.key)
                if held:
                    for i, o in enumerate(held):
                        if o is out:
                            del held[i]
                            break
                    if not held:
                        del st.pending[out.key]

    def _ask(self, st: Run, out: Outcome, call: ToolCall) -> _Human:
        self._hold(st, out)
        answer = interrupt(hitl_request(out))  # GraphInterrupt now; the human's answer when resumed
        self._unhold(st, out)
        return _Human(hitl_decision(answer), out, call)

    def _apply(self, request: Any, call: ToolCall, out: Outcome, human: _Human | None = None) -> tuple[Any, Any]:
        """``(request to run, None)`` when the outcome runs a call of this tool, else ``(None, what the
        tool node answers)``: a ToolMessage, or a Command that also marks the run halted."""
        c = out.call
        if c is not None and c.name == call.name:
            tc = request.tool_call
            args = c.arguments if isinstance(c.arguments, dict) else dict(c.arguments)
            if args != tc.get("args") or tc.get("id") is None:  # run exactly outcome.call (a missing id: "")
                request = request.override(tool_call={**tc, "args": dict(args), "id": tc.get("id") or ""})
            return request, None
        if c is not None:  # a RECOVER whose fallback is another tool: it cannot run in this tool node
            out = replace(out, execute=False, action=None, extra={**out.extra, "not_here": c.name},
                          message=f"its fallback {c.name} cannot run in place of {call.name}")
        responded = human is not None and human.kind == "respond"
        if human is not None and human.kind in ("reject", "respond"):
            text = human.text
        elif human is not None and human.kind == "edit":
            v = out.verdict
            text = (f"agentguard refused tool call {call.name} ({v.decision.name if v else 'HALT'} by "
                    f"{(v.guard if v else '') or 'guard'}): the human's edit was refused: "
                    f"{v.reason if v else out.message}")
        else:
            text = _refusal_text(out, call)
        self.pipeline.record(out, observation=text)
        msg = ToolMessage(text, tool_call_id=call.call_id, name=call.name, status="success" if responded else "error")
        if out.stop:
            v = out.verdict
            return None, Command(update={"messages": [msg], HALT_KEY: (v.reason if v else out.message) or "halted"})
        return None, msg

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        st, call, out = self._begin(request)
        out = out or self.pipeline.decide(st, call)
        human = None
        if out.ask:
            human = self._ask(st, out, call)
            if human.kind == "approve":
                out = self.pipeline.resolve(out, True, approver=APPROVER)
            elif human.edited is not None:
                out = self.pipeline.decide(st, human.edited)
                if out.ask:  # the edit is the human's approval of exactly this call
                    out = self.pipeline.resolve(out, True, approver=APPROVER)
            else:
                out = self.pipeline.resolve(out, False, approver=APPROVER)
        run, answer = self._apply(request, call, out, human)
        if run is None:
            return answer
        result = handler(run)
        self.pipeline.record(out, observation=getattr(result, "content", result))
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        st, call, out = self._begin(request)
        out = out or await self.pipeline.adecide(st, call)
        human = None
        if out.ask:
            human = self._ask(st, out, call)
            if human.kind == "approve":
                out = await self.pipeline.aresolve(out, True, approver=APPROVER)
            elif human.edited is not None:
                out = await self.pipeline.adecide(st, human.edited)
                if out.ask:  # the edit is the human's approval of exactly this call
                    out = await self.pipeline.aresolve(out, True, approver=APPROVER)
            else:
                out = await self.pipeline.aresolve(out, False, approver=APPROVER)
        run, answer = self._apply(request, call, out, human)
        if run is None:
            return answer
        result = await handler(run)
        self.pipeline.record(out, observation=getattr(result, "content", result))
        return result


def scripted_chat_model(messages: list[Any]) -> Any:
    """A scripted chat model for tests and examples: langchain_core's own ``GenericFakeChatModel``
    replaying ``messages`` (AIMessages, possibly with ``tool_calls``), with ``bind_tools`` accepted
    (the fake model ignores the tool schemas, as a scripted model should)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class ScriptedChatModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # noqa: D401 - framework hook
            return self

    return ScriptedChatModel(messages=iter(messages))


class AgentGuardToolGate(AgentGuardMiddleware):
    """The gate alone: ``wrap_tool_call``/``awrap_tool_call`` (plus the halt hooks), without the
    ``after_model`` proposal check. One LangGraph node fewer per model turn (cheaper), at the price of
    deciding each call only when it reaches the tool node: a stopping outcome then ends the run after
    the calls that ran before it in the same turn, rather than before any of them. Every call gets the
    same decision as under :class:`AgentGuardMiddleware` (one Pipeline, the same enforcement)."""

    after_model = AgentMiddleware.after_model
    aafter_model = AgentMiddleware.aafter_model

    @property
    def name(self) -> str:
        return "AgentGuardToolGate"
