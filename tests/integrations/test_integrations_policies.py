"""Every adapter with the verified-policy ToolCallGuard (agentguard.policies), built from configuration.

The policy (examples/integrations/policies/transfer_limit.py, Nagini contracts) refuses transfers above
the limit. For each framework: an over-limit transfer never executes; an allowed one executes unchanged.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("agentguard.policies")

from agentguard import Decision, GuardStack  # noqa: E402
from agentguard.config import load_stack  # noqa: E402
from agentguard.policies import ToolCallGuard  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EX = REPO / "examples" / "integrations"


def guard():
    return ToolCallGuard.from_config(
        {
            "policy": str(EX / "policies" / "transfer_limit.py"),
            "arguments": {"amount": "amount"},
            "constants": {"limit": 100},
            "tools": ["transfer_funds"],
            "name": "verified-policy",
        }
    )


def test_policy_guard_is_the_real_tool_call_guard():
    g = guard()
    assert isinstance(g, ToolCallGuard)
    stack = load_stack(EX / "agentguard.toml")
    assert [x.name for x in stack.guards] == ["no-deletes", "internal-mail", "no-internal-hosts", "transfer-limit"]
    assert isinstance(stack.guards[3], ToolCallGuard)


def test_langchain_with_verified_policy():
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    from agentguard.integrations.langchain import AgentGuardMiddleware, scripted_chat_model

    ledger = []

    @tool
    def transfer_funds(amount: int, to: str) -> str:
        """Transfer money."""
        ledger.append((amount, to))
        return f"transferred {amount} to {to}"

    model = scripted_chat_model(
        [
            AIMessage(
                "", tool_calls=[{"name": "transfer_funds", "args": {"amount": 5000, "to": "eve"}, "id": "1"}]
            ),
            AIMessage(
                "", tool_calls=[{"name": "transfer_funds", "args": {"amount": 40, "to": "ann"}, "id": "2"}]
            ),
            AIMessage("done"),
        ]
    )
    agent = create_agent(model, [transfer_funds], middleware=[AgentGuardMiddleware(GuardStack([guard()]))])
    out = agent.invoke(
        {"messages": [{"role": "user", "content": "pay"}]}, {"configurable": {"thread_id": "p"}}
    )
    assert ledger == [(40, "ann")]
    assert "exceeds the transfer limit" in out["messages"][2].content


def test_openai_agents_with_verified_policy():
    pytest.importorskip("agents")
    from agents import Agent, Runner, function_tool, set_trace_processors
    from agents.testing import ScriptedModel, assistant_message, function_call

    from agentguard.integrations.openai_agents import AgentsGuard

    ledger = []

    @function_tool
    def transfer_funds(amount: int, to: str) -> str:
        """Transfer money."""
        ledger.append((amount, to))
        return f"transferred {amount} to {to}"

    set_trace_processors([])
    model = ScriptedModel(
        [
            [function_call("transfer_funds", {"amount": 5000, "to": "eve"}, call_id="1")],
            [function_call("transfer_funds", {"amount": 40, "to": "ann"}, call_id="2")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="a", model=model, tools=AgentsGuard(guard()).guard_tools([transfer_funds]))
    res = asyncio.run(Runner.run(agent, "pay"))
    assert ledger == [(40, "ann")]
    outs = [it.output for it in res.new_items if type(it).__name__ == "ToolCallOutputItem"]
    assert "exceeds the transfer limit" in outs[0] and outs[1] == "transferred 40 to ann"


def test_mcp_proxy_with_verified_policy(tmp_path):
    pytest.importorskip("mcp")
    from mcp import Client

    from agentguard.integrations.mcp.proxy import GuardProxy, Upstream

    up = Upstream("bank", command=sys.executable, args=[str(EX / "mcp_upstream_server.py"), str(tmp_path)])

    async def main():
        async with GuardProxy(guard(), [up]) as proxy:
            async with Client(proxy.server) as c:
                denied = await c.call_tool("transfer_funds", {"amount": 5000, "to": "eve"})
                ok = await c.call_tool("transfer_funds", {"amount": 40, "to": "ann"})
                return denied, ok

    denied, ok = asyncio.run(main())
    assert denied.is_error and "exceeds the transfer limit" in denied.content[0].text
    assert not ok.is_error and (tmp_path / "ledger.txt").read_text() == "40 ann\n"


def test_litellm_with_verified_policy():
    from agentguard.integrations.litellm import GuardrailEndpoint

    ep = GuardrailEndpoint(guard())

    def body(amount):
        return {
            "input_type": "response",
            "litellm_trace_id": "t",
            "texts": [],
            "tool_calls": [
                {
                    "id": "1",
                    "type": "function",
                    "function": {
                        "name": "transfer_funds",
                        "arguments": json.dumps({"amount": amount, "to": "x"}),
                    },
                }
            ],
        }

    assert ep.handle(body(5000))["action"] == "BLOCKED"
    assert ep.handle(body(40)) == {"action": "NONE"}
    assert [s.signals["decision"] for s in ep.pipeline.run("t").context.trace.steps] == [
        Decision.REJECT,
        Decision.ALLOW,
    ]
