"""OpenAI Agents SDK adapter: tool input/output guardrails, the SDK's own approval flow, a trace processor.

Usage::

    from agents import Agent, Runner, add_trace_processor
    from agentguard.integrations.openai_agents import AgentsGuard

    ag = AgentsGuard(stack, strategy="CRP+TEH")   # any agentguard Guard; strategy optional
    agent = Agent(name="a", model=..., tools=ag.guard_tools([send_email, delete_file]))
    add_trace_processor(ag.trace_processor(TraceRecorder("traces.jsonl")))

Every call goes through one :class:`~agentguard.core.pipeline.Pipeline` (``adapter="openai_agents"``):
it converts, decides fail-closed, applies the enforcement strategy (``strategy=``, else the deciding
guard's own, e.g. a policy table's ``strategy = "CRP+TEH"``), audits (``audit=``) and keeps the run's
state. This module only translates: an SDK tool call becomes a :class:`~agentguard.core.ToolCall`, and the
:class:`~agentguard.core.enforcement.Outcome` becomes the SDK's tool-guardrail behaviour
(``@tool_input_guardrail``):

| outcome | behaviour |
|---|---|
| executes the proposed call | ``ToolGuardrailFunctionOutput.allow`` - the tool runs unchanged |
| executes another call (MODIFY, a RECOVER's fallback) | ``reject_content`` naming the call to make (guardrails cannot rewrite arguments) |
| refused, run goes on (REJECT, a CRP round, a halted tool) | ``reject_content(message)`` - the tool does not run; the model receives the message |
| ``ask`` (ESCALATE) | the SDK's own human approval: the run stops with an interruption (``result.interruptions``); ``state = result.to_state(); state.approve(item)`` (or ``reject``) and ``Runner.run(agent, state)`` resumes; the SDK's answer is the human's answer to :meth:`Pipeline.resolve <agentguard.core.pipeline.Pipeline.resolve>`, and only exactly the approved call runs, once. With an ``approve(verdict, call)`` callback, it answers instead |
| stops the run (HALT, TT) | ``raise_exception`` - the SDK raises ``ToolInputGuardrailTripwireTriggered`` |

How it reaches the SDK: :meth:`AgentsGuard.guard_tools` sets each tool's ``needs_approval`` to a function
that decides the call (``Pipeline.adecide_turn``: the outcome is held for that call) and answers the
SDK "ask a human" exactly when the outcome asks (or the tool's own ``needs_approval`` does). The input
guardrail, which the SDK runs right before the tool body, takes the held outcome back with
``Pipeline.take`` - matched by what the call is (tool name and canonical arguments,
:func:`~agentguard.core.pipeline.call_key`), never by the SDK call id - so the guard decides each call
once, across an interruption too. An asked outcome is settled with the SDK's approval record for that
very call (``is_tool_approved``); a human's rejection (for which the SDK runs no guardrail) is settled
at the run's next call, through the strategy like any refusal. An ``ask`` the SDK was never asked about
is refused (fail closed). :meth:`AgentsGuard.approval_request` gives what the approver must see for an
interruption: every guard's verdict.

The call's arguments (the model's JSON text, which the tool reads itself) are read once, strictly
(:func:`~agentguard.integrations.common.read_arguments`): a key given twice, ``NaN``/``Infinity``, a
number that overflows, a lone surrogate, text that is not JSON or not an object is refused through the
Pipeline (its ``on_error`` decision, audited) before the tool runs, even after a human approved the SDK's
interruption for it: a tool that reads its raw text with another parser (first key wins, a JSON-repair
helper, a service the text is forwarded to) can never run something the guard read differently. A function
tool is then judged with the arguments the SDK calls it with (its pydantic validation: a stripped string,
``" 5000 "`` or ``5000.0`` as the int ``5000``, defaults, a field validator's rewrite; see ``_reading``):
when validation changes the arguments, the SDK skips ``needs_approval`` and asks a human itself, and the
input guardrail then judges the validated call (an ESCALATE it raises there is refused: that human was not
shown the guard's verdicts). An agent run as a tool (``Agent.as_tool(parameters=...)``) is judged with the input
its nested agent receives (:func:`~.openai_agents_reading.agent_tool_reading`), in ``needs_approval`` and the guardrail.

The SDK (0.24) refuses a model turn with an empty call id, or one id used for two different calls, before
any tool or guardrail runs (``ModelBehaviorError``), and skips a call re-sent under an id it already
completed; agentguard adds its own matching on top, so even a framework that let such ids through could
not run a refused call.

Per-run facts: the ``context`` given to ``Runner.run(agent, input, context=...)`` (a dict, dataclass or
pydantic model) is merged into ``Context.metadata`` before each decision; a policy reads it with
``{from = "metadata", key = "user_info.age"}``. A ``run_id`` in those facts names the guard's run;
otherwise the SDK trace id does (kept across an interruption: the resumed run reattaches to its trace);
with tracing disabled every run shares the key ``"default"``.

The optional output guardrail (``output_guard=``) checks a tool's result as ``Step(action=call,
output=text)`` through its own Pipeline before the model sees it (a refusal replaces the result by the
message, a stop raises ``ToolOutputGuardrailTripwireTriggered``).

What it can see: the tool name (``namespace.name`` for a tool in a ``tool_namespace``: the name the SDK dispatches
and approves, so an allow list granting ``read`` grants neither ``safe.read`` nor ``danger.read``; refusing rules
meet every namespace form), the JSON arguments, the call id and (output guardrail) the result of *function tools*,
and (through :meth:`AgentsGuard.guard_agent`) the tools of an agent's MCP servers and each handoff's call before
its ``on_invoke_handoff`` runs; it does not see hosted tools (web search, code interpreter, hosted MCP run by OpenAI). :meth:`AgentsGuard.guard_agent` gates every tool an agent reaches, now and as it changes,
and refuses to configure a tool it cannot gate (:mod:`.openai_agents_reach`). Guardrails run inside the
SDK's async loop, so the guard's ``acheck`` is used; ``Runner.run_sync`` and ``Runner.run_streamed``
are gated identically (tool calls are complete before they execute).

Recording (``recorder=`` or ``trace_processor(recorder)``): the Pipeline records each guarded call with
its decision and ``state_fn`` state, one line per run across interruptions (:class:`AgentGuardTraceProcessor`).
"""

