"""Every tool an Agents SDK run can execute passes through :class:`~.openai_agents.AgentsGuard` (split from
:mod:`agentguard.integrations.openai_agents`).

Guardrails in the SDK are per tool object, so what the guard gates is decided by which objects carry them.
:func:`reach` (what :meth:`AgentsGuard.guard_agent` runs) walks everything an agent can run and gates it:

- each function tool of the agent, of each agent it runs as a tool (``Agent.as_tool``) and of each agent it
  hands off to, recursively: the input (and output) guardrail and the deciding ``needs_approval``, bound to the
  name the SDK dispatches (``namespace.name`` for a tool in a ``tool_namespace``: the name its traces show);
- each MCP server of each agent (``mcp_servers``): the SDK builds a function tool for each listed tool every turn,
  with the server's ``tool_input_guardrails``/``tool_output_guardrails``; the guard's are added there (the SDK asks
  no human through agentguard for an MCP tool: an ESCALATE of one is refused), and the server's own ``call_tool`` is
  gated (:func:`~.openai_agents_mcp.gate_server`: application code calling it is decided too). A server without
  those fields raises InputError unless ``allow_unguarded``;
- each handoff: the SDK runs a handoff's ``on_invoke_handoff`` (the application's ``on_handoff`` callback, with
  the model's JSON input) for a ``transfer_to_*`` call, which no tool guardrail sees. Its invocation is wrapped:
  the call (tool name and arguments: the value the callback receives, :func:`_handoff_reading`) is decided through
  the guard's Pipeline first. Refused, the callback never runs and the run is steered, not stopped: the handoff
  returns the agent whose model asked for it (the one running, recorded by the hooks before its model call, and
  offering this very handoff), and the handoff's output the model reads is the refusal instead of
  ``{"assistant": name}`` (the handoff's own ``input_filter`` passes the history unchanged for it, so the refusal is
  not filtered away; a ``RunConfig.handoff_input_filter`` still applies). A stop (HALT), or a refusal whose
  running agent is unknown, raises :class:`HandoffRefused` (the run ends). The agent the handoff returns is reached
  in turn (a callback that builds an agent on the fly);
- each agent's ``hooks`` (:class:`GuardHooks`, around the agent's own): when the agent starts and before every model
  call the walk runs again from the running agent, so a tool added after ``guard_agent`` (``agent.tools.append``,
  ``Agent.clone(tools=...)``, which keeps the hooks, a tool copied into a namespace, an MCP server attached) is gated
  before the model can call it, and right before any local tool runs (``on_tool_start``, after the guardrails) a
  function tool whose call did not pass this guard's input guardrail is decided there (:func:`decide_late`): a
  tool the SDK builds for the run only, which no walk of the agent reaches (a ``SandboxAgent``'s capability tools,
  ``exec_command`` among them: the SDK runs a clone of the agent with them, and the hooks see the original), the
  tools of an MCP server attached in the middle of a run. Refused, the tool body never runs and the model receives
  the refusal as the call's output (the run goes on, the model re-plans): the SDK has run its guardrails already,
  so the tool's invocation is wrapped (once per tool object) to answer a call this guard refused with the refusal
  (:func:`_answer_refused`); a stop (HALT) raises :class:`UngatedToolCall` (the run ends).

A local ``ShellTool`` is judged through the SDK's own approval hooks (:mod:`.openai_agents_shell`): refused, the
model reads why; a hosted one, or one with its own approval settings, cannot be gated.

``allow_unguarded=True`` (the caller's choice, stated at configuration) covers only tools OpenAI runs that read
(:data:`READ_ONLY_HOSTED`: web search, file search, image generation, tool search) and MCP servers without tool
guardrails. A tool that executes commands or drives a machine (shell, local shell, computer, apply-patch, code
interpreter, custom tools, programmatic tool calling, hosted MCP, the Codex tool, :func:`~.openai_agents_shell.runs_codex`,
any kind this module does not know) is never covered:
it is refused at configuration, at each walk and at its start, with or without ``allow_unguarded``.

What stays outside: tools OpenAI runs itself (hosted tools, hosted MCP) never reach a local hook; a caller that
replaces ``agent.hooks`` after ``guard_agent`` removes the backstop (the guardrails stay on the tools).
"""

