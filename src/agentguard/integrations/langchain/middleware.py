"""The middleware and the tool gate (see the package doc): LangChain objects in, Pipeline outcomes out."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Annotated, Any, Awaitable, Callable

from ...core.audit import AuditSink
from ...core.enforcement import Enforcement, Outcome
from ...core.errors import InputError, require
from ...core.guard import Guard
from ...core.pipeline import RESERVED_KEYS, Pipeline, RunState, call_key
from ...core.runs import RunEvicted
from ...core.types import Context, Decision, ToolCall, Verdict
from ..recording import TraceRecorder
from ..common import as_facts, plain, refusal_message
from .hitl import APPROVER, Human, as_reviewed, hitl_decision, hitl_request
from .reading import _pinned, _reading
from .seal import SEAL, Seal, ToolSwapped, attach, caught

require("langchain.agents.middleware", "integrations")

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402
from typing_extensions import NotRequired  # noqa: E402

__all__ = ["AgentGuardMiddleware", "AgentGuardState", "AgentGuardToolGate"]

HALT_KEY = "agentguard_halt"
FACTS_KEY = "agentguard_facts"

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
    """The call to decide: a deep copy of the framework's arguments, so that nothing that still holds the
    model's tool-call dict (a parallel tool of the same turn reading the state, a callback) can change
    what was checked; what runs is a copy of exactly the checked call (:meth:`AgentGuardMiddleware._apply`)."""
    return ToolCall(str(tc.get("name") or "?"), copy.deepcopy(dict(tc.get("args") or {})), str(tc.get("id") or ""))


def _seal(run: Any) -> tuple[Seal, Callable[[], None]]:
    """The seal of the request the gate runs (:mod:`.seal`), set for the handler's context and in the tool node's
    config for this call; ``(seal, what closes it)``."""
    tool = getattr(run, "tool", None)
    injected = frozenset(getattr(tool, "_injected_args_keys", ()) or ())
    seal = Seal(str(getattr(tool, "name", None) or run.tool_call["name"]), dict(run.tool_call.get("args") or {}),
                injected)
    token = SEAL.set(seal)
    attach(getattr(getattr(run, "runtime", None), "config", None), seal)

    def unseal() -> None:
        seal.closed = True  # a tool the handler left running starts no more under it
        SEAL.reset(token)

    return seal, unseal


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


class AgentGuardMiddleware(AgentMiddleware):
    """Gate every tool call of a LangChain v1 agent with any agentguard Guard (see the module doc).

    ``strategy``: the enforcement strategy (an :class:`~agentguard.core.enforcement.Enforcement` or a
    name such as ``"CRP+TEH"``); None uses the deciding guard's own ``strategy`` (a policy's), else the
    default. ``audit``: an audit sink (a failing sink refuses, fail closed). ``recorder``: a trace
    recorder. ``escalate``: ``"interrupt"`` (ask through LangGraph) or ``"reject"``. ``on_error``: the
    decision for a guard that fails (HALT). ``state_fn(context, call)`` sets ``context.state``.
    ``shadow``: the guard only observes (every call runs; would-be refusals are audited).
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
        shadow: bool = False,
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
            guard, strategy=strategy, audit=audit, max_runs=max_runs, on_error=on_error, timeout_s=timeout_s,
            state_fn=state_fn, adapter="langchain", recorder=recorder,
            escalate="ask" if escalate == "interrupt" else "reject", shadow=shadow,
        )
        self.on_reject = on_reject
        self.escalate = escalate
        self.check_proposals = check_proposals
        self._tools: dict[str, Any] = {}  # the agent's tools by name, as the model was last offered them

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
    def _learn(self, request: Any) -> None:
        """Keep the tools the model is offered, so that ``after_model`` judges each proposal as its tool
        will read it (:func:`_reading`), as the gate does."""
        tools = {t.name: t for t in (getattr(request, "tools", None) or []) if hasattr(t, "_parse_input")}
        if tools:
            if len(self._tools) > 1000:
                self._tools.clear()
            self._tools.update(tools)

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        self._learn(request)
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        self._learn(request)
        return await handler(request)

    def _proposals(self, state: Any) -> list[ToolCall]:
        if not self.check_proposals:
            return []
        msgs = state.get("messages") or []
        last = msgs[-1] if msgs else None
        if not (isinstance(last, AIMessage) and last.tool_calls):
            return []
        return [_reading(self._tools.get(str(tc.get("name"))), _to_call(tc), state) for tc in last.tool_calls]

    def _turn(self, state: Any, runtime: Any) -> tuple[Run, list[ToolCall]]:
        calls = self._proposals(state)
        if not calls:
            return "", calls
        st = self._state(_run_key(state), _facts(state, runtime))
        if not isinstance(st, RunState) or st.pending:
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
    def _begin(self, request: Any) -> tuple[Run, ToolCall, Outcome | None, dict[str, dict[str, Any]]]:
        """The run, the call as its tool reads it (:func:`_reading`), the outcome held for it, and the
        model's arguments that read as it (by call key: what is handed to the tool when that call runs);
        the run's facts are merged in only when the call is still to be decided (a held outcome was
        decided with them)."""
        key = _run_key(request.state, getattr(request.runtime, "config", None))
        raw = _to_call(request.tool_call)
        st, call = self._state(key), _reading(getattr(request, "tool", None), raw, getattr(request, "state", None))
        out = self._take(st, call)
        if out is None and call is not raw:  # decided after the model as given (its tool was not known then)
            earlier = self._take(st, raw)
            if earlier is not None and not earlier.execute:
                out = earlier  # a refusal stands; an allowance of another reading is decided again
        if out is None:
            self._merge(st, _facts(request.state, request.runtime))
        return st, call, out, {call_key(call): dict(raw.arguments)}

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

    def _ask(self, st: Run, out: Outcome, call: ToolCall) -> Human:
        self._hold(st, out)
        answer = interrupt(hitl_request(out))  # GraphInterrupt now; the human's answer when resumed
        self._unhold(st, out)
        return Human(hitl_decision(answer), out, call)

    def _refused(self, out: Outcome, call: ToolCall, why: str) -> Outcome:
        """A call refused after its decision (it would not run as decided): a Pipeline decision too (audited)."""
        return self.pipeline.decide(out.run_id or call.call_id, call, refuse=Verdict(
            Decision.REJECT, f"{call.name}: {why}", "agentguard"))

    def _apply(self, request: Any, call: ToolCall, out: Outcome, sources: dict[str, dict[str, Any]],
               human: Human | None = None) -> tuple[Any, Any]:
        """``(request to run, None)`` when the outcome runs a call of this tool, else ``(None, what the
        tool node answers)``: a ToolMessage, or a Command that also marks the run halted. ``sources``: the
        arguments, by call key, whose reading by the tool is that call (the model's, a human's edit)."""
        c = out.call
        tool, state = getattr(request, "tool", None), getattr(request, "state", None)
        if c is not None and c.name == call.name:
            # what runs reads as exactly outcome.call, and is a private deep copy: never the dict the
            # model's message holds, which another tool of the same turn may have changed since (TOCTOU)
            args = sources.get(call_key(c))
            if args is None:  # the guard's own arguments (a MODIFY): they must read as themselves
                args = dict(c.arguments)
                if call_key(_reading(tool, c, state)) != call_key(c):
                    c, out = None, self._refused(out, call, "the guard's arguments are not what the tool would receive")
            pinned = _pinned(tool, args, c, state) if c is not None else None
            if c is not None and pinned is None:  # the tool's validation reads the judged arguments otherwise now
                c, out = None, self._refused(out, call, "its arguments no longer read as the call the guard judged")
            if c is not None:
                tc = request.tool_call
                run = request.override(tool_call={**tc, "args": copy.deepcopy(args), "id": tc.get("id") or ""},
                                       **({"tool": pinned} if pinned is not None and pinned is not request.tool else {}))
                return run, None
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

    @staticmethod
    def _edit(request: Any, human: Human, sources: dict[str, dict[str, Any]]) -> ToolCall:
        """A human's edited call as its tool reads it (what is decided); its arguments are what runs."""
        assert human.edited is not None
        edited = _reading(getattr(request, "tool", None), human.edited, getattr(request, "state", None))
        sources[call_key(edited)] = copy.deepcopy(dict(human.edited.arguments))
        return edited

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        request = as_reviewed(request)  # a LangChain HITL reviewer's edit, which runs inside: judged as it will run
        st, call, out, sources = self._begin(request)
        out = out or self.pipeline.decide(st, call)
        human = None
        if out.ask:
            human = self._ask(st, out, call)
            if human.kind == "approve":
                out = self.pipeline.resolve(out, True, approver=APPROVER)
            elif human.edited is not None:
                out = self.pipeline.decide(st, self._edit(request, human, sources))
                if out.ask:  # the edit is the human's approval of exactly this call
                    out = self.pipeline.resolve(out, True, approver=APPROVER)
            else:
                out = self.pipeline.resolve(out, False, approver=APPROVER)
        run, answer = self._apply(request, call, out, sources, human)
        if run is None:
            return answer
        seal, unseal = _seal(run)
        try:
            result = handler(run)
        except ToolSwapped as exc:
            result = None
            caught(seal, exc)
        finally:
            unseal()
        return self._ran(call, out, seal, result)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        request = as_reviewed(request)
        st, call, out, sources = self._begin(request)
        out = out or await self.pipeline.adecide(st, call)
        human = None
        if out.ask:
            human = self._ask(st, out, call)
            if human.kind == "approve":
                out = await self.pipeline.aresolve(out, True, approver=APPROVER)
            elif human.edited is not None:
                out = await self.pipeline.adecide(st, self._edit(request, human, sources))
                if out.ask:  # the edit is the human's approval of exactly this call
                    out = await self.pipeline.aresolve(out, True, approver=APPROVER)
            else:
                out = await self.pipeline.aresolve(out, False, approver=APPROVER)
        run, answer = self._apply(request, call, out, sources, human)
        if run is None:
            return answer
        seal, unseal = _seal(run)
        try:
            result = await handler(run)
        except ToolSwapped as exc:
            result = None
            caught(seal, exc)
        finally:
            unseal()
        return self._ran(call, out, seal, result)

    def _ran(self, call: ToolCall, out: Outcome, seal: Seal, result: Any) -> Any:
        """What the handler of a decided call answered, recorded; a refusal when a tool other than the decided call
        started inside it (:mod:`.seal`: that tool's body did not run)."""
        if seal.refused is None:
            self.pipeline.record(out, observation=getattr(result, "content", result))
            return result
        out = self._refused(out, call, seal.refused)
        text = _refusal_text(out, call)
        self.pipeline.record(out, observation=text)
        return ToolMessage(text, tool_call_id=call.call_id, name=call.name, status="error")


class AgentGuardToolGate(AgentGuardMiddleware):
    """The gate alone: ``wrap_tool_call``/``awrap_tool_call`` (plus the halt hooks), without the
    ``after_model`` proposal check. One LangGraph node fewer per model turn (cheaper), at the price of
    deciding each call only when it reaches the tool node: a stopping outcome then ends the run after
    the calls that ran before it in the same turn, rather than before any of them. Every call gets the
    same decision as under :class:`AgentGuardMiddleware` (one Pipeline, the same enforcement)."""

    after_model = AgentMiddleware.after_model
    aafter_model = AgentMiddleware.aafter_model
    wrap_model_call = AgentMiddleware.wrap_model_call  # type: ignore[assignment]
    awrap_model_call = AgentMiddleware.awrap_model_call  # type: ignore[assignment]

    @property
    def name(self) -> str:
        return "AgentGuardToolGate"
