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
  ``interrupt`` (resume with ``Command(resume=True)`` / ``{"approved": True}`` to run the call, anything
  else refuses it; ``escalate="reject"`` refuses without asking); HALT answers with a refusal and
  ends the run (the middleware's ``before_model`` jumps to the end).
- ``before_agent`` clears a previous halt of the thread; ``after_agent`` finishes the run's trace.

What it can see: the tool name, arguments and call id, the agent state (messages) and the thread id.
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
from .runtime import GuardRuntime, refusal_message

require("langchain.agents.middleware", "integrations")

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402
from typing_extensions import NotRequired  # noqa: E402

__all__ = ["AgentGuardMiddleware", "AgentGuardState"]

HALT_KEY = "agentguard_halt"


class AgentGuardState(AgentState):
    """The agent state plus ``agentguard_halt`` (the reason, once a guard has halted the run)."""

    agentguard_halt: NotRequired[str | None]


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
        return answer.get("approved") is True or answer.get("type") in ("approve", "accept")
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
        ctx = self.runtime.context(key)
        verdicts = [self.runtime.check(ctx, _to_call(tc)) for tc in calls]
        return self._after_model_result(key, ctx, calls, verdicts)

    @hook_config(can_jump_to=["end"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        calls = self._proposals(state) if self.check_proposals else []
        if not calls:
            return None
        key = _run_key(state)
        ctx = self.runtime.context(key)
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

    def _ask(self, call: ToolCall, verdict: Verdict) -> bool:
        answer = interrupt(
            {"type": "agentguard_approval", "tool_call": call.to_dict(), "verdict": verdict.to_dict()}
        )
        return _approved(answer)

    def _begin(self, request: Any) -> tuple[str, Context, ToolCall]:
        key = _run_key(request.state, getattr(request.runtime, "config", None))
        return key, self.runtime.context(key), _to_call(request.tool_call)

    def _decide(self, request: Any, verdict: Verdict, call: ToolCall) -> tuple[str, Any, Verdict]:
        """``(what, arg, verdict)``: run / refuse / modify, after asking a human where the verdict says so."""
        what, arg = self._plan(request, verdict, call)
        if what == "ask":
            ok = self._ask(call, verdict)  # raises GraphInterrupt the first time; returns on resume
            what, arg = ("run", request) if ok else ("refuse", self.on_reject == "end")
            verdict = Verdict(
                Decision.ALLOW if ok else Decision.REJECT,
                f"{'approved' if ok else 'refused'} by a human: {verdict.reason}",
                verdict.guard,
                verdict.numbers,
            )
        return what, arg, verdict

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        key, ctx, call = self._begin(request)
        verdict = self._pending.get((key, call.call_id)) or self.runtime.check(ctx, call)
        what, arg, verdict = self._decide(request, verdict, call)
        self._pending.pop((key, call.call_id), None)
        if what == "refuse":
            return self._refuse(ctx, call, verdict, bool(arg))
        result = handler(arg)
        self.runtime.record(ctx, call, verdict, observation=getattr(result, "content", result))
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        key, ctx, call = self._begin(request)
        verdict = self._pending.get((key, call.call_id)) or await self.runtime.acheck(ctx, call)
        what, arg, verdict = self._decide(request, verdict, call)
        self._pending.pop((key, call.call_id), None)
        if what == "refuse":
            return self._refuse(ctx, call, verdict, bool(arg))
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


__all__ += ["scripted_chat_model"]


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


__all__ += ["AgentGuardToolGate"]