from __future__ import annotations

import inspect
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator

from ..core.errors import InputError
from ..core.pipeline import call_key
from ..core.types import Decision, ToolCall, Verdict
from .openai_agents_reading import (
    LISTING_ATTR, HandoffRefused, UngatedToolCall, _refusal, call_name, closure_adapter)
from .openai_agents_mcp import gate_server, let_through, mcp_listed, remember_listing, wrap_mcp_tools
from .openai_agents_shell import gate_shell, runs_codex, shell_gated, shell_started

from agents import Agent, AgentHooks, handoff as make_handoff  # noqa: E402

if TYPE_CHECKING:
    from .openai_agents import AgentsGuard

__all__ = ["GuardHooks", "HandoffRefused", "READ_ONLY_HOSTED", "UngatedToolCall", "approval_check", "bind", "bound",
           "call_name", "decide_late", "has_passed", "passed", "reach", "tool_name_of", "unguarded_ok"]

#: the attribute a ToolContext carries once a guard's input guardrail let its call run: the ids of those guards
PASSED = "_agentguard_passed"
#: the attribute a ToolContext carries when a guard refused its call at the tool's start: what the model reads
REFUSED = "_agentguard_refused"
#: the attribute a RunContextWrapper carries for the agent whose model turn is running (set before each model call)
RUNNING = "_agentguard_running"
#: the only tool kinds ``allow_unguarded`` covers: OpenAI runs them and they read (search, generate an image); every
#: other kind that is not a function tool (shell, computer, apply-patch, code interpreter, custom, hosted MCP,
#: programmatic tool calling, an unknown class) executes commands or drives a machine and is always refused
READ_ONLY_HOSTED = frozenset({"WebSearchTool", "FileSearchTool", "ImageGenerationTool", "ToolSearchTool"})
#: the refusal of a handoff being executed in this task: (id of the Handoff, what the model reads)
_HANDOFF_REFUSAL: ContextVar[tuple[int, str] | None] = ContextVar("agentguard_handoff_refusal", default=None)


def unguarded_ok(tool: Any) -> bool:
    """Whether ``allow_unguarded`` may cover ``tool``: exactly the SDK's read-only hosted kinds (by class, from the
    SDK's own module; a subclass or look-alike is not covered: it might run anything)."""
    cls = type(tool)
    return cls.__name__ in READ_ONLY_HOSTED and cls.__module__ == "agents.tool"


def passed(tc: Any, ag: Any) -> None:
    """Mark the call of ``tc`` as let through by the guard ``ag`` (several guards may gate one tool)."""
    setattr(tc, PASSED, (*(getattr(tc, PASSED, None) or ()), id(ag)))


def has_passed(tc: Any, ag: Any) -> bool:
    return id(ag) in (getattr(tc, PASSED, None) or ())


def tool_name_of(tool: Any) -> str:
    """:func:`call_name` of a function tool (its explicit ``tool_namespace``)."""
    ns = getattr(tool, "_tool_namespace", None)
    return call_name(str(tool.name), ns if isinstance(ns, str) and ns else None)


def _chain(f: Any) -> Iterator[tuple[Any, str, Any]]:
    """The deciding ``needs_approval`` closures wrapped around each other (several guards on one tool), outermost
    first: ``(guard, name, inner)`` each."""
    while (tag := getattr(f, "_agentguard", None)) is not None:
        yield tag
        f = tag[2]


def bound(ag: Any, f: Any, name: str) -> bool:
    """Whether the ``needs_approval`` ``f`` holds ``ag``'s deciding closure, bound to ``name``."""
    return any(tag[0] is ag and tag[1] == name for tag in _chain(f))


