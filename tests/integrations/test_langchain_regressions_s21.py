"""Session 21 red team of the LangChain gate: coercions, defaults, async tools and parallel calls tried as an attacker
who writes the model's tool calls, each already judged on what the tool receives (kept as a regression list).
Differential oracle: the real ``create_agent`` with real tools records what each body received; nothing a rule
refuses on those values ever ran."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langchain.agents.middleware")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import StructuredTool, tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from agentguard.integrations.langchain import (  # noqa: E402
    AgentGuardMiddleware,
    AgentGuardToolGate,
    scripted_chat_model,
)
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402


def make_tools(ran: list):
    @tool
    def budget(amount: float) -> str:
        """Spend."""
        ran.append(("budget", amount))
        return "ok"

    @tool
    def deploy(target: str, dry_run: bool = True) -> str:
        """Deploy."""
        ran.append(("deploy", target, dry_run))
        return "ok"

    @tool
    def purge(path: str = "/") -> str:
        """Purge."""
        ran.append(("purge", path))
        return "ok"

    async def apurge(path: str = "/") -> str:
        ran.append(("apurge", path))
        return "ok"

    return [budget, deploy, purge, StructuredTool.from_function(coroutine=apurge, name="apurge", description="Purge.")]


GUARD = ToolRuleGuard(allow=["budget", "deploy", "purge", "apurge"], arguments=[
    {"tool": "budget", "arg": "amount", "forbid": r"^\d{4,}"},
    {"tool": "deploy", "arg": "dry_run", "forbid": r"(?i)^false$"},
    {"tool": "purge", "arg": "path", "forbid": r"^/$"},
    {"tool": "apurge", "arg": "path", "forbid": r"^/$"},
], name="rules")


def run(calls: list[tuple[str, dict]], *, gate: bool, aio: bool, guard=GUARD) -> list:
    ran: list = []
    tcs = [{"name": n, "args": a, "id": f"c{i}", "type": "tool_call"} for i, (n, a) in enumerate(calls)]
    model = scripted_chat_model([AIMessage("", tool_calls=tcs), AIMessage("done")])
    cls = AgentGuardToolGate if gate else AgentGuardMiddleware
    agent = create_agent(model, make_tools(ran), middleware=[cls(guard)], checkpointer=InMemorySaver())
    payload, cfg = {"messages": [{"role": "user", "content": "go"}]}, {"configurable": {"thread_id": "t"}}
    asyncio.run(agent.ainvoke(payload, cfg)) if aio else agent.invoke(payload, cfg)
    return ran


ATTACKS = [
    ("budget", {"amount": "1e3"}),                 # pydantic reads "1e3" as 1000.0
    ("budget", {"amount": " 5000 "}),
    ("deploy", {"target": "prod", "dry_run": "off"}),  # "off", "no", "0", "f" are False
    ("deploy", {"target": "prod", "dry_run": 0}),
    ("purge", {}),                                 # the default "/" runs
    ("apurge", {}),                                # an async tool's default
]


def test_the_oracle_the_tools_receive_the_coerced_and_default_values():
    ran = run(ATTACKS, gate=True, aio=True, guard=ToolRuleGuard(allow=["*"]))
    assert sorted(ran, key=str) == sorted([("budget", 1000.0), ("budget", 5000.0), ("deploy", "prod", False),
                                           ("deploy", "prod", False), ("purge", "/"), ("apurge", "/")], key=str)


@pytest.mark.parametrize("gate,aio", [(False, False), (True, True), (False, True)])
@pytest.mark.parametrize("name,args", ATTACKS)
def test_a_coerced_or_defaulted_value_is_judged_as_the_tool_receives_it(name, args, gate, aio):
    assert run([(name, args)], gate=gate, aio=aio) == []


@pytest.mark.parametrize("gate,aio", [(False, False), (True, True)])
def test_parallel_calls_run_only_the_allowed_ones(gate, aio):
    ran = run([("purge", {"path": "/srv/tmp"}), ("deploy", {"target": "prod", "dry_run": "no"}),
               ("budget", {"amount": 12.5}), ("apurge", {})], gate=gate, aio=aio)
    assert sorted(ran) == [("budget", 12.5), ("purge", "/srv/tmp")]
