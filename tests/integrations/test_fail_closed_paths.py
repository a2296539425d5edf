"""Issue 13: the late-ALLOW guard and a guard raising SystemExit on every adapter path.

One guard that sleeps (blocking, no await point) past its stack's ``timeout_s`` and then ALLOWs: every
path (GuardStack.acheck is in tests/core) must answer REJECT or HALT and the tool must not run. Real
packages: the service (TestClient), the MCP proxy with the project's real upstream server, the LangChain
middleware, the OpenAI Agents adapter and the LiteLLM endpoint (in process).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from agentguard import BaseGuard, Decision, GuardStack, Verdict

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = str(REPO / "examples" / "integrations" / "mcp_upstream_server.py")


class LateAllow(BaseGuard):
    name = "late-allow"

    def check(self, context, proposal):
        time.sleep(0.4)
        return Verdict.allow(self.name, "came too late")


class Exits(BaseGuard):
    name = "exits"

    def check(self, context, proposal):
        raise SystemExit(0)


def late_stack() -> GuardStack:
    return GuardStack([LateAllow()], timeout_s=0.05)


@pytest.mark.parametrize("guard", [late_stack, lambda: GuardStack([Exits()]), Exits])
def test_service_check_fails_closed_and_keeps_answering(tmp_path, guard):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from agentguard.server.app import create_app
    from agentguard.server.guards import ServiceGuards, default_guards
    from agentguard.server.settings import ServerSettings

    auth = {"Authorization": "Bearer test-token-123456"}
    settings = ServerSettings(token="test-token-123456", state_dir=str(tmp_path / "d"), run_ttl_s=60)
    g = default_guards(settings)
    app = create_app(settings, ServiceGuards(tool=guard(), step=g.step, signal=g.signal))
    with TestClient(app) as c:
        for _ in range(2):
            r = c.post("/v1/check", headers=auth, json={"tool_call": {"name": "read_file"}})
            assert r.status_code == 200 and r.json()["decision"] in ("REJECT", "HALT"), r.text
        assert c.get("/health").status_code == 200  # still up and answering


@pytest.mark.parametrize("guard", [late_stack, Exits])
def test_mcp_proxy_upstream_tool_never_runs(tmp_path, guard):
    pytest.importorskip("mcp")
    from mcp import Client

    from agentguard.integrations.mcp.proxy import GuardProxy, Upstream

    async def main():
        up = Upstream("notes", command=sys.executable, args=[UPSTREAM, str(tmp_path)])
        async with GuardProxy(guard(), [up]) as proxy:
            async with Client(proxy.server) as client:
                r = await client.call_tool("write_note", {"name": "a.txt", "text": "x"})
                r2 = await client.call_tool("list_notes", {})  # the session survived
                return r, r2

    r, r2 = asyncio.run(main())
    assert r.is_error
    time.sleep(0.5)  # the abandoned guard finishes its ALLOW in its thread: still nothing may run
    assert not (tmp_path / "a.txt").exists()
    assert r2 is not None


@pytest.mark.parametrize("aio", [False, True])
@pytest.mark.parametrize("guard", [late_stack, Exits])
def test_langchain_middleware_tool_never_runs(aio, guard):
    pytest.importorskip("langchain.agents.middleware")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    from agentguard.integrations.langchain import AgentGuardMiddleware, scripted_chat_model

    effects = []

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        effects.append(path)
        return "contents"

    model = scripted_chat_model([
        AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "/x"}, "id": "c1", "type": "tool_call"}]),
        AIMessage("done"),
    ])
    agent = create_agent(model, [read_file], middleware=[AgentGuardMiddleware(guard())])
    payload, cfg = {"messages": [{"role": "user", "content": "go"}]}, {"configurable": {"thread_id": "t"}}
    out = asyncio.run(agent.ainvoke(payload, cfg)) if aio else agent.invoke(payload, cfg)
    assert effects == []
    assert out.get("agentguard_halt")


@pytest.mark.parametrize("guard", [late_stack, Exits])
def test_openai_agents_tool_never_runs(guard):
    pytest.importorskip("agents")
    from agents import Agent, Runner, function_tool, set_trace_processors
    from agents.exceptions import ToolInputGuardrailTripwireTriggered
    from agents.testing import ScriptedModel, assistant_message, function_call

    from agentguard.integrations.openai_agents import AgentsGuard

    effects = []

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        effects.append(path)
        return "contents"

    set_trace_processors([])
    ag = AgentsGuard(guard())
    agent = Agent(name="a", instructions="x", tools=ag.guard_tools([read_file]), model=ScriptedModel(
        [[function_call("read_file", {"path": "/x"}, call_id="c1")], [assistant_message("done")]]))
    with pytest.raises(ToolInputGuardrailTripwireTriggered):
        asyncio.run(Runner.run(agent, "go"))
    assert effects == []


@pytest.mark.parametrize("guard", [late_stack, Exits])
def test_litellm_endpoint_blocks(guard):
    from agentguard.integrations.litellm import GuardrailEndpoint

    ep = GuardrailEndpoint(guard())
    body = {"input_type": "request", "texts": [], "tool_calls": [
        {"id": "t", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]}
    out = ep.handle(body)
    assert out["action"] == "BLOCKED", out


def test_decision_of_late_guard_is_never_allow_directly():
    from agentguard.core import Pipeline

    p = Pipeline(LateAllow(), timeout_s=0.05)
    assert p.decide("r1", {"name": "x"}).verdict.decision is Decision.HALT
    assert asyncio.run(p.adecide("r2", {"name": "x"})).verdict.decision is Decision.HALT


# -- arguments as JSON text: one strict reading, an unreadable call refused by the Pipeline (audited) -----
import json  # noqa: E402

from hypothesis import given, settings as hsettings, strategies as st  # noqa: E402

from agentguard.core.audit import MemoryAuditSink  # noqa: E402
from agentguard.core.pipeline import Pipeline  # noqa: E402
from agentguard.integrations.common import Unreadable, read_arguments, tool_call_of  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

_JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
                        max_leaves=6)


def _finite(v):
    if isinstance(v, float):
        return v == v and v not in (float("inf"), float("-inf"))
    if isinstance(v, dict):
        return all(_finite(x) for x in v.values())
    if isinstance(v, list):
        return all(_finite(x) for x in v)
    return True


@hsettings(max_examples=150, deadline=None)
@given(_JSONISH, st.booleans())
def test_property_text_arguments_are_read_strictly_or_refused_through_the_pipeline(value, dup):
    raw = json.dumps(value)  # allow_nan: NaN and Infinity literals appear for non-finite floats
    if dup and isinstance(value, dict) and value:
        k = next(iter(value))
        raw = raw[:-1] + f", {json.dumps(k)}: 0}}"  # the same key once more
    audit = MemoryAuditSink()
    pipe = Pipeline(ToolRuleGuard(allow=["*"]), audit=audit, on_error=Decision.REJECT)
    proposal = tool_call_of("t", raw)
    out = pipe.decide("r", proposal)
    strict = isinstance(value, dict) and not (dup and value) and _finite(value)
    if strict:
        assert not isinstance(proposal, Unreadable) and out.execute and out.call.arguments == json.loads(raw)
    else:
        assert isinstance(proposal, Unreadable) and not out.execute and out.call is None
        assert "arguments" in out.verdict.reason or "JSON" in out.verdict.reason
    assert len(audit.records) == 1  # every answer audited, the refusal too


def test_read_arguments_refuses_each_ambiguous_spelling_in_one_line():
    for raw, why in [('{"a": 1, "a": 2}', "duplicate key"), ('{"a": NaN}', "NaN"), ('{"a": 1e999}', "out of range"),
                     ('{"a": "\\ud800"}', "surrogate"), ("[1]", "JSON object"), ("{'a': 1}", "not strict JSON"),
                     ("12", "JSON object"), (b"\xff{}", "UTF-8")]:
        with pytest.raises(Exception) as e:
            read_arguments(raw)
        assert why in str(e.value) and "\n" not in str(e.value), (raw, str(e.value))
    assert read_arguments("") == {} and read_arguments(None) == {} and read_arguments({"a": 1}) == {"a": 1}