def bind(ag: Any, f: Any, name: str, defer: bool = False, read: Any = None) -> Any:
    """``f`` with ``ag``'s deciding closure bound to ``name``: in its place when ``f`` holds one already (rebound: a
    tool copied into a namespace; each guard decides each call once), else around ``f``. ``defer``: the closure
    decides nothing (the tool's input guardrail decides its call: an MCP tool, read as its server reads it).
    ``read(call)``: the call as the tool receives it (an agent tool, :func:`~.openai_agents_reading.agent_tool_reading`),
    decided instead of the model's parameters."""
    tag = next(_chain(f), None)
    if tag is None or not any(t[0] is ag for t in _chain(f)):
        return approval_check(ag, f, name, defer, read)
    if tag[0] is ag:
        return approval_check(ag, tag[2], name, defer, read)
    return approval_check(tag[0], bind(ag, tag[2], name, defer, read), tag[1], getattr(f, "_agentguard_defer", False),
                          getattr(f, "_agentguard_read", None))


def approval_check(self: "AgentsGuard", own: Any, tool: str, defer: bool = False,
                   read: Any = None) -> Callable[[Any, dict[str, Any], str], Awaitable[bool]]:
    """A ``needs_approval`` function: decides the call (held for the input guardrail) and asks a
    human when the outcome asks, or when the tool's own setting does; ``defer``: only the tool's own setting
    (the input guardrail decides the call: an MCP tool, whose ESCALATE is refused as for the server's own);
    ``read``: as in :func:`bind` (a call it cannot read is left to the input guardrail, which refuses it).
    Moved here from :class:`~.openai_agents.AgentsGuard` (session 25), next to :func:`bind`."""

    async def needs_approval(wrapper: Any, params: dict[str, Any], call_id: str) -> bool:
        mine = own is True
        if not mine and callable(own):
            got = own(wrapper, params, call_id)
            mine = (await got if inspect.isawaitable(got) else got) is True
        if self.approve is not None or defer:
            return mine  # the callback answers ESCALATEs in the input guardrail; a deferred call is decided there
        run, facts = self._run(wrapper)
        await self._settle_rejections(run, wrapper)
        call = ToolCall(tool, dict(params or {}), str(call_id or ""))
        if read is not None:
            call = read(call)
            if not isinstance(call, ToolCall):
                return mine  # its input guardrail refuses it (the same reading fails there)
        [out] = await self.pipeline.adecide_turn(run, [call], **facts)
        if out.ask:
            with self._lock:
                self._asks[(call.call_id, out.key)] = out
                while len(self._asks) > 10_000:
                    self._asks.popitem(last=False)
        return mine or out.ask

    needs_approval._agentguard = (self, tool, own)  # type: ignore[attr-defined]
    needs_approval._agentguard_defer = defer  # type: ignore[attr-defined]
    needs_approval._agentguard_read = read  # type: ignore[attr-defined]
    return needs_approval


def _unreachable(what: str, agent: Any) -> InputError:
    return InputError(f"{what} of agent {getattr(agent, 'name', '?')!r}: the guard cannot gate it "
                      "(allow_unguarded=True covers only read-only hosted tools: web/file/tool search, images)")


def reach(ag: "AgentsGuard", agent: Any, allow_unguarded: bool) -> None:
    """Gate everything ``agent`` can run (see the module doc); raises InputError for what cannot be gated."""
    seen: set[int] = set()
    todo, tools = [agent], []
    while todo:
        a = todo.pop()
        if a is None or id(a) in seen:
            continue
        seen.add(id(a))
        for srv in getattr(a, "mcp_servers", None) or []:
            if hasattr(srv, "tool_input_guardrails"):  # the SDK puts a server's guardrails on each of its tools
                _server_guardrails(ag, srv)
                wrap_mcp_tools(ag, a)  # ... bound here to the server's tool they run (openai_agents_mcp)
            elif not allow_unguarded:
                raise InputError(f"agent {getattr(a, 'name', '?')!r} calls an MCP server that takes no tool guardrails "
                                 "(not gated): put agentguard's MCP proxy in front of it, or pass allow_unguarded=True")
        _hook(ag, a, allow_unguarded)
        for t in getattr(a, "tools", None) or []:
            if not hasattr(t, "tool_input_guardrails"):
                if gate_shell(ag, t):  # a local ShellTool: judged through the SDK's approval hooks
                    continue
                if not (allow_unguarded and unguarded_ok(t)):
                    raise _unreachable(f"tool {getattr(t, 'name', t)!r} is not a function tool", a)
                continue
            if runs_codex(t):  # a function tool whose body runs commands the guard never sees: refused, always
                raise _unreachable(f"tool {getattr(t, 'name', t)!r} runs the Codex agent (its commands are no calls "
                                   "the guard sees)", a)
            if id(t) not in seen and not ag.gated(t):
                tools.append(t)
            seen.add(id(t))
            todo.append(getattr(t, "_agent_instance", None))
        handoffs: list[Any] = getattr(a, "handoffs", None) or []
        for i, h in enumerate(list(handoffs)):
            if isinstance(h, Agent):  # the SDK builds handoff(agent) itself: built here, so it can be wrapped
                h = handoffs[i] = make_handoff(h)
            ref = getattr(h, "_agent_ref", None)
            target = ref() if callable(ref) else None
            if not hasattr(h, "on_invoke_handoff") or (target is None and not allow_unguarded):
                raise _unreachable(f"handoff {getattr(h, 'tool_name', h)!r} names no agent whose tools", a)
            _wrap_handoff(ag, h, allow_unguarded)
            todo.append(target)
    ag.guard_tools(tools)


