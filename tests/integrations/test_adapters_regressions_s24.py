"""Red team (session 24): call shapes through the real frameworks; a refused tool's body never runs (a counter).

Each probe passed before the session's changes too (refused before, refused after); kept as regression tests:
LangChain's ``stream``/``ainvoke``/``astream``/``batch``/``abatch`` paths under both gates with a ``return_direct``
tool, the Agents SDK's function tools called with malformed JSON arguments under every ``tool_use_behavior``, and the
MCP proxy's ``tools/call`` with arguments the upstream's pydantic coerces (an ``int`` given as ``0.0``/``False``/``"0"``,
a ``str | list[str]`` given JSON text). One known limit is kept as a strict xfail: a validator the upstream's listing
does not show (``to_lower``) rewrites the judged value, and the proxy reads only the listing."""

from __future__ import annotations

import asyncio
from typing import Annotated

import pytest
from pydantic import StringConstraints

pytest.importorskip("langchain.agents.middleware")
pytest.importorskip("agents")

from hypothesis import given, settings, strategies as st  # noqa: E402

from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

RULES = {"allow": ["read_file", "wipe"], "arguments": [{"tool": "*", "arg": "path", "forbid": "^/etc"}]}


# -- LangChain: every run path ------------------------------------------------------------------------------
def _lc_agent(calls: list[dict], gate_cls, ran: list):
    from langchain.agents import create_agent
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(("read_file", path))
        return "x"

    @tool(return_direct=True)
    def wipe(path: str) -> str:
        """Wipe a file (its output ends the run)."""
        ran.append(("wipe", path))
        return "wiped"

    class Turns(BaseChatModel):  # the calls for a user turn, "done" after tools (any number of runs at once)
        @property
        def _llm_type(self) -> str:
            return "turns"

        def bind_tools(self, tools, **kw):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kw):
            tcs = [{**c, "id": f"c{i}", "type": "tool_call"} for i, c in enumerate(calls)]
            m = AIMessage("", tool_calls=tcs) if messages[-1].type == "human" else AIMessage("done")
            return ChatResult(generations=[ChatGeneration(message=m)])

    return create_agent(Turns(), [read_file, wipe], middleware=[gate_cls(ToolRuleGuard(**RULES))],
                        checkpointer=InMemorySaver())


def _lc_run(path: str, calls: list[dict], gate_cls) -> list:
    ran: list = []
    agent = _lc_agent(calls, gate_cls, ran)
    p = {"messages": [{"role": "user", "content": "go"}]}
    cfg = [{"configurable": {"thread_id": t}} for t in ("a", "b")]

    async def astream():
        async for _ in agent.astream(p, cfg[0], stream_mode="updates"):
            pass

    {"stream": lambda: list(agent.stream(p, cfg[0], stream_mode="updates")),
     "ainvoke": lambda: asyncio.run(agent.ainvoke(p, cfg[0])),
     "astream": lambda: asyncio.run(astream()),
     "batch": lambda: agent.batch([p, p], cfg),
     "abatch": lambda: asyncio.run(agent.abatch([p, p], cfg))}[path]()
    return ran


@settings(max_examples=20, deadline=None)
@given(path=st.sampled_from(["stream", "ainvoke", "astream", "batch", "abatch"]),
       gate=st.sampled_from(["middleware", "gate"]),
       calls=st.lists(st.tuples(st.sampled_from(["read_file", "wipe", "delete"]),
                                st.sampled_from(["/etc/passwd", "/tmp/a", "/ETC"])), min_size=1, max_size=3))
def test_property_langchain_every_run_path_runs_only_allowed_calls(path, gate, calls):
    from agentguard.integrations.langchain import AgentGuardMiddleware, AgentGuardToolGate

    gate_cls = AgentGuardMiddleware if gate == "middleware" else AgentGuardToolGate
    ran = _lc_run(path, [{"name": n, "args": {"path": a}} for n, a in calls], gate_cls)
    assert all(not a.startswith("/etc") for _, a in ran)
    assert all(n in ("read_file", "wipe") for n, _ in ran)


# -- Agents SDK: malformed arguments, every tool_use_behavior ------------------------------------------------
SHAPES = ['{"path": "/tmp/a", "path": "/etc/shadow"}', '{"path": "/etc/x", "n": NaN}', '{"path": "/tmp/a"} {"x": 1}',
          '["/etc"]', '', '\ufeff{"path": "/etc/x"}', '{"p\\u0061th": "/etc/x"}', '{"path": "/etc/x"', 'null',
          '{"path": "\\ud800"}', '{"path": 1e400}']


