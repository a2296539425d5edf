"""Red team (session 24): application code calling ``server.call_tool(...)`` on an MCP server of a gated agent.

Before, only the agent's tool path was decided (the SDK's function tool of the server's tool, its input guardrail):
a function tool that forwards to ``server.call_tool("purge", ...)``, or a script holding the server, ran any tool of
it, refused or not. Now :meth:`AgentsGuard.guard_agent` gates the server object too
(:func:`agentguard.integrations.openai_agents_mcp.gate_server`): a ``call_tool`` the SDK's tool path did not let
through is decided as the server reads it, and refused it never reaches the server (the caller receives MCP's tool
error, ``isError``); the SDK's own call is sent once as its guardrail passed it, not decided twice. Real ``Runner.run``
with a scripted model, the real ``mcp`` ``MCPServer`` behind the SDK's server interface."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents")
pytest.importorskip("mcp")

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from agentguard.core.audit import MemoryAuditSink  # noqa: E402
from agentguard.core.types import Decision, Verdict  # noqa: E402
from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402
from agentguard.integrations.openai_agents_reading import UngatedToolCall  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from test_openai_agents_mcp_names import Judged  # noqa: E402
from test_openai_agents_mcp_reading import GUARD, Bridge  # noqa: E402


def _gated(guard, ran: list, tools=(), turns=()):
    server = Bridge(ran)
    audit = MemoryAuditSink()
    agent = Agent(name="a", tools=list(tools), mcp_servers=[server],
                  model=ScriptedModel([*turns, [assistant_message("done")], [assistant_message("done")]]))
    AgentsGuard(guard, audit=audit).guard_agent(agent)
    return server, agent, audit


def _direct(guard, name: str, args):
    ran: list = []
    server, _, audit = _gated(guard, ran)
    result = asyncio.run(server.call_tool(name, args))
    return ran, result, audit.records


@pytest.mark.parametrize("args", [{"path": "/"}, {}, {"path": "/srv", "keep": "00"}, {"path": "/srv", "keep": 0}])
def test_attack_a_refused_direct_call_tool_never_reaches_the_server(args):
    ran, result, records = _direct(GUARD, "purge", args)
    assert ran == []
    assert result.is_error and "agentguard refused" in result.content[0].text
    assert len(records) == 1 and records[0].decision != "ALLOW"


def test_attack_a_direct_call_of_a_tool_the_guard_never_saw_listed_is_read_by_the_listing():
    ran, result, _ = _direct(GUARD, "delete_paths", {"paths": '["/etc/shadow"]'})  # the server parses the JSON text
    assert ran == [] and result.is_error


def test_an_allowed_direct_call_runs_once_as_sent():
    ran, result, records = _direct(GUARD, "purge", {"path": "/srv", "keep": 2})
    assert ran == [("purge", "/srv", 2)] and not result.is_error
    assert [r.decision for r in records] == ["ALLOW"]


def test_a_stop_raises_and_nothing_runs():
    class Halt:
        name = "halt"

        async def acheck(self, ctx, call):
            return Verdict(Decision.HALT, "no", "halt")

        def check(self, ctx, call):
            return Verdict(Decision.HALT, "no", "halt")

    with pytest.raises(UngatedToolCall):
        _direct(Halt(), "purge", {"path": "/srv"})


def test_attack_a_function_tool_forwarding_to_the_server_cannot_run_a_refused_tool():
    """``forward`` is allowed by name; what it sends the server is decided on its own."""
    ran: list = []
    holder: dict = {}

    @function_tool
    async def forward(tool: str, path: str) -> str:
        """Forward a call to the file server."""
        res = await holder["server"].call_tool(tool, {"path": path})
        return res.content[0].text

    guard = ToolRuleGuard(allow=["forward", "purge"], arguments=[{"tool": "purge", "arg": "path", "forbid": "^/$"}])
    server, agent, _ = _gated(guard, ran, [forward],
                              [[function_call("forward", {"tool": "purge", "path": "/"}, call_id="c1")]])
    holder["server"] = server
    result = asyncio.run(Runner.run(agent, "go", max_turns=4, run_config=RunConfig(tracing_disabled=True)))
    assert ran == []
    assert result.final_output == "done"


def test_the_agents_own_call_is_decided_once_and_runs_once():
    ran: list = []
    judged = Judged()
    _, agent, audit = _gated(judged, ran, (), [[function_call("purge", {"path": "/srv"}, call_id="c1")]])
    asyncio.run(Runner.run(agent, "go", max_turns=4, run_config=RunConfig(tracing_disabled=True)))
    assert ran == [("purge", "/srv", 1)]
    assert judged.calls == [("purge", {"path": "/srv", "keep": 1})]
    assert len(audit.records) == 1


@settings(max_examples=25, deadline=None)
@given(path=st.sampled_from(["/", "/srv", " /", None]), keep=st.sampled_from([None, 0, 1, "00", "1", 2.0, True]),
       via_agent=st.booleans())
def test_property_a_purge_runs_only_as_the_guard_allowed_it(path, keep, via_agent):
    """Whichever path sends it (the agent's tool, the server object), purge runs only with what GUARD allows."""
    args = {k: v for k, v in (("path", path), ("keep", keep)) if v is not None}
    ran: list = []
    if via_agent:
        _, agent, _ = _gated(GUARD, ran, (), [[function_call("purge", args, call_id="c1")]])
        try:
            asyncio.run(Runner.run(agent, "go", max_turns=4, run_config=RunConfig(tracing_disabled=True)))
        except Exception:  # noqa: BLE001 - what ran is what the test reads
            pass
    else:
        _direct_ran, _, _ = _direct(GUARD, "purge", args)
        ran = _direct_ran
    assert len(ran) <= 1
    assert all(p != "/" and k != 0 for _, p, k in ran)


def test_parallel_calls_of_one_turn_are_each_decided_once():
    ran: list = []
    judged = Judged()
    turn = [function_call("purge", {"path": "/a"}, call_id="c1"), function_call("purge", {"path": "/b"}, call_id="c2"),
            function_call("delete_paths", {"paths": "/c"}, call_id="c3")]
    _, agent, audit = _gated(judged, ran, (), [turn])
    asyncio.run(Runner.run(agent, "go", max_turns=4, run_config=RunConfig(tracing_disabled=True)))
    assert sorted(ran) == [("delete_paths", "/c"), ("purge", "/a", 1), ("purge", "/b", 1)]
    assert len(judged.calls) == 3 and len(audit.records) == 3
