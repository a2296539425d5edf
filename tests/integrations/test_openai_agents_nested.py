"""Red team: nested agents (agent-as-tool) and handoffs in the real Agents SDK.

Guardrails are attached per function tool. Guarding the outer agent's tool list (``guard_tools``) left the tools
of an agent it runs as a tool (``Agent.as_tool``) or hands off to ungated: the outer model asked its helper agent,
whose own model called ``delete_file``, refused by the stack, and it ran (checked before the fix).
:meth:`AgentsGuard.guard_agent` gates every function tool the agent can reach, and refuses to configure what it
cannot gate (a hosted tool, an agent's ``mcp_servers``).
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, WebSearchTool, function_tool  # noqa: E402
from agents.exceptions import ModelBehaviorError, ToolInputGuardrailTripwireTriggered  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard.core.errors import InputError  # noqa: E402
from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402


def tools(ran: list, who: str) -> list:
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append((who, "delete_file", path))
        return "deleted"

    def read_file(path: str) -> str:
        """Read a file."""
        ran.append((who, "read_file", path))
        return "text"

    return [function_tool(delete_file), function_tool(read_file)]


def build(depth: int, via: str, inner_tool: str, ran: list) -> Agent:
    """A chain of ``depth`` agents, each reaching the next as a tool (``via="tool"``) or by a handoff; the last
    one's model calls ``inner_tool``."""
    leaf = Agent(name="leaf", instructions="x", tools=tools(ran, "leaf"), model=ScriptedModel(
        [[function_call(inner_tool, {"path": "/srv/db"}, call_id="i1")], [assistant_message("done")]]))
    agent = leaf
    for level in range(depth):
        name = f"a{level}"
        if via == "tool":
            helper = agent.as_tool(tool_name=f"ask_{agent.name}", tool_description="Ask the helper.")
            script = [[function_call(helper.name, {"input": "please"}, call_id=f"o{level}")], [assistant_message("ok")]]
            agent = Agent(name=name, instructions="x", tools=[helper, *tools(ran, name)], model=ScriptedModel(script))
        else:
            script = [[function_call(f"transfer_to_{agent.name}", {}, call_id=f"h{level}")], [assistant_message("ok")]]
            agent = Agent(name=name, instructions="x", handoffs=[agent], tools=tools(ran, name),
                          model=ScriptedModel(script))
    return agent


def run(agent: Agent) -> None:
    try:
        asyncio.run(Runner.run(agent, "go", max_turns=8, run_config=RunConfig(tracing_disabled=True),
                               context={"run_id": "r"}))
    except (ToolInputGuardrailTripwireTriggered, ModelBehaviorError):
        pass


def guard() -> AgentsGuard:
    return AgentsGuard(ToolRuleGuard(deny=["delete_*"], name="no-deletes"))


@pytest.mark.parametrize("via", ["tool", "handoff"])
def test_the_outer_tool_list_alone_leaves_a_nested_agents_tools_ungated(via):
    """The gap (why guard_agent exists): guard_tools on the outer agent's list does not reach the leaf's tools."""
    ran: list = []
    outer = build(1, via, "delete_file", ran)
    guard().guard_tools(list(outer.tools))
    run(outer)
    assert ("leaf", "delete_file", "/srv/db") in ran


@pytest.mark.parametrize("via", ["tool", "handoff"])
def test_guard_agent_gates_the_tools_of_nested_agents_and_handoffs(via):
    ran: list = []
    outer = build(2, via, "delete_file", ran)
    guard().guard_agent(outer)
    run(outer)
    assert not any(name == "delete_file" for _, name, _ in ran), ran


def test_regression_an_allowed_nested_call_still_runs_and_each_tool_is_gated_once():
    ran: list = []
    outer = build(2, "tool", "read_file", ran)
    ag = guard()
    ag.guard_agent(outer)
    ag.guard_agent(outer)  # twice: still one guardrail per tool
    run(outer)
    assert ("leaf", "read_file", "/srv/db") in ran
    helper = outer.tools[0]
    assert helper.tool_input_guardrails.count(ag.input_guardrail) == 1


def test_a_tool_the_guard_cannot_gate_is_refused_at_configuration():
    agent = Agent(name="a", instructions="x", tools=[WebSearchTool()])
    with pytest.raises(InputError, match="not a function tool"):
        guard().guard_agent(agent)
    assert guard().guard_agent(agent, allow_unguarded=True) is agent


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 3), st.sampled_from(["tool", "handoff"]), st.sampled_from(["delete_file", "read_file"]))
def test_property_no_refused_call_runs_at_any_depth(depth, via, inner_tool):
    ran: list = []
    outer = build(depth, via, inner_tool, ran)
    guard().guard_agent(outer)
    run(outer)
    assert not any(name == "delete_file" for _, name, _ in ran), ran