def _sdk_run(text: str, behavior, ran: list) -> None:
    from agents import Agent, RunConfig, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from agentguard.integrations.openai_agents import AgentsGuard

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(("read_file", path))
        return "x"

    call = function_call("read_file", {}, call_id="c1")
    call.arguments = text
    agent = Agent(name="a", tools=[read_file], tool_use_behavior=behavior,
                  model=ScriptedModel([[call], [assistant_message("done")], [assistant_message("done")]]))
    AgentsGuard(ToolRuleGuard(**RULES | {"allow": ["read_file"]})).guard_agent(agent)
    try:
        asyncio.run(Runner.run(agent, "go", max_turns=4, run_config=RunConfig(tracing_disabled=True)))
    except Exception:  # noqa: BLE001 - a refusal that stops the run: what ran is what the test reads
        pass


@settings(max_examples=25, deadline=None)
@given(text=st.sampled_from(SHAPES),
       behavior=st.sampled_from(["run_llm_again", "stop_on_first_tool", {"stop_at_tool_names": ["read_file"]}]))
def test_property_agents_sdk_malformed_arguments_never_run_what_the_guard_did_not_read(text, behavior):
    ran: list = []
    _sdk_run(text, behavior, ran)
    assert all(not p.startswith("/etc") for _, p in ran)
    if text.startswith('{"path": "/tmp/a", "path"'):  # a key given twice is refused, whichever one a reader keeps
        assert ran == []


# -- MCP proxy: arguments the upstream's pydantic reads otherwise ----------------------------------------------
def _mcp_server(got: list):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("t")

    @server.tool()
    def purge(n: int, path: str = "/tmp", paths: str | list[str] = "/tmp") -> str:
        """Purge."""
        got.append(("purge", n, path, paths))
        return "ok"

    @server.tool()
    def lower(path: Annotated[str, StringConstraints(to_lower=True)]) -> str:
        """A validator the listed inputSchema does not show (it lists a plain string)."""
        got.append(("lower", path))
        return "ok"

    return server


MCP_RULES = ToolRuleGuard(allow=["*"], arguments=[{"tool": "*", "arg": "path", "forbid": "^/etc"},
                                                  {"tool": "*", "arg": "paths", "forbid": "/etc"},
                                                  {"tool": "purge", "arg": "n", "forbid": "^0$"}])


def _via_proxy(name: str, args: dict) -> tuple[list, bool]:
    from mcp import Client

    from agentguard.integrations.mcp.proxy import GuardProxy, Upstream

    got: list = []

    async def main():
        async with GuardProxy(MCP_RULES, [Upstream("t", server=_mcp_server(got))]) as proxy:
            async with Client(proxy.server) as client:
                return (await client.call_tool(name, args)).is_error

    return got, asyncio.run(main())


@settings(max_examples=30, deadline=None)
@given(n=st.sampled_from([0, 1, 0.0, False, "0", " 0", "0x0", 1.0, True]),
       path=st.sampled_from([None, "/etc/x", " /etc/x", "/tmp/a"]),
       paths=st.sampled_from([None, '["/etc/shadow"]', ["/etc/shadow"], '"/etc"', "/tmp", "null"]))
def test_property_mcp_proxy_forwards_only_calls_whose_server_reading_was_judged(n, path, paths):
    args = {k: v for k, v in (("n", n), ("path", path), ("paths", paths)) if v is not None}
    got, _ = _via_proxy("purge", args)
    for _, rn, rpath, rpaths in got:  # what the tool ran with is never a forbidden reading
        assert rn != 0 and not rpath.startswith("/etc") and "/etc" not in str(rpaths)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="known limit (session 24): an upstream validator the listed inputSchema does "
                   "not show (to_lower, normpath, an AfterValidator) rewrites the value after the proxy judged it; "
                   "the proxy reads only the listing")
def test_known_limit_a_validator_the_listing_does_not_show_rewrites_the_judged_value():
    got, _ = _via_proxy("lower", {"path": "/ETC/shadow"})
    assert got == []


def test_regression_allowed_calls_still_run_on_each_path():
    """The properties above are not vacuous: an allowed call runs, once, as judged."""
    from agentguard.integrations.langchain import AgentGuardToolGate

    assert _lc_run("abatch", [{"name": "read_file", "args": {"path": "/tmp/a"}}], AgentGuardToolGate) == \
        [("read_file", "/tmp/a")] * 2
    ran: list = []
    _sdk_run('{"path": "/tmp/a"}', "stop_on_first_tool", ran)
    assert ran == [("read_file", "/tmp/a")]
    assert _via_proxy("purge", {"n": 1, "path": "/tmp/a"}) == ([("purge", 1, "/tmp/a", "/tmp")], False)