from __future__ import annotations

import functools
import inspect
import json
import threading
from collections import OrderedDict, defaultdict, deque
from typing import Any, Awaitable, Callable

from ..core.audit import AuditSink
from ..core.enforcement import Enforcement, Outcome
from ..core.errors import InputError, require
from ..core.guard import Guard
from ..core.pipeline import Pipeline, approval_request, call_key
from ..core.types import Context, Decision, Step, ToolCall, Verdict
from .recording import TraceRecorder
from .common import Unreadable, as_facts, refusal_message, tool_call_of

require("agents", "integrations")

from agents import (  # noqa: E402
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    ToolOutputGuardrailData,
    tool_input_guardrail,
    tool_output_guardrail,
)
from agents.tracing import get_current_trace  # noqa: E402

from .agents_tracing import AgentGuardTraceProcessor, _parse_args  # noqa: E402
from .openai_agents_mcp import built_mcp_tool, gate_converted, let_through  # noqa: E402
from .openai_agents_reach import bind, bound, call_name, passed, reach, tool_name_of  # noqa: E402
from .openai_agents_reading import (  # noqa: E402
    BINDING, McpListed, _item_call, _prepared, _reading, _refusal, _tool_of, agent_tool_reading)

__all__ = ["AgentGuardTraceProcessor", "AgentsGuard"]

