"""Red team (session 19), LangChain: attempts that were already refused, kept as regressions, and a property over
``abatch``: concurrent runs of one agent each get the decision of their own facts.

Tried against the real ``create_agent`` (langchain 1.5, langgraph 1.2) with a guard that denies ``delete_*``:

- a refused ``return_direct`` tool: it did not run; the run ended with the refusal as its answer;
- an ``async`` tool under the gate alone (``ainvoke``): refused, not run;
- a tool taking LangChain's ``config: RunnableConfig`` with the model writing a ``config`` argument itself: LangChain
  injects its own (the model's ``tags`` never reach the function), and the guard judged ``path`` only;
- a custom LangGraph graph running tools through a bare ``ToolNode`` with the gate as its ``wrap_tool_call``: a refused
  call, an ``InjectedState`` tool's forbidden path (also with the model writing the injected ``state`` itself) did
  not run;
- ``abatch`` of runs with different per-run facts (``agentguard_facts``) and a guard reading them, deciding slowly
  (so the runs interleave): each run's call was decided on its own facts.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import pytest

pytest.importorskip("langchain.agents.middleware")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.runnables import RunnableConfig  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.prebuilt import InjectedState  # noqa: E402

from agentguard.core.guard import BaseGuard  # noqa: E402
from agentguard.core.types import Decision, Verdict  # noqa: E402
from agentguard.integrations.langchain import AgentGuardMiddleware, AgentGuardToolGate, scripted_chat_model  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

GO = {"messages": [{"role": "user", "content": "go"}]}


def agent_for(tools, calls, mw, turns=1):
    tcs = [{"name": n, "args": a, "id": f"c{i}", "type": "tool_call"} for i, (n, a) in enumerate(calls)]
    model = scripted_chat_model([AIMessage("", tool_calls=tcs)] * turns + [AIMessage("done")] * (turns + 1))
    return create_agent(model, tools, middleware=[mw])


def test_regression_a_refused_return_direct_tool_does_not_run():
    ran = []

    @tool(return_direct=True)
    def delete_file(path: str) -> str:
        """Delete."""
        ran.append(path)
        return "deleted"

    out = agent_for([delete_file], [("delete_file", {"path": "/x"})],
                    AgentGuardMiddleware(ToolRuleGuard(deny=["delete_*"], name="nd"))).invoke(GO)
    assert ran == [] and "agentguard refused tool call delete_file" in out["messages"][-1].content


def test_regression_a_refused_async_tool_does_not_run_under_the_gate_alone():
    ran = []

    @tool
    async def delete_file(path: str) -> str:
        """Delete."""
        ran.append(path)
        return "deleted"

    asyncio.run(agent_for([delete_file], [("delete_file", {"path": "/x"})],
                          AgentGuardToolGate(ToolRuleGuard(deny=["delete_*"], name="nd"))).ainvoke(GO))
    assert ran == []


def test_regression_a_model_written_config_never_reaches_the_function():
    ran = []

    @tool
    def read_file(path: str, config: RunnableConfig) -> str:
        """Read."""
        ran.append((path, (config or {}).get("tags")))
        return "ok"

    agent_for([read_file], [("read_file", {"path": "/ok", "config": {"tags": ["model"]}})],
              AgentGuardMiddleware(ToolRuleGuard(allow=["*"], name="a"))).invoke(GO)
    assert ran and ran[0][0] == "/ok" and ran[0][1] != ["model"]


class Buyer(BaseChatModel):
    """A model that proposes ``buy(wine)`` after the user's message and ends after the tool's answer, whichever
    run of a batch calls it (a shared script would hand one run another run's turn)."""

    @property
    def _llm_type(self) -> str:
        return "buyer"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        if messages[-1].type == "human":
            msg = AIMessage("", tool_calls=[{"name": "buy", "args": {"item": "wine"}, "id": "c0", "type": "tool_call"}])
        else:
            msg = AIMessage("done")
        return ChatResult(generations=[ChatGeneration(message=msg)])


class Age(BaseGuard):
    """Allows ``buy`` only for a run whose facts say ``age >= 18``; decides slowly, so batched runs interleave."""

    name = "age"

    def check(self, context, proposal):
        age = (context.metadata or {}).get("age")
        ok = isinstance(age, int) and not isinstance(age, bool) and age >= 18
        return Verdict.allow(self.name) if ok else Verdict(Decision.REJECT, "minor", self.name)

    async def acheck(self, context, proposal):
        await asyncio.sleep(0.01)
        return self.check(context, proposal)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(10, 30), min_size=2, max_size=5), st.booleans())
def test_property_abatch_runs_are_decided_on_their_own_facts(ages, gate_only):
    ran: list = []

    @tool
    def buy(item: str) -> str:
        """Buy."""
        ran.append(item)
        return "ok"

    cls = AgentGuardToolGate if gate_only else AgentGuardMiddleware
    agent = create_agent(Buyer(), [buy], middleware=[cls(Age())])
    inputs = [{"messages": [{"role": "user", "content": f"u{i}"}], "agentguard_facts": {"age": a}}
              for i, a in enumerate(ages)]
    outs = asyncio.run(agent.abatch(inputs))
    for age, out in zip(ages, outs):
        tool_msgs = [m.content for m in out["messages"] if m.type == "tool"]
        assert (tool_msgs == ["ok"]) == (age >= 18), (ages, age, tool_msgs)
    assert len(ran) == sum(a >= 18 for a in ages)


def test_the_gate_on_a_bare_tool_node_of_a_custom_graph():
    """A custom LangGraph graph runs tools through ``ToolNode`` without ``create_agent``: the gate is its
    ``wrap_tool_call``/``awrap_tool_call``; a refused call never runs, an injected-state tool is judged on the
    arguments it reads, an allowed call runs once."""
    from langchain_core.messages import HumanMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    ran: list = []

    @tool
    def read_file(path: str, state: Annotated[dict, InjectedState]) -> str:
        """Read."""
        ran.append(("read_file", path))
        return "ok"

    @tool
    def delete_file(path: str) -> str:
        """Delete."""
        ran.append(("delete_file", path))
        return "ok"

    gate = AgentGuardToolGate(ToolRuleGuard(deny=["delete_*"], name="nd", arguments=[
        {"tool": "read_file", "arg": "path", "forbid": "^/etc"}]))
    node = ToolNode([read_file, delete_file], wrap_tool_call=gate.wrap_tool_call, awrap_tool_call=gate.awrap_tool_call)
    g = StateGraph(MessagesState)
    g.add_node("tools", node)
    g.add_edge(START, "tools")
    g.add_edge("tools", END)
    app = g.compile()
    calls = [("delete_file", {"path": "/x"}), ("read_file", {"path": "/etc/shadow"}),
             ("read_file", {"path": "/etc/x", "state": {"messages": []}}), ("read_file", {"path": "/ok"})]
    msg = AIMessage("", tool_calls=[{"name": n, "args": a, "id": f"c{i}", "type": "tool_call"}
                                    for i, (n, a) in enumerate(calls)])
    for aio in (False, True):
        ran.clear()
        payload = {"messages": [HumanMessage("go"), msg]}
        asyncio.run(app.ainvoke(payload)) if aio else app.invoke(payload)
        assert ran == [("read_file", "/ok")], (aio, ran)
