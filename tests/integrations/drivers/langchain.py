"""The LangChain driver: a real ``create_agent`` run (scripted model, real ``@tool`` tools, InMemorySaver)
with :class:`~agentguard.integrations.langchain.AgentGuardMiddleware` or ``AgentGuardToolGate`` in front
of the tools, driven sync (``invoke``) or async (``ainvoke``). Every ESCALATE is answered through
LangGraph's interrupt: ``Command(resume={interrupt_id: {"decisions": [{"type": "approve"|"reject"}]}})``.

Call ids are given to the model as they are in the turns: a ``ToolCall.call_id`` of ``None`` is a
missing id (LangChain's ``tool_call`` needs the key; ``None`` is what parsers emit when there is none).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agentguard.core import Guard, ToolCall
from agentguard.integrations.langchain import AgentGuardMiddleware, AgentGuardToolGate, scripted_chat_model

from . import TOOLS, RunResult

MAX_RESUMES = 100


class LangChainDriver:
    """``gate``: AgentGuardToolGate (no after_model check) instead of AgentGuardMiddleware; ``aio``:
    ``ainvoke`` instead of ``invoke``. ``last`` keeps the final agent state of the latest run (the
    messages the model saw), for tests that look further than :class:`RunResult`."""

    def __init__(self, *, gate: bool = False, aio: bool = False) -> None:
        self.gate, self.aio = gate, aio
        self.name = f"langchain-{'gate' if gate else 'middleware'}-{'async' if aio else 'sync'}"
        self.last: dict[str, Any] = {}

    def __repr__(self) -> str:
        return self.name

    @staticmethod
    def _tools(res: RunResult) -> list[Any]:
        lock = threading.Lock()

        def make(name: str) -> Any:
            def body(target: str, amount: int) -> str:
                with lock:
                    res.executed.append((name, {"target": target, "amount": amount}))
                return "ok"

            return StructuredTool.from_function(body, name=name, description=f"The {name} tool.")

        return [make(n) for n in TOOLS]

    @staticmethod
    def _script(turns: list[list[ToolCall]]) -> list[AIMessage]:
        msgs = [AIMessage("", tool_calls=[{"name": c.name, "args": dict(c.arguments), "id": c.call_id,
                                           "type": "tool_call"} for c in turn])
                for turn in turns if turn]
        return [*msgs, AIMessage("done")]

    def run(self, guard: Guard, turns: list[list[ToolCall]], *, approve: bool = False,
            strategy: str | None = None) -> RunResult:
        res = RunResult()
        cls = AgentGuardToolGate if self.gate else AgentGuardMiddleware
        agent = create_agent(scripted_chat_model(self._script(turns)), self._tools(res),
                             middleware=[cls(guard, strategy=strategy)], checkpointer=InMemorySaver())
        cfg: Any = {"configurable": {"thread_id": f"driver-{uuid.uuid4().hex}"}}

        def invoke(payload: Any) -> Any:
            return asyncio.run(agent.ainvoke(payload, cfg)) if self.aio else agent.invoke(payload, cfg)

        out = invoke({"messages": [{"role": "user", "content": "go"}]})
        for _ in range(MAX_RESUMES):
            interrupts = out.get("__interrupt__") or []
            if not interrupts:
                break
            resume = {}
            for intr in interrupts:
                req = intr.value
                res.asked.append({**req["agentguard"], "call": req["action_requests"][0],
                                  "text": req["action_requests"][0]["description"]})
                resume[intr.id] = {"decisions": [{"type": "approve" if approve else "reject"}]}
            out = invoke(Command(resume=resume))
        else:
            raise AssertionError(f"{self.name}: still interrupted after {MAX_RESUMES} resumes")
        res.stopped = bool(out.get("agentguard_halt"))
        self.last = out
        return res


DRIVERS = [LangChainDriver(gate=g, aio=a) for g in (False, True) for a in (False, True)]
