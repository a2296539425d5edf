"""The OpenAI Agents SDK driver: the real ``agents`` package, its own scripted ``Model``
(``agents.testing.ScriptedModel``), real function tools that record what ran, ESCALATEs answered through
the SDK's own interruption flow (``result.interruptions`` -> ``RunState.approve`` / ``reject`` ->
``Runner.run(agent, state)``), and :class:`~agentguard.integrations.openai_agents.AgentsGuard` in front.

What the SDK itself does with call ids (0.24), before any guardrail or tool runs: a turn with an empty
(or missing) call id, or one id used for two different calls, ends the run with ``ModelBehaviorError``;
a call repeated under the same id (in one turn, or an id already completed earlier in the run) is
skipped. The driver passes the ids as given and reports such a run as ``stopped`` with ``sdk_error`` set
(see :func:`sdk_delivered` for the SDK's rule, which the tests use as their oracle).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool
from agents.exceptions import ModelBehaviorError, ToolInputGuardrailTripwireTriggered
from agents.testing import ScriptedModel, assistant_message, function_call

from agentguard.core import Guard, ToolCall
from agentguard.integrations.openai_agents import AgentsGuard

from . import TOOLS, RunResult

__all__ = ["AgentsRunResult", "OpenAIAgentsDriver", "sdk_delivered"]


@dataclass
class AgentsRunResult(RunResult):
    """:class:`RunResult` plus ``sdk_error``: the SDK's own refusal of a turn (``ModelBehaviorError``), if any."""

    sdk_error: str | None = None


def _identity(call: ToolCall) -> str:
    return call.name + "\x00" + json.dumps(dict(call.arguments), sort_keys=True)


def sdk_delivered(turns: list[list[ToolCall]]) -> tuple[list[list[ToolCall]], bool]:
    """The calls the SDK hands to its tools, turn by turn, and whether it refused a turn (then that turn
    and every later one deliver nothing): the SDK's call-id rule, written out independently."""
    done: dict[str, str] = {}
    out: list[list[ToolCall]] = []
    for turn in turns:
        if not turn:
            continue
        seen: dict[str, str] = {}
        kept: list[ToolCall] = []
        for c in turn:
            cid, ident = c.call_id or "", _identity(c)
            if not cid:
                return out, True
            prev = seen.get(cid, done.get(cid))
            if prev is not None and prev != ident:
                return out, True
            if prev is None:
                kept.append(c)
            seen[cid] = ident
        done.update(seen)
        out.append(kept)
    return out, False


def _tools(executed: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    def make(name: str) -> Any:
        def body(target: str, amount: int) -> str:
            executed.append((name, {"target": target, "amount": amount}))
            return "ok"

        body.__doc__ = f"The {name} tool."
        return function_tool(body, name_override=name)

    return [make(n) for n in TOOLS]


class OpenAIAgentsDriver:
    """Drives one run of a real Agents SDK agent whose scripted model proposes ``turns``."""

    name = "openai_agents"

    def run(self, guard: Guard, turns: list[list[ToolCall]], *, approve: bool = False,
            strategy: str | None = None) -> AgentsRunResult:
        return asyncio.run(self.arun(guard, turns, approve=approve, strategy=strategy))

    async def arun(self, guard: Guard, turns: list[list[ToolCall]], *, approve: bool = False,
                   strategy: str | None = None) -> AgentsRunResult:
        res = AgentsRunResult()
        ag = AgentsGuard(guard, strategy=strategy)
        script: list[Any] = [[function_call(c.name, dict(c.arguments), call_id=c.call_id or "") for c in turn]
                             for turn in turns if turn]
        script.append([assistant_message("done")])
        agent = Agent(name="driver", instructions="use the tools", model=ScriptedModel(script),
                      tools=ag.guard_tools(_tools(res.executed)))
        limit = len(script) + 2
        # no tracing (nothing leaves the machine); the run context names the guard's run
        config = RunConfig(tracing_disabled=True)
        facts = {"run_id": f"driver-{uuid.uuid4().hex}"}
        try:
            result = await Runner.run(agent, "go", max_turns=limit, run_config=config, context=facts)
            while result.interruptions:
                state = result.to_state()
                for item in result.interruptions:
                    res.asked.append(ag.approval_request(item))
                    if approve:
                        state.approve(item)
                    else:
                        state.reject(item)
                result = await Runner.run(agent, state, max_turns=limit, run_config=config)
        except ToolInputGuardrailTripwireTriggered:
            res.stopped = True
        except ModelBehaviorError as exc:
            res.stopped, res.sdk_error = True, str(exc)
        return res


def _drivers() -> list[OpenAIAgentsDriver]:
    d = OpenAIAgentsDriver()
    d.delivered = sdk_delivered  # type: ignore[attr-defined]  # the SDK's own call-id rule (see above)
    return [d]


#: the driver the one-path tests use (tests/integrations/test_one_path.py)
DRIVERS = _drivers()
