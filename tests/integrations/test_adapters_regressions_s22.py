"""Session 22 red team of the adapters: places a framework might run something the guard did not decide, tried on the
real packages and found already refused (kept as a regression list). A side-effect tool records every execution."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents")
pytest.importorskip("langchain.agents.middleware")

from agents import Agent, RunConfig, Runner  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import ToolRetryMiddleware  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from agentguard.core.types import Verdict  # noqa: E402
from agentguard.integrations.langchain import AgentGuardMiddleware, scripted_chat_model  # noqa: E402
from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from test_openai_agents_mcp_names import PREFIX, Named  # noqa: E402


class Counting:
    """Allows everything (or refuses everything), counting the decisions."""

    name = "counting"

    def __init__(self, allow: bool = True) -> None:
        self.allow, self.n = allow, 0

    def check(self, ctx, call):
        self.n += 1
        return Verdict.allow() if self.allow else Verdict.reject("no")

    async def acheck(self, ctx, call):
        return self.check(ctx, call)


class Boom:
    name = "boom"

    def check(self, ctx, call):
        raise RuntimeError("guard down")

    async def acheck(self, ctx, call):
        raise RuntimeError("guard down")


class Late:
    """A guard whose verdict never comes (no sleep: it waits on an event nobody sets)."""

    name = "late"

    def check(self, ctx, call):
        raise AssertionError("the async path is used")

    async def acheck(self, ctx, call):
        await asyncio.Event().wait()
        return Verdict.allow()


def retried(guard, guard_outer: bool) -> list:
    ran: list = []

    @tool
    def pay(amount: int) -> str:
        """Pay."""
        ran.append(amount)
        if len(ran) < 3:
            raise ConnectionError("timed out after charging")
        return "ok"

    g, r = AgentGuardMiddleware(guard), ToolRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)
    model = scripted_chat_model([AIMessage("", tool_calls=[{"name": "pay", "args": {"amount": 100}, "id": "c1"}]),
                                 AIMessage("done")])
    agent = create_agent(model, [pay], middleware=[g, r] if guard_outer else [r, g])
    try:
        agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    except Exception:  # noqa: BLE001 - what ran is what the test reads
        pass
    return ran


@pytest.mark.parametrize("guard_outer", [True, False])
def test_langchain_a_retried_tool_call_never_runs_more_often_than_it_was_decided(guard_outer):
    counting = Counting()
    ran = retried(counting, guard_outer)
    assert 1 <= len(ran) <= counting.n  # each execution decided (retry outside the gate: each attempt is judged)
    assert retried(Counting(allow=False), guard_outer) == []


def agents_mcp(guard, calls, **kw) -> tuple[list, str | None]:
    ran: list = []
    agent = Agent(name="a", mcp_servers=[Named(ran, "fs")], mcp_config=PREFIX, model=ScriptedModel(
        [calls, [assistant_message("done")], [assistant_message("done")]]))
    AgentsGuard(guard, **kw).guard_agent(agent)
    try:
        asyncio.run(Runner.run(agent, "go", max_turns=4, run_config=RunConfig(tracing_disabled=True)))
    except Exception as exc:  # noqa: BLE001 - the SDK's own error shape is what the test reads
        return ran, type(exc).__name__
    return ran, None


PURGE = [function_call("mcp_fs__purge", {"path": "/srv"}, call_id="c1")]


def test_agents_a_renamed_mcp_tool_fails_closed_in_the_sdks_own_shape():
    assert agents_mcp(Boom(), PURGE) == ([], "ToolInputGuardrailTripwireTriggered")  # a guard that raises
    assert agents_mcp(Late(), PURGE, timeout_s=0.05) == ([], "ToolInputGuardrailTripwireTriggered")  # too late
    assert agents_mcp(ToolRuleGuard(deny=["purge"], name="d"), PURGE, on_error="reject") == ([], None)


def test_agents_parallel_mcp_calls_run_exactly_those_allowed():
    calls = [function_call("mcp_fs__purge", {"path": "/srv"}, call_id="c1"),
             function_call("mcp_fs__delete_paths", {"paths": ["/tmp/x"]}, call_id="c2")]
    assert agents_mcp(ToolRuleGuard(deny=["purge"], name="d"), calls) == ([("delete_paths", ["/tmp/x"])], None)


def test_agents_an_always_approve_answer_does_not_approve_a_later_escalated_call():
    """``state.approve(item, always_approve=True)`` makes the SDK approve every later call of that tool without
    asking: a later call the guard escalates (the human never saw it nor its verdicts) does not run."""
    from test_openai_agents_approval import Escalating, build

    effects, guard = [], Escalating()
    agent = build(guard, effects, [
        [function_call("delete_file", {"path": "/tmp/a"}, call_id="c1")],
        [function_call("delete_file", {"path": "/tmp/important/db"}, call_id="c2")],
        [assistant_message("done")], [assistant_message("done")]])

    async def go():
        first = await Runner.run(agent, "clean")
        [item] = first.interruptions
        state = first.to_state()
        state.approve(item, always_approve=True)
        return await Runner.run(agent, state)

    asyncio.run(go())
    assert effects == ["/tmp/a"] and guard.checks == ["delete_file", "delete_file"]