Approve = Callable[[Verdict, ToolCall], "bool | Awaitable[bool]"]
#: who answered, as the audit log (and the guard service, for a RemoteGuard's escalation) records it
APPROVER = "human via the Agents SDK approval"
CALLBACK_APPROVER = "operator (approve callback)"
ADAPTER = "openai_agents"


def _agent_read(tool: Any, call: ToolCall) -> Any:  # needs_approval's reading of an agent tool's call
    return agent_tool_reading(tool, "", call)


def _run_key() -> str:
    try:
        tr = get_current_trace()
    except Exception:
        tr = None
    tid = getattr(tr, "trace_id", None) if tr is not None else None
    return str(tid) if tid and tid != "no-op" else "default"


class AgentsGuard:
    """Agents SDK tool guardrails (and a trace processor) around any agentguard Guard, through one
    :class:`~agentguard.core.pipeline.Pipeline` (see the module doc).

    ``strategy``: the enforcement strategy (an :class:`~agentguard.core.enforcement.Enforcement` or a
    name such as ``"CRP+TEH"``); None uses the deciding guard's own or the default. ``approve(verdict,
    call)``: answers ESCALATEs instead of the SDK's interruption flow. ``audit``: an audit sink.
    ``pipeline``: use this Pipeline (its guard, strategy, audit) instead of building one."""

    def __init__(
        self,
        guard: Guard,
        *,
        output_guard: Guard | None = None,
        approve: Approve | None = None,
        on_error: Decision | str = Decision.HALT,
        state_fn: Callable[[Context, Any], Any] | None = None,
        strategy: Enforcement | str | None = None,
        audit: AuditSink | None = None,
        timeout_s: float | None = None,
        max_runs: int = 10_000,
        pipeline: Pipeline | None = None,
        shadow: bool = False,
        recorder: TraceRecorder | None = None,
    ) -> None:
        self.pipeline = pipeline if pipeline is not None else Pipeline(
            guard, strategy=strategy, audit=audit, on_error=on_error, state_fn=state_fn, adapter=ADAPTER,
            timeout_s=timeout_s, max_runs=max_runs, recorder=recorder, shadow=shadow)
        self.output_pipeline = (
            Pipeline(output_guard, audit=audit, on_error=on_error, adapter=ADAPTER, timeout_s=timeout_s,
                     max_runs=max_runs)
            if output_guard is not None else None
        )
        self.approve = approve
        # asked outcomes by (SDK call id, call identity), for approval_request(item); bounded
        self._asks: OrderedDict[tuple[str, str], Outcome] = OrderedDict()
        # outcomes of calls that ran, waiting for their result (output guardrail / record)
        self._ran: dict[tuple[str, str], deque[Outcome]] = defaultdict(deque)
        # SDK trace id -> the run keys decided in it (a context's run_id, else the trace id), for the processor
        self._trace_runs: dict[str, set[str]] = defaultdict(set)
        # runs that ended a trace with an unanswered ask (an interruption): finished at their next trace end
        self._waiting: set[str] = set()
        self._lock = threading.Lock()
        self.input_guardrail = tool_input_guardrail(name="agentguard")(self._input)
        self.output_guardrail = tool_output_guardrail(name="agentguard_output")(self._output)

    def __repr__(self) -> str:
        return f"AgentsGuard({self.pipeline!r})"

    @property
    def guard(self) -> Guard:
        return self.pipeline.guard

    def guard_tools(self, tools: list[Any]) -> list[Any]:
        """Attach the input (and output) guardrail and the deciding ``needs_approval`` (bound to the name the SDK
        dispatches, :func:`~.openai_agents_reach.tool_name_of`) to each function tool; a tool gated already keeps
        one guardrail each and its own ``needs_approval``; an MCP tool the caller converted (``MCPUtil``) also gates
        the server it calls (:func:`~.openai_agents_mcp.gate_converted`); returns the same list."""
        for t in tools:
            if not hasattr(t, "tool_input_guardrails"):
                raise InputError(f"{t!r} is not a function tool (only function tools take tool guardrails)")
            if self.input_guardrail not in (t.tool_input_guardrails or []):
                t.tool_input_guardrails = [*(t.tool_input_guardrails or []), self.input_guardrail]
            if self.output_guardrail not in (t.tool_output_guardrails or []):
                t.tool_output_guardrails = [*(t.tool_output_guardrails or []), self.output_guardrail]
            defer = getattr(t, BINDING, None) is not None  # an MCP tool: decided once, by its guardrail (as run)
            read = functools.partial(_agent_read, t) if getattr(t, "_is_agent_tool", False) is True else None
            t.needs_approval = bind(self, getattr(t, "needs_approval", False), tool_name_of(t), defer, read)
            if defer:
                gate_converted(self, t)  # the server it calls is gated too (openai_agents_mcp)
        return tools

    def gated(self, tool: Any) -> bool:
        """Whether ``tool`` carries this guard's input guardrail and its ``needs_approval`` for the name it has now."""
        return (self.input_guardrail in (getattr(tool, "tool_input_guardrails", None) or [])
                and bound(self, getattr(tool, "needs_approval", None), tool_name_of(tool)))

    def guard_agent(self, agent: Any, *, allow_unguarded: bool = False) -> Any:
        """Gate everything ``agent`` can run, now and as it changes (:func:`~.openai_agents_reach.reach`): every
        function tool it reaches (its own, those of agents it runs as tools or hands off to, recursively, each
        once), every handoff's invocation, and the agents' hooks that gate tools added later and refuse any tool
        about to run without this guard's decision. A tool the guard cannot gate raises InputError; ``allow_unguarded``
        covers only read-only hosted tools, MCP servers without tool guardrails and a handoff whose agent is gone,
        never a tool that executes commands or drives a machine (:func:`~.openai_agents_reach.unguarded_ok`; a local
        ``ShellTool`` is judged, :mod:`.openai_agents_shell`; the Codex tool is refused, ``runs_codex``).
        Returns ``agent``."""
        reach(self, agent, allow_unguarded)
        return agent

    async def decide_handoff(self, wrapper: Any, name: str, raw: Any,
                             refuse: Verdict | None = None) -> tuple[Outcome, ToolCall]:
        """Decide a handoff's call (``transfer_to_*`` with its input: the model's JSON, or the value its callback
        receives) like a tool call (``refuse``: refused with that verdict): an ask is answered by the ``approve``
        callback, else refused (the SDK asks no human about a handoff)."""
        run, facts = self._run(wrapper)
        proposal = tool_call_of(name, raw, "")
        call = proposal if isinstance(proposal, ToolCall) else ToolCall(name, {}, "")
        out = await self.pipeline.adecide(run, proposal, refuse=refuse, **facts)
        if out.ask:
            out = await self._answer(wrapper, run, call, out, False)  # type: ignore[assignment]
        if not (out.call is not None and call_key(out.call) == call_key(call)):
            self.pipeline.record(out, observation=_refusal(out, call))
        return out, call

    def approval_request(self, item: Any) -> dict[str, Any]:
        """What the approver of an SDK interruption (a ``ToolApprovalItem`` from ``result.interruptions``)
        must be shown: the call, the reason and every guard's verdict
        (:func:`~agentguard.core.pipeline.approval_request`). An item agentguard did not ask about (the
        tool's own ``needs_approval``) gives the call with no verdicts."""
        call = _item_call(item)
        tool = next((t for t in reversed(getattr(getattr(item, "agent", None), "tools", None) or [])
                     if tool_name_of(t) == call.name and getattr(t, "_is_agent_tool", False) is True), None)
        read = agent_tool_reading(tool, "", call) if tool is not None else call  # as its needs_approval decided it
        call = read if isinstance(read, ToolCall) else call
        with self._lock:
            out = self._asks.get((call.call_id, call_key(call)))
        if out is None:
            return {"call": call.to_dict(), "reason": "the tool asks for approval", "verdicts": [],
                    "text": f"{call.name} asks for approval"}
        return approval_request(out)

    def trace_processor(self, recorder: TraceRecorder) -> "AgentGuardTraceProcessor":
        """A trace processor that ends this guard's runs with the SDK's traces; the guard's Pipeline
        records into ``recorder`` (unless it was given one already): one line per run, across
        interruptions, each step with its decision and state."""
        self._joined = True
        if self.pipeline.recorder is None:
            self.pipeline.recorder = recorder
        return AgentGuardTraceProcessor(recorder, guard=self)

    _joined = False  # trace ids are mapped to runs only once a processor exists (no unbounded growth)

    def _interrupted(self, run: str) -> list[Outcome]:
        """The run's held outcomes that wait for a human (an SDK interruption)."""
        st = self.pipeline.runs.peek(run)
        if st is None:
            return []
        with st.lock:
            return [o for held in st.pending.values() for o in held if o.ask]

    def trace_ended(self, trace_id: str, **labels: Any) -> list[str]:
        """The SDK trace ``trace_id`` ended: finish (record) every run decided in it, except a run that
        stopped at an interruption (a human is asked; the resumed ``Runner.run`` continues the same run).
        A run still waiting at its next trace end was not resumed with an answer for that call: the call
        is refused (audited, recorded) and the run finished. Returns the run keys finished."""
        with self._lock:
            runs = sorted(self._trace_runs.pop(trace_id, set()))
        done = []
        for run in runs:
            asked = self._interrupted(run)
            if asked and run not in self._waiting:
                with self._lock:
                    self._waiting.add(run)
                    self._trace_runs[trace_id].add(run)  # the resumed run may make no new decision
                continue
            for o in asked:
                self._forget_ask(o)
                out = self.pipeline.resolve(o, False, approver="nobody (the run ended before an answer)")
                self.pipeline.record(out, observation=_refusal(out, o.proposal))
            self.forget(run, **labels)
            done.append(run)
        return done

    def forget(self, key: str, **labels: Any) -> None:
        """The run ``key`` ended: forget its held outcomes and state; its trace is labelled and finished."""
        with self._lock:
            for rk in [k for k in self._ran if k[0] == key]:
                del self._ran[rk]
            self._waiting.discard(key)
        self.pipeline.finish(key, **labels)
        if self.output_pipeline is not None:
            self.output_pipeline.finish(key)

    # -- translation helpers ---------------------------------------------------------------------
    def _run(self, wrapper: Any) -> tuple[str, dict[str, Any]]:
        facts = as_facts(getattr(wrapper, "context", None))
        named = facts.pop("run_id", None)  # names the run; not a fact (Pipeline.run takes it as the id)
        facts = {k: v for k, v in facts.items() if k not in ("audit_kind", "refuse")}  # adecide's own keywords
        tid = _run_key()
        run = str(named or tid)
        if self._joined and tid != "default":
            with self._lock:
                self._trace_runs[tid].add(run)
        return run, facts

    def _hold(self, run: str, out: Outcome) -> None:
        """Put an outcome back among the run's held ones (the SDK's pre-approval guardrail pass)."""
        st = self.pipeline.runs.peek(run)
        if st is not None:
            with st.lock:
                st.pending.setdefault(out.key, []).append(out)

    async def _settle_rejections(self, run: str, wrapper: Any) -> None:
        """Held outcomes of calls the human rejected in the SDK (no guardrail runs for those): answer them
        now, so the refusal is audited and goes through the strategy before the run's next decision."""
        st = self.pipeline.runs.peek(run)
        if st is None or not st.pending:
            return
        rejected: list[Outcome] = []
        with st.lock:
            for key, held in list(st.pending.items()):
                keep: list[Outcome] = []
                for o in held:
                    call = o.proposal
                    status = None
                    if isinstance(call, ToolCall) and call.call_id:
                        try:
                            status = wrapper.is_tool_approved(call.name, call.call_id)
                        except Exception:  # noqa: BLE001 - unknown: leave it held
                            status = None
                    (rejected if status is False else keep).append(o)
                if keep:
                    st.pending[key] = keep
                else:
                    del st.pending[key]
        for o in rejected:  # (a held outcome that did not ask was asked by the tool's own setting: dropped)
            if o.ask:
                self._forget_ask(o)
                res = await self.pipeline.aresolve(o, False, approver=APPROVER)
                self.pipeline.record(res, observation=_refusal(res, o.proposal))

    def _forget_ask(self, out: Outcome) -> None:
        call = out.proposal
        if isinstance(call, ToolCall):
            with self._lock:
                self._asks.pop((call.call_id, out.key), None)

    async def _answer(self, tc: Any, run: str, call: ToolCall, out: Outcome, held: bool) -> Outcome | None:
        """The human's answer to an asked outcome, through the Pipeline; None while the SDK has not asked
        yet (its optional pre-approval guardrail pass)."""
        if self.approve is not None:
            try:
                ok = self.approve(out.verdict or Verdict(Decision.ESCALATE, "approval"), call)
                if inspect.isawaitable(ok):
                    ok = await ok
            except Exception:  # noqa: BLE001 - a failing approver refuses (fail closed)
                ok = False
            return await self.pipeline.aresolve(out, ok is True, approver=CALLBACK_APPROVER)
        try:
            status = tc.is_tool_approved(call.name, call.call_id) if held else False
        except Exception:  # noqa: BLE001 - unknown approval: refused
            status = False
        if status is None:
            pre = getattr(getattr(getattr(tc, "run_config", None), "tool_execution", None),
                          "pre_approval_tool_input_guardrails", False)
            if pre:
                self._hold(run, out)
                return None
            status = False  # the SDK runs the tool without having asked anyone: refused
        self._forget_ask(out)
        approver = APPROVER if held else "nobody (the SDK was not asked; attach with AgentsGuard.guard_tools)"
        return await self.pipeline.aresolve(out, status is True, approver=approver)

    async def _input(self, data: ToolInputGuardrailData,
                     listed: McpListed | None = None) -> ToolGuardrailFunctionOutput:
        """The input guardrail; ``listed``: the MCP server's tool the SDK runs for this call
        (:mod:`.openai_agents_mcp`), judged under its server's name with the server's reading."""
        tc = data.context
        raw = tc.tool_arguments or ""
        run, facts = self._run(tc)
        tool = listed or _tool_of(data, tc.tool_name) or await built_mcp_tool(data.agent, tc, tc.tool_name)
        name = tool.name if isinstance(tool, McpListed) else \
            call_name(tc.tool_name, getattr(tc, "tool_namespace", None))
        proposal: Any = tool_call_of(name, raw, tc.tool_call_id or "")
        prepared = None
        if not isinstance(proposal, Unreadable):  # judged as the function will receive it (and it receives that)
            given, (proposal, prepared) = proposal, _prepared(tool, raw, proposal)
            if isinstance(proposal, BaseException):  # the SDK's validation refused: refused (a retry might not)
                self.pipeline.take(run, given)
                why = f"the tool's own validation refused the arguments ({type(proposal).__name__}: {proposal})"
                return self._refuse(await self.pipeline.adecide(run, given, refuse=Verdict(
                    Decision.REJECT, why[:500], "agentguard"), **facts), given)
            if isinstance(proposal, ToolCall) and call_key(proposal) != call_key(given):
                self.pipeline.take(run, given)  # held for the model's spelling (an agent tool): decided as it runs
        if isinstance(proposal, Unreadable):  # arguments no strict reader agrees on: refused, never guessed
            self.pipeline.take(run, ToolCall(name, _parse_args(raw), tc.tool_call_id or ""))  # drop
            return self._refuse(await self.pipeline.adecide(run, proposal, **facts),
                                ToolCall(name, {}, tc.tool_call_id or ""))
        call = proposal
        out = self.pipeline.take(run, call)
        held = out is not None
        if out is None:  # not decided by needs_approval (callback mode, or a tool not attached): decide now
            if self.approve is None:
                await self._settle_rejections(run, tc)
            out = await self.pipeline.adecide(run, call, **facts)
        if out.ask:
            answered = await self._answer(tc, run, call, out, held and self.approve is None)
            if answered is None:  # pre-approval pass: the SDK asks the human next
                return ToolGuardrailFunctionOutput.allow(output_info=(out.verdict or Verdict.allow()).to_dict())
            out = answered
        info = out.verdict.to_dict() if out.verdict is not None else {}
        todo = out.call
        if todo is not None and todo.name == call.name and call_key(todo) == call_key(call):
            self.ran(run, call, out)
            if prepared is not None and hasattr(tc, "_function_tool_arguments"):
                tc._function_tool_arguments = prepared  # the function receives the values judged
            passed(tc, self)  # what the agent hooks' backstop looks for (openai_agents_reach)
            let_through(self, tool, raw)  # an MCP tool's call: its gated server sends it once (openai_agents_mcp)
            return ToolGuardrailFunctionOutput.allow(output_info=info)
        return self._refuse(out, call)

    def ran(self, run: str, call: ToolCall, out: Outcome) -> None:
        """``call`` runs under ``out``: kept for its result (output guardrail, record)."""
        with self._lock:
            self._ran[(run, call_key(call))].append(out)

    def _refuse(self, out: Outcome, call: ToolCall) -> ToolGuardrailFunctionOutput:
        """The guardrail's answer for a call that does not run as proposed (recorded with what the model reads)."""
        info = out.verdict.to_dict() if out.verdict is not None else {}
        todo = out.call
        if todo is not None:  # another call runs instead: guardrails cannot rewrite it, so the model is told
            msg = (f"agentguard did not run {call.name} as proposed: {out.message or 'changed'}. "
                   f"Call {todo.name} with arguments {json.dumps(dict(todo.arguments), default=str)} instead")
        else:
            msg = _refusal(out, call)
        self.pipeline.record(out, observation=msg)
        if out.stop:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=info)
        return ToolGuardrailFunctionOutput.reject_content(msg, output_info=info)

    async def _output(self, data: ToolOutputGuardrailData,
                      listed: McpListed | None = None) -> ToolGuardrailFunctionOutput:
        tc = data.context
        tool = listed or _tool_of(data, tc.tool_name) or await built_mcp_tool(data.agent, tc, tc.tool_name)
        name = tool.name if isinstance(tool, McpListed) else \
            call_name(tc.tool_name, getattr(tc, "tool_namespace", None))
        call = ToolCall(name, _parse_args(tc.tool_arguments or ""), tc.tool_call_id or "")
        read = _reading(tool, tc.tool_arguments or "", call)
        call = read if isinstance(read, ToolCall) else call
        run, _ = self._run(tc)
        with self._lock:
            q = self._ran.get((run, call_key(call)))
            ran = q.popleft() if q else None
            if q is not None and not q:
                del self._ran[(run, call_key(call))]
        text = data.output if isinstance(data.output, str) else str(data.output)
        if self.output_pipeline is None:
            if ran is not None:
                self.pipeline.record(ran, observation=text)
            return ToolGuardrailFunctionOutput.allow()
        out = await self.output_pipeline.adecide(run, Step(action=call, output=text))
        if ran is not None:
            self.pipeline.record(ran if out.execute else out, observation=text)
        info = out.verdict.to_dict() if out.verdict is not None else {}
        if out.stop:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=info)
        if not out.execute:
            v = out.verdict or Verdict(Decision.HALT, "no verdict")
            return ToolGuardrailFunctionOutput.reject_content(refusal_message(v, call), output_info=info)
        return ToolGuardrailFunctionOutput.allow(output_info=info)