def _server_guardrails(ag: "AgentsGuard", server: Any) -> None:
    """Gate an MCP server's tools: the SDK builds a function tool for each listed tool every turn, with the server's
    ``tool_input_guardrails``/``tool_output_guardrails``; this guard's are added there."""
    if ag.input_guardrail not in (server.tool_input_guardrails or []):
        server.tool_input_guardrails = [*(server.tool_input_guardrails or []), ag.input_guardrail]
    if ag.output_guardrail not in (getattr(server, "tool_output_guardrails", None) or []):
        server.tool_output_guardrails = [*(getattr(server, "tool_output_guardrails", None) or []), ag.output_guardrail]
    remember_listing(server)
    gate_server(ag, server)  # its call_tool too: application code calling it is decided (openai_agents_mcp)


def _hook(ag: "AgentsGuard", agent: Any, allow_unguarded: bool) -> None:
    hooks = getattr(agent, "hooks", None)
    if isinstance(hooks, GuardHooks) and hooks.guard is ag:
        hooks.allow_unguarded = hooks.allow_unguarded and allow_unguarded
        return
    agent.hooks = GuardHooks(ag, hooks, allow_unguarded)


def _handoff_adapter(invoke: Any) -> Any:
    """The pydantic ``TypeAdapter`` with which the SDK's ``handoff(..., input_type=T)`` validates the model's JSON
    before ``on_handoff`` receives it (a variable of the SDK's invocation closure, 0.24: ``partial(redaction,
    impl)``), or None (no input type, or a hand-built ``on_invoke_handoff`` whose reading is its own)."""
    return closure_adapter(invoke, "type_adapter")


def _handoff_reading(invoke: Any, raw: Any) -> tuple[Any, Verdict | None]:
    """What to judge for a handoff's input ``raw``: the value its ``on_handoff`` receives, as plain data, when the
    SDK validates it with an input type (an alias mapped to its field, a stripped string, a default filled in:
    ``{"file": "/etc/shadow"}`` passed a rule on ``path`` and the callback read ``path = "/etc/shadow"``), validated
    here the way the SDK does (``validate_json``, strict); the model's JSON when there is no input type, when the
    strict reader refuses the text (refused through the Pipeline) or when the value is not an object. A
    validation that raises refuses the handoff (the returned verdict; the SDK would end the run on it)."""
    from .common import Unreadable, plain, tool_call_of

    adapter = _handoff_adapter(invoke)
    if adapter is None or isinstance(tool_call_of("handoff", raw), Unreadable):
        return raw, None
    try:
        value = plain(adapter.validate_json(raw or "", strict=True))
    except Exception as exc:  # noqa: BLE001 - the SDK refuses these arguments itself
        return raw, Verdict(Decision.REJECT, f"the handoff's own validation refused its input ({exc})"[:500],
                            "agentguard")
    return (value, None) if isinstance(value, dict) else (raw, None)


