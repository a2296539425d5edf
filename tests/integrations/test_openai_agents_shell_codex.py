"""Red team (session 26): the Agents SDK's Codex tool runs commands the guard never sees, so ``guard_agent`` refuses it.

``agents.extensions.experimental.codex.codex_tool()`` is a *function tool*: ``guard_agent`` gated it like any other
and judged only the task text the model gave it (``{"inputs": [...]}``), while its body runs the Codex agent, which
executes commands and edits files in its workspace (no hook of the SDK reports those). Like a hosted shell, it is
now refused at configuration (``allow_unguarded`` does not cover it), in a nested agent, when added later, and as a
copy that lost the SDK's marker."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

pytest.importorskip("agents.extensions.experimental.codex")

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.extensions.experimental.codex import codex_tool  # noqa: E402
from agents.testing import ScriptedModel, assistant_message  # noqa: E402

from agentguard.core.errors import InputError  # noqa: E402
from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402
from agentguard.integrations.openai_agents_shell import runs_codex  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402


def _guard() -> AgentsGuard:
    return AgentsGuard(ToolRuleGuard(allow=["codex", "read_file", "helper"]))


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return "x"


@pytest.mark.parametrize("allow_unguarded", [False, True])
def test_attack_guard_agent_refuses_the_codex_tool(allow_unguarded):
    with pytest.raises(InputError, match="Codex"):
        _guard().guard_agent(Agent(name="a", tools=[read_file, codex_tool()]), allow_unguarded=allow_unguarded)


def test_a_nested_agent_or_a_copy_without_the_marker_is_refused_too():
    copy = dataclasses.replace(codex_tool())  # a copy of the tool whose marker is gone; its invocation is not
    copy._is_codex_tool = False
    assert runs_codex(copy)
    nested = Agent(name="coder", tools=[copy])
    with pytest.raises(InputError, match="Codex"):
        _guard().guard_agent(Agent(name="a", tools=[nested.as_tool("helper", "a helper")]))
    assert not runs_codex(read_file)


def test_a_codex_tool_added_later_stops_the_run_before_the_model_is_called():
    model = ScriptedModel([[assistant_message("done")]])
    a = Agent(name="a", tools=[read_file], model=model)
    _guard().guard_agent(a)
    a.tools.append(codex_tool())
    with pytest.raises(InputError, match="Codex"):
        asyncio.run(Runner.run(a, "go", run_config=RunConfig(tracing_disabled=True)))
    assert model.calls == ()


def test_the_start_backstop_stops_a_codex_tool_no_walk_reached():
    from agentguard.integrations.openai_agents_reach import GuardHooks
    from agentguard.integrations.openai_agents_reading import UngatedToolCall

    hooks = GuardHooks(_guard(), None, False)
    with pytest.raises(UngatedToolCall, match="Codex"):
        asyncio.run(hooks.on_tool_start(object(), Agent(name="a"), codex_tool()))
