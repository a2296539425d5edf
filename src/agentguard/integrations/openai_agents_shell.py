"""A local Agents SDK ``ShellTool`` judged by :class:`~.openai_agents.AgentsGuard` through the SDK's own approval hooks
(split from :mod:`.openai_agents_reach`).

A shell tool is not a function tool: no tool guardrail ever sees its calls. The SDK asks the tool's
``needs_approval(run_context, action, call_id)`` before every call with the very ``ShellActionRequest`` its executor
then receives, and, when that answers True, its ``on_approval(run_context, item)``, whose ``{"approve": False,
"reason": text}`` the SDK turns into the call's output (the model reads it; the executor never runs). :func:`gate_shell`
sets both: each call is decided as ``ToolCall(tool.name, {"commands": [...]})`` (``commands`` is an argument every
command rule reads, :data:`agentguard.policies.rules.COMMAND_ARGS`; ``shell`` a tool name shell rules know). Allowed
unchanged, it runs; refused, the model reads the refusal and the run goes on; a stop (HALT) raises
:class:`~.openai_agents_reading.UngatedToolCall` (the run ends); an ask is answered by the ``approve`` callback, else
refused (this path has no human for the guard). The hooks' backstop lets a gated shell tool start only as often as
this guard allowed one of its calls in that run (``on_tool_start`` carries no call id).

Not gated (refused at configuration, :func:`gate_shell` returns False): a hosted shell (no executor: it runs in
OpenAI's container, no hook of the SDK sees its calls), a shell tool with its own ``needs_approval`` or
``on_approval`` (its own approvals would run calls the guard never decided), a subclass; and the SDK's Codex tool
(:func:`runs_codex`, a function tool whose body runs a coding agent's commands, session 26).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ..core.pipeline import call_key
from ..core.types import ToolCall

if TYPE_CHECKING:
    from .openai_agents import AgentsGuard

__all__ = ["gate_shell", "runs_codex", "shell_gated", "shell_started"]

#: the attribute a RunContextWrapper carries: {(id(guard), tool name): calls this guard allowed that have not started}
ALLOWED = "_agentguard_shell_allowed"


def runs_codex(tool: Any) -> bool:
    """Whether ``tool`` is the SDK's Codex tool (``agents.extensions.experimental.codex.codex_tool``): a function tool
    whose body runs the Codex agent, which executes commands and edits files in its workspace; the guard sees only the
    task text the model gives it, never those commands (no hook of the SDK reports them). Known by the SDK's marker,
    or by the module of its invocation (a copy of the tool loses the marker). Session 26: ``guard_agent`` gated it as
    a plain function tool, so an allowed task ran commands nobody judged."""
    if getattr(tool, "_is_codex_tool", False) is True:
        return True
    impl = getattr(getattr(tool, "on_invoke_tool", None), "_invoke_tool_impl", None)
    return str(getattr(impl, "__module__", None) or "").startswith("agents.extensions.experimental.codex")


def shell_gated(ag: Any, tool: Any) -> bool:
    """Whether ``tool`` is a shell tool that ``ag`` judges (:func:`gate_shell` ran for it)."""
    return ag in (getattr(getattr(tool, "needs_approval", None), "_agentguard_guards", None) or ())


def shell_started(ag: Any, context: Any, tool: Any) -> bool:
    """The backstop at a shell tool's start: True (and counted) when ``ag`` allowed a call of it in this run that has
    not started yet; False otherwise (the caller stops the run)."""
    allowed = getattr(context, ALLOWED, None) or {}
    key = (id(ag), str(getattr(tool, "name", "")))
    if allowed.get(key, 0) <= 0:
        return False
    allowed[key] -= 1
    return True


def gate_shell(ag: "AgentsGuard", tool: Any) -> bool:
    """Judge a local ``ShellTool``'s calls through its ``needs_approval``/``on_approval`` (see the module doc); True
    when gated (now or already), False when it cannot be (the caller refuses it)."""
    from agents import ShellTool

    from .openai_agents_reading import UngatedToolCall, _item_call

    if type(tool) is not ShellTool or getattr(tool, "executor", None) is None:
        return False
    if shell_gated(ag, tool):
        return True
    if tool.needs_approval is not False or tool.on_approval is not None:
        return False
    refusals: OrderedDict[tuple[int, str], str] = OrderedDict()

    async def needs_approval(ctx: Any, action: Any, call_id: str) -> bool:
        run, facts = ag._run(ctx)
        call = ToolCall(str(tool.name), {"commands": [str(c) for c in (getattr(action, "commands", None) or [])]},
                        str(call_id or ""))
        out = await ag.pipeline.adecide(run, call, **facts)
        if out.ask:
            out = await ag._answer(ctx, run, call, out, False) or out
        todo = out.call
        if todo is not None and out.execute and call_key(todo) == call_key(call):
            allowed = getattr(ctx, ALLOWED, None)
            if allowed is None:
                allowed = {}
                setattr(ctx, ALLOWED, allowed)
            key = (id(ag), str(tool.name))
            allowed[key] = allowed.get(key, 0) + 1
            return False
        answer = ag._refuse(out, call)  # recorded with what the model reads
        message = (answer.behavior or {}).get("message") if not out.stop else None
        if not isinstance(message, str):
            raise UngatedToolCall(f"agentguard stopped the run at shell call {call.call_id}: {out.message or 'halt'}")
        refusals[(id(ctx), call.call_id)] = message
        while len(refusals) > 10_000:
            refusals.popitem(last=False)
        return True

    async def on_approval(ctx: Any, item: Any) -> Any:  # the SDK's ShellOnApprovalFunctionResult
        message = refusals.pop((id(ctx), _item_call(item).call_id), None)
        return {"approve": False, "reason": message or "agentguard: this shell call was not decided"}

    needs_approval._agentguard_guards = (ag,)  # type: ignore[attr-defined]
    tool.needs_approval = needs_approval
    tool.on_approval = on_approval
    return True