def _wrap_handoff(ag: "AgentsGuard", h: Any, allow_unguarded: bool) -> None:
    invoke = h.on_invoke_handoff
    if getattr(invoke, "_agentguard", None) is ag:
        return

    async def on_invoke_handoff(wrapper: Any, input_json: str) -> Any:
        _HANDOFF_REFUSAL.set(None)
        name = str(getattr(h, "tool_name", "") or "handoff")
        judged, refuse = _handoff_reading(invoke, input_json)
        out, call = await ag.decide_handoff(wrapper, name, judged, refuse)
        todo = out.call
        if todo is None or todo.name != call.name or call_key(todo) != call_key(call):
            running = getattr(wrapper, RUNNING, None)  # only the agent that offers this very handoff asked for it
            if out.stop or not isinstance(running, Agent) or not any(x is h for x in running.handoffs or []):
                raise HandoffRefused(out.message or f"agentguard refused the handoff {name}")
            _HANDOFF_REFUSAL.set((id(h), _refusal(out, call)))  # read by the transfer message (same task, no await)
            return running  # steered: the agent that asked goes on, and reads why
        new_agent = await invoke(wrapper, input_json)
        reach(ag, new_agent, allow_unguarded)  # an agent built by the callback is gated before it runs
        return new_agent

    on_invoke_handoff._agentguard = ag  # type: ignore[attr-defined]
    h.on_invoke_handoff = on_invoke_handoff
    transfer, keep = h.get_transfer_message, h.input_filter

    def get_transfer_message(agent: Any) -> str:  # what the model reads as the handoff call's output
        refused = _HANDOFF_REFUSAL.get()
        return refused[1] if refused is not None and refused[0] == id(h) else str(transfer(agent))

    h.get_transfer_message = get_transfer_message  # type: ignore[method-assign]
    if keep is not None:
        def input_filter(data: Any) -> Any:  # a refused handoff keeps the history: the refusal must stay visible
            refused = _HANDOFF_REFUSAL.get()
            return data if refused is not None and refused[0] == id(h) else keep(data)

        h.input_filter = input_filter


async def decide_late(ag: "AgentsGuard", tc: Any, tool: Any, agent: Any = None) -> None:
    """Decide a function tool's call that reached the SDK's tool start without passing this guard's input guardrail
    (a tool the SDK built for this run only, e.g. a ``SandboxAgent`` capability's ``exec_command``; an MCP server's
    tool built before the walk), judged as the function will receive it (:func:`~.openai_agents_reading._prepared`,
    whose values the invocation is then pinned to). It runs only when the call is allowed unchanged (an ask is
    answered by the ``approve`` callback, else refused). A refusal that lets the run go on is put on ``tc`` and the
    tool's invocation answers it instead of running the body (:func:`_answer_refused`: the model reads why); a stop
    (HALT, an unreadable call under ``on_error = HALT``) raises :class:`UngatedToolCall` (the run ends)."""
    from .common import Unreadable, tool_call_of
    from .openai_agents_reading import _prepared

    run, facts = ag._run(tc)
    raw, cid = tc.tool_arguments or "", tc.tool_call_id or ""
    listed = mcp_listed(tool, getattr(agent, "mcp_servers", None))  # an MCP server's tool: as its server runs it
    name = listed.name if listed is not None else call_name(tc.tool_name, getattr(tc, "tool_namespace", None))
    proposal: Any = tool_call_of(name, raw, cid)
    prepared, refuse = None, None
    if isinstance(proposal, ToolCall):
        judged, prepared = _prepared(listed if listed is not None else tool, raw, proposal)
        if isinstance(judged, BaseException):
            refuse = Verdict(Decision.REJECT, f"the tool's own validation refused the arguments ({judged})"[:500],
                             "agentguard")
        else:
            proposal = judged
    call = proposal if isinstance(proposal, ToolCall) else ToolCall(name, {}, cid)
    out = await ag.pipeline.adecide(run, proposal, refuse=refuse, **facts)
    if out.ask:
        out = await ag._answer(tc, run, call, out, False) or out
    todo = out.call
    if isinstance(proposal, Unreadable) or todo is None or call_key(todo) != call_key(call) or not out.execute:
        answer = ag._refuse(out, call)  # recorded with what the model reads
        message = (answer.behavior or {}).get("message") if not out.stop else None
        if not isinstance(message, str) or not _answer_refused(tool):
            raise UngatedToolCall(f"agentguard refused tool call {call.name} at its start: {out.message or 'refused'}")
        setattr(tc, REFUSED, message)
        return
    if prepared is not None and hasattr(tc, "_function_tool_arguments"):
        tc._function_tool_arguments = prepared
    passed(tc, ag)
    let_through(ag, listed, raw)  # an MCP tool's call: its gated server sends it once, undecided again
    ag.ran(run, call, out)


