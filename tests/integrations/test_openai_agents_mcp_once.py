"""Red team (session 23): an MCP tool the caller converted itself (``MCPUtil.to_function_tool``, put in
``agent.tools``) was decided twice per call: once by the deciding ``needs_approval`` with the model's spelling
(``{"path": "/srv"}``), once by the input guardrail as its server reads the call (``{"path": "/srv", "keep": 1}``,
the listed default filled in), whose decision did not match the held one. It failed closed, but each call was two
decisions, two audit records and two steps of the run's state. Now such a tool's ``needs_approval`` decides nothing
(only the tool's own setting) and its input guardrail decides the call once, as for the MCP tools the SDK builds
from the agent's servers. Real ``Runner.run`` with a scripted model, a real ``mcp`` ``MCPServer`` behind the SDK's
server interface."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents")
pytest.importorskip("mcp")

from agents import Agent, RunConfig, Runner  # noqa: E402
from agents.mcp import MCPUtil  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from agentguard.core.audit import MemoryAuditSink  # noqa: E402
from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from test_openai_agents_mcp_names import Judged  # noqa: E402
from test_openai_agents_mcp_reading import GUARD, Bridge  # noqa: E402


def _run(guard, calls: list[tuple[str, dict]], with_server: bool = False, approve=None):
    ran: list = []
    server = Bridge(ran)
    audit = MemoryAuditSink()

    async def main():
        tools = [MCPUtil.to_function_tool(t, server, convert_schemas_to_strict=False)
                 for t in await server.list_tools()]
        turns = [[function_call(n, a, call_id=f"c{i}")] for i, (n, a) in enumerate(calls)]
        agent = Agent(name="a", tools=tools, mcp_servers=[server] if with_server else [],
                      model=ScriptedModel([*turns, [assistant_message("done")], [assistant_message("done")]]))
        AgentsGuard(guard, audit=audit, approve=approve).guard_agent(agent)
        try:
            await Runner.run(agent, "go", max_turns=len(calls) + 3, run_config=RunConfig(tracing_disabled=True))
        except Exception:  # noqa: BLE001 - what ran and what was decided is what the tests read
            pass

    asyncio.run(main())
    return ran, audit.records


@pytest.mark.parametrize("with_server", [False, True])
def test_one_decision_per_call_judged_as_the_server_reads_it(with_server):
    judged = Judged()
    ran, records = _run(judged, [("purge", {"path": "/srv"})], with_server)
    assert ran == [("purge", "/srv", 1)]
    assert judged.calls == [("purge", {"path": "/srv", "keep": 1})]  # once, with the server's default
    assert len(records) == 1


def test_a_refused_self_converted_call_never_runs_and_is_decided_once():
    ran, records = _run(GUARD, [("purge", {}), ("purge", {"path": "/srv", "keep": "00"}),
                                ("delete_paths", {"paths": '["/etc/shadow"]'})])
    assert ran == []
    assert len(records) == 3 and all(r.decision != "ALLOW" for r in records)


@settings(max_examples=10, deadline=None)
@given(path=st.sampled_from(["/", "/srv", "/etc", " /"]), keep=st.sampled_from([None, 0, 1, "00", "1"]))
def test_property_a_self_converted_call_runs_only_when_its_one_decision_allows_what_runs(path, keep):
    args = {"path": path} if keep is None else {"path": path, "keep": keep}
    judged = Judged()
    ran, records = _run(judged, [("purge", args)])
    assert len(records) <= 1 and len(judged.calls) <= 1
    for call in ran:  # what ran is what was judged
        assert judged.calls == [("purge", {"path": call[1], "keep": call[2]})]
    rules_ran, _ = _run(GUARD, [("purge", args)])
    assert all(p != "/" and k != 0 for _, p, k in rules_ran)


def test_an_escalation_of_a_self_converted_tool_is_answered_by_the_callback_once():
    asked: list = []
    guard = ToolRuleGuard(allow=["*"], escalate=["purge"])
    ran, records = _run(guard, [("purge", {"path": "/srv"})], approve=lambda v, c: asked.append(c.arguments) or True)
    assert asked == [{"path": "/srv", "keep": 1}] and ran == [("purge", "/srv", 1)]


@pytest.mark.parametrize("cfg", [{}, {"include_server_in_tool_names": True}])
def test_a_server_shared_with_an_agent_the_guard_was_not_given_is_judged_there_too(cfg):
    """Session 23 probe: an MCP server object shared by a guarded agent and another agent (never passed to
    guard_agent). The guard's guardrails sit on the server, which lends them to every tool the SDK builds from it,
    so the other agent's calls are decided too: ``purge {"path": "/"}`` (refused by the rules) never runs there. A
    call the SDK renames for that agent (``mcp_fs__purge``) was judged under the public name (no allow list grants it:
    a benign call was refused); it is now judged as the server's own tool, found the SDK's way."""
    ran: list = []
    server = Bridge(ran)
    name = "mcp_fs__purge" if cfg else "purge"  # the SDK's public name (test_openai_agents_mcp_names)

    def model():
        return ScriptedModel([[function_call(name, {"path": "/"}, call_id="c1")], [assistant_message("done")],
                              [assistant_message("done")]])

    # the server's tool under its own name (``purge``, ``fs__purge`` once the SDK prefixes it): no ``/``
    guard = ToolRuleGuard(allow=["purge", "fs__purge"], arguments=[{"tool": "purge", "arg": "path", "forbid": "^/$"}])
    AgentsGuard(guard).guard_agent(Agent(name="guarded", mcp_servers=[server], model=model()))
    other = Agent(name="other", mcp_servers=[server], model=model(), mcp_config=cfg)
    try:
        asyncio.run(Runner.run(other, "go", max_turns=4, run_config=RunConfig(tracing_disabled=True)))
    except Exception:  # noqa: BLE001 - what ran is what the test reads
        pass
    assert ran == []
    other_ok = Agent(name="other", mcp_servers=[server], mcp_config=cfg, model=ScriptedModel(
        [[function_call(name, {"path": "/srv"}, call_id="c1")],
         [assistant_message("done")], [assistant_message("done")]]))
    asyncio.run(Runner.run(other_ok, "go", max_turns=4, run_config=RunConfig(tracing_disabled=True)))
    assert ran == [("purge", "/srv", 1)]  # renamed for the other agent: judged as the server's own tool
