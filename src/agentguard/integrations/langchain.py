"""LangChain v1 / LangGraph adapter: an ``AgentMiddleware`` that puts a guard in front of every tool call.

Usage::

    from langchain.agents import create_agent
    from agentguard.integrations.langchain import AgentGuardMiddleware

    agent = create_agent(model, tools, middleware=[AgentGuardMiddleware(stack)],
                         checkpointer=InMemorySaver())   # a checkpointer is needed for ESCALATE

What it hooks, and what each verdict does:

- ``after_model`` / ``aafter_model`` (predictive check): every tool call the model just proposed is
  checked *before any of them runs*; a HALT on any proposal ends the run there (``jump_to: end``),
  answering each proposed call with a refusal ToolMessage so the conversation stays well formed.
  The other verdicts are kept and enforced when the call reaches the tool node (one guard check per
  call, so stateful guards see each call once).
- ``wrap_tool_call`` / ``awrap_tool_call`` (gate): ALLOW runs the tool unchanged; MODIFY (and a
  RECOVER whose fallback is a call of the same tool) runs it with the verdict's arguments; REJECT
  and other RECOVERs answer with a ``ToolMessage(status="error")`` the model sees, and the run goes
  on (``on_reject="end"`` ends the run instead); ESCALATE asks a human through a LangGraph
  ``interrupt`` whose value is LangChain's own ``HITLRequest`` (``action_requests`` /
  ``review_configs``, what Agent Chat UI and ``HumanInTheLoopMiddleware`` use), resumed with
  LangChain's ``HITLResponse``: ``Command(resume={"decisions": [{"type": "approve"}]})`` runs the
  call; ``edit`` (``edited_action={"name", "args"}``, same tool) runs the edited call if the guard,
  asked again, does not block it; ``reject`` (optional ``message``) refuses it; ``respond``
  (``message``) answers in the tool's place without running it. Anything else refuses (fail
  closed); ``True`` / ``{"approved": True}`` are still read as approve. ``escalate="reject"`` refuses
  without asking. HALT answers with a refusal and ends the run (``before_model`` jumps to the end).
- ``before_agent`` clears a previous halt of the thread; ``after_agent`` finishes the run's trace.

What it can see: the tool name, arguments and call id, the agent state (messages) and the thread id.
Per-run facts for the policies (the user's age, the task, trusted data): pass them as LangGraph's
runtime context (``create_agent(..., context_schema=Facts)`` and ``agent.invoke(..., context=Facts(...))``;
a dict, dataclass or pydantic model) and/or in the state key ``agentguard_facts`` (a dict given in the
input); both are merged into ``Context.metadata`` before each check (runtime context wins), where a
policy reads them with ``{from = "metadata", key = "..."}``.
Sync (``invoke``/``stream``) uses the guard's ``check``, async (``ainvoke``/``astream``) its ``acheck``.
It gates tool *calls*; it does not see streamed model tokens (use
:mod:`agentguard.integrations.streaming` for that) and it cannot see tools run outside the agent's
tool node. Per-run guard state is keyed on the LangGraph ``thread_id`` (or, without one, on the id of
the run's first message).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from ..core.errors import require
from ..core.guard import Guard
from ..core.types import Context, Decision, ToolCall, Verdict
from .recording import TraceRecorder
from .runtime import GuardRuntime, as_facts, refusal_message

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


class AgentGuardState(AgentState):
    """The agent state plus ``agentguard_halt`` (the reason, once a guard has halted the run) and
    ``agentguard_facts`` (per-run facts for the policies, given in the input)."""

    agentguard_halt: NotRequired[str | None]
    agentguard_facts: NotRequired[dict[str, Any] | None]


def _facts(state: Any, runtime: Any) -> dict[str, Any]:
    """The run's facts: the state's ``agentguard_facts`` overlaid with the runtime context."""
    out: dict[str, Any] = {}
    st = state.get(FACTS_KEY) if isinstance(state, dict) else getattr(state, FACTS_KEY, None)
    if isinstance(st, dict):
        out.update(st)
    out.update(as_facts(getattr(runtime, "context", None)))
    return out


def hitl_request(call: ToolCall, verdict: Verdict) -> dict[str, Any]:
    """LangChain's ``HITLRequest`` for one escalated call (plus the verdict under ``agentguard``)."""
    return {
        "action_requests": [
            {
                "name": call.name,
                "args": dict(call.arguments),
                "description": f"agentguard ({verdict.guard or 'guard'}) asks a human: {verdict.reason}",
            }
        ],
        "review_configs": [{"action_name": call.name, "allowed_decisions": list(DECISIONS)}],
        "agentguard": {"tool_call_id": call.call_id, "verdict": verdict.to_dict()},
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


def _to_call(tc: dict[str, Any]) -> ToolCall:
    return ToolCall(str(tc.get("name") or "?"), dict(tc.get("args") or {}), str(tc.get("id") or ""))


def _approved(answer: Any) -> bool:
    if answer is True:
        return True
    if isinstance(answer, dict):
        return answer.get("approved") is True or answer.get("type") == "approve"
    return isinstance(answer, str) and answer.strip().lower() in ("approve", "approved", "yes", "y")


class AgentGuardMiddleware(AgentMiddleware):
    """Gate every tool call of a LangChain v1 agent with any agentguard Guard (see the module doc)."""

    state_schema = AgentGuardState

    def __init__(
        self,
        guard: Guard,
        *,
        recorder: TraceRecorder | None = None,
        on_reject: str = "message",
        escalate: str = "interrupt",
        check_proposals: bool = True,
        on_error: Decision | str = Decision.HALT,
        state_fn: Callable[[Context, Any], Any] | None = None,
    ) -> None:
        super().__init__()
        if on_reject not in ("message", "end"):
            from ..core.errors import InputError

            raise InputError(f"on_reject must be 'message' or 'end', not {on_reject!r}")
        if escalate not in ("interrupt", "reject"):
            from ..core.errors import InputError

            raise InputError(f"escalate must be 'interrupt' or 'reject', not {escalate!r}")
        self.runtime = GuardRuntime(
            guard, recorder=recorder, adapter="langchain", on_error=on_error, state_fn=state_fn
        )
        self.on_reject = on_reject
        self.escalate = escalate
        self.check_proposals = check_proposals
        self._pending: dict[tuple[str, str], Verdict] = {}

    @property
    def name(self) -> str:
        return "AgentGuardMiddleware"

    # -- run boundaries ---------------------------------------------------------------------------
    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return {HALT_KEY: None} if state.get(HALT_KEY) else None

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return {"jump_to": "end"} if state.get(HALT_KEY) else None

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_model(state, runtime)

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        key = _run_key(state)
        self._pending = {k: v for k, v in self._pending.items() if k[0] != key}
        self.runtime.finish(key, halted=bool(state.get(HALT_KEY)))
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    # -- predictive check on proposals -----------------------------------------------------------
    def _proposals(self, state: Any) -> list[dict[str, Any]]:
        msgs = state.get("messages") or []
        last = msgs[-1] if msgs else None
        return list(last.tool_calls) if isinstance(last, AIMessage) and last.tool_calls else []

    def _after_model_result(
        self, key: str, ctx: Context, calls: list[dict[str, Any]], verdicts: list[Verdict]
    ) -> dict[str, Any] | None:
        halting = next((v for v in verdicts if v.decision is Decision.HALT), None)
        if halting is None:
            for tc, v in zip(calls, verdicts):
                self._pending[(key, str(tc.get("id") or ""))] = v
            return None
        msgs = []
        for tc, v in zip(calls, verdicts):
            call = _to_call(tc)
            text = (
                refusal_message(halting if v is halting else v, call)
                if v.blocks
                else (f"not run: the run was halted by {halting.guard}: {halting.reason}")
            )
            self.runtime.record(ctx, call, v, observation=text)
            msgs.append(ToolMessage(text, tool_call_id=call.call_id, name=call.name, status="error"))
        return {"jump_to": "end", HALT_KEY: halting.reason, "messages": msgs}

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        calls = self._proposals(state) if self.check_proposals else []
        if not calls:
            return None
        key = _run_key(state)
        ctx = self.runtime.context(key, **_facts(state, runtime))
        verdicts = [self.runtime.check(ctx, _to_call(tc)) for tc in calls]
        return self._after_model_result(key, ctx, calls, verdicts)

    @hook_config(can_jump_to=["end"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        calls = self._proposals(state) if self.check_proposals else []
        if not calls:
            return None
        key = _run_key(state)
        ctx = self.runtime.context(key, **_facts(state, runtime))
        verdicts = [await self.runtime.acheck(ctx, _to_call(tc)) for tc in calls]
        return self._after_model_result(key, ctx, calls, verdicts)

    # -- the gate ------------------------------------------------------------------------------------
    def _refuse(self, ctx: Context, call: ToolCall, verdict: Verdict, end: bool) -> ToolMessage | Command:
        text = refusal_message(verdict, call)
        self.runtime.record(ctx, call, verdict, observation=text)
        msg = ToolMessage(text, tool_call_id=call.call_id, name=call.name, status="error")
        if end:
            return Command(update={"messages": [msg], HALT_KEY: verdict.reason})
        return msg

    def _plan(self, request: Any, verdict: Verdict, call: ToolCall) -> tuple[str, Any]:
        """('run', request) | ('ask', None) | ('refuse', end?) for a verdict."""
        d = verdict.decision
        if d is Decision.ALLOW:
            return "run", request
        if d in (Decision.MODIFY, Decision.RECOVER):
            act = verdict.action
            if isinstance(act, ToolCall) and act.name == call.name:
                args = dict(act.arguments)
            elif d is Decision.MODIFY and isinstance(act, dict):
                args = dict(act)
            else:
                return "refuse", self.on_reject == "end"
            return "run", request.override(tool_call={**request.tool_call, "args": args})
        if d is Decision.ESCALATE:
            return ("ask", None) if self.escalate == "interrupt" else ("refuse", self.on_reject == "end")
        if d is Decision.HALT:
            return "refuse", True
        return "refuse", self.on_reject == "end"

    def _begin(self, request: Any) -> tuple[str, Context, ToolCall]:
        key = _run_key(request.state, getattr(request.runtime, "config", None))
        ctx = self.runtime.context(key, **_facts(request.state, request.runtime))
        return key, ctx, _to_call(request.tool_call)

    def _decide(self, key: str, request: Any, verdict: Verdict, call: ToolCall) -> tuple[str, Any, Verdict]:
        """``(what, arg, verdict)`` with what in run / refuse / respond / recheck / approve (the wrap path
        confirms an approval), after asking a human (LangChain's HITL request and decisions) where the
        verdict says so."""
        what, arg = self._plan(request, verdict, call)
        if what != "ask":
            return what, arg, verdict
        self._pending[(key, call.call_id)] = verdict  # the resumed node reuses it (one check per call)
        d = hitl_decision(interrupt(hitl_request(call, verdict)))  # GraphInterrupt first; the answer on resume
        kind, why = d["type"], verdict.reason
        if kind == "approve":  # the wrap path confirms it with the escalating guard (the service's RemoteGuard)
            return "approve", request, verdict
        if kind == "respond" and isinstance(d.get("message"), str):
            text = d["message"]
            return "respond", text, Verdict(Decision.REJECT, f"answered by a human instead: {why}", verdict.guard)
        if kind == "edit":
            ea = d.get("edited_action")
            if isinstance(ea, dict) and ea.get("name") == call.name and isinstance(ea.get("args"), dict):
                return "recheck", ToolCall(call.name, dict(ea["args"]), call.call_id), verdict
            why = f"an edit must name the same tool {call.name} and give args: {why}"
        note = d.get("message") if kind == "reject" and isinstance(d.get("message"), str) else ""
        refused = Verdict(Decision.REJECT, f"refused by a human{': ' + note if note else ''} ({why})", verdict.guard)
        return "refuse", self.on_reject == "end", refused

    def _asked(self, v: Verdict) -> Verdict | None:
        """The escalation a human answers (reported to the escalating guard whatever the answer)."""
        return v if v.decision is Decision.ESCALATE and self.escalate == "interrupt" else None

    @staticmethod
    def _declined(v: Verdict) -> Verdict:
        return Verdict(Decision.REJECT, f"not approved by a human: {v.reason}", v.guard, v.numbers)

    @staticmethod
    def _approval(v: Verdict, edited: bool = False) -> Verdict:
        return Verdict(Decision.ALLOW, f"{'edited and ' if edited else ''}approved by a human: {v.reason}",
                       v.guard, v.numbers)

    def _approved(self, request: Any, confirmed: Verdict) -> tuple[str, Any, Verdict]:
        if confirmed.decision is Decision.ALLOW:
            return "run", request, confirmed
        return "refuse", self.on_reject == "end", confirmed

    def _after_edit(self, request: Any, edited: ToolCall, v: Verdict) -> tuple[str, Any, Verdict]:
        """The human's edited call, checked again: run unless the guard blocks it (ESCALATE is the
        human's own approval of exactly this edit)."""
        if v.decision in (Decision.ALLOW, Decision.ESCALATE):
            req = request.override(tool_call={**request.tool_call, "args": dict(edited.arguments)})
            return "run", req, Verdict(Decision.ALLOW, f"edited and approved by a human: {v.reason}", v.guard)
        end = v.decision is Decision.HALT or self.on_reject == "end"
        return "refuse", end, Verdict(v.decision if v.blocks else Decision.REJECT,
                                      f"the human's edit was refused: {v.reason}", v.guard, v.numbers)

    def _finish(self, ctx: Context, call: ToolCall, what: str, arg: Any, verdict: Verdict) -> Any:
        if what == "refuse":
            return self._refuse(ctx, call, verdict, bool(arg))
        self.runtime.record(ctx, call, verdict, observation=arg)
        return ToolMessage(arg, tool_call_id=call.call_id, name=call.name, status="success")

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        key, ctx, call = self._begin(request)
        verdict = self._pending.get((key, call.call_id)) or self.runtime.check(ctx, call)
        asked = self._asked(verdict)
        what, arg, verdict = self._decide(key, request, verdict, call)
        self._pending.pop((key, call.call_id), None)
        if asked is not None and what in ("refuse", "respond", "recheck"):  # the human did not approve it
            self.runtime.confirm(asked, call, self._declined(asked), APPROVER)
        if what == "approve":
            what, arg, verdict = self._approved(arg, self.runtime.confirm(verdict, call, self._approval(verdict),
                                                                          APPROVER))
        if what == "recheck":
            v = self.runtime.check(ctx, arg)
            if v.decision is Decision.ESCALATE:  # the edit is the human's approval of exactly this call
                v = self.runtime.confirm(v, arg, self._approval(v, True), APPROVER)
            what, arg, verdict = self._after_edit(request, arg, v)
        if what != "run":
            return self._finish(ctx, call, what, arg, verdict)
        result = handler(arg)
        self.runtime.record(ctx, call, verdict, observation=getattr(result, "content", result))
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        key, ctx, call = self._begin(request)
        verdict = self._pending.get((key, call.call_id)) or await self.runtime.acheck(ctx, call)
        asked = self._asked(verdict)
        what, arg, verdict = self._decide(key, request, verdict, call)
        self._pending.pop((key, call.call_id), None)
        if asked is not None and what in ("refuse", "respond", "recheck"):  # the human did not approve it
            await self.runtime.aconfirm(asked, call, self._declined(asked), APPROVER)
        if what == "approve":
            what, arg, verdict = self._approved(arg, await self.runtime.aconfirm(
                verdict, call, self._approval(verdict), APPROVER))
        if what == "recheck":
            v = await self.runtime.acheck(ctx, arg)
            if v.decision is Decision.ESCALATE:  # the edit is the human's approval of exactly this call
                v = await self.runtime.aconfirm(v, arg, self._approval(v, True), APPROVER)
            what, arg, verdict = self._after_edit(request, arg, v)
        if what != "run":
            return self._finish(ctx, call, what, arg, verdict)
        result = await handler(arg)
        self.runtime.record(ctx, call, verdict, observation=getattr(result, "content", result))
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
    deciding each call only when it reaches the tool node: a HALT then stops the run after the calls
    that ran before it in the same turn, rather than before any of them."""

    after_model = AgentMiddleware.after_model
    aafter_model = AgentMiddleware.aafter_model

    @property
    def name(self) -> str:
        return "AgentGuardToolGate"