def _answer_refused(tool: Any) -> bool:
    """Wrap ``tool``'s invocation (once per tool object) so that a call whose ToolContext carries a refusal
    (:data:`REFUSED`) returns it as the tool's output and never runs the body; any other call goes to the SDK's
    invoker unchanged (its context narrowed as the SDK narrows it, its argument preparation kept visible). False
    when the tool cannot be wrapped (the caller stops the run instead)."""
    inner = getattr(tool, "on_invoke_tool", None)
    if getattr(inner, "_agentguard_answers", False):
        return True
    if not callable(inner):
        return False
    from types import SimpleNamespace

    narrow: Any = None
    try:
        from agents.tool import _get_function_tool_invoke_context  # the SDK's own narrowing (private)

        narrow = _get_function_tool_invoke_context
    except ImportError:  # pragma: no cover - another SDK version: pass the ToolContext as is
        pass

    async def on_invoke_tool(ctx: Any, arguments: str) -> Any:
        refused = getattr(ctx, REFUSED, None)
        if refused is not None:
            return refused
        if narrow is not None:
            ctx = narrow(SimpleNamespace(on_invoke_tool=inner), ctx)
        return await inner(ctx, arguments)

    on_invoke_tool._agentguard_answers = True  # type: ignore[attr-defined]
    if getattr(inner, "__agents_sync_function_tool__", False):  # what the SDK reads off the invoker, kept
        on_invoke_tool.__agents_sync_function_tool__ = True  # type: ignore[attr-defined]
    if callable(getattr(inner, "prepare_arguments", None)):
        on_invoke_tool.prepare_arguments = inner.prepare_arguments  # type: ignore[attr-defined]
    try:
        tool.on_invoke_tool = on_invoke_tool
    except (AttributeError, TypeError):  # a frozen tool: it cannot answer, the run stops instead
        return False
    return True


class GuardHooks(AgentHooks[Any]):
    """An agent's hooks with the guard's run-time checks around the agent's own hooks (``inner``): the walk
    before each model call, the backstop before each local tool (see the module doc)."""

    def __init__(self, guard: "AgentsGuard", inner: Any, allow_unguarded: bool) -> None:
        self.guard, self.inner, self.allow_unguarded = guard, inner, allow_unguarded

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        reach(self.guard, agent, self.allow_unguarded)
        try:
            setattr(context, RUNNING, agent)  # the agent a refused handoff of this turn returns to
        except (AttributeError, TypeError):  # pragma: no cover - a context without attributes: refusals stop
            pass
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if runs_codex(tool):
            raise UngatedToolCall(f"tool {getattr(tool, 'name', tool)!r} runs the Codex agent: the guard cannot gate it")
        if hasattr(tool, "tool_input_guardrails"):
            if not has_passed(context, self.guard):
                await decide_late(self.guard, context, tool, agent)
        elif shell_gated(self.guard, tool):
            if not shell_started(self.guard, context, tool):
                raise UngatedToolCall(f"shell tool {getattr(tool, 'name', tool)!r} started without this guard's "
                                      "decision")
        elif not (self.allow_unguarded and unguarded_ok(tool)):
            raise UngatedToolCall(f"tool {getattr(tool, 'name', tool)!r} of agent {getattr(agent, 'name', '?')!r} "
                                  "is not a function tool: the guard cannot gate it")
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_start(self, context: Any, agent: Any) -> None:
        reach(self.guard, agent, self.allow_unguarded)  # before the SDK builds the turn's tools (an MCP server's)
        if self.inner is not None:
            await self.inner.on_start(context, agent)

    async def on_end(self, context: Any, agent: Any, output: Any) -> None:
        if self.inner is not None:
            await self.inner.on_end(context, agent, output)

    async def on_handoff(self, context: Any, agent: Any, source: Any) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(context, agent, source)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)
