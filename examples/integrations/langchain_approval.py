"""LangChain v1 agent behind agentguard: a refusal the run carries on from, a human approval through
LangChain's own HITL interrupt, and per-run facts reaching a verified policy (scripted model; no network).

    python examples/integrations/langchain_approval.py

The guard stack: the shared examples/integrations/agentguard.toml (no deletes, internal mail only,
transfers <= 1000) + "ask before archiving" (ESCALATE) + the verified transfer-limit policy reading
the *user's own* limit from the run's facts (``user_info.transfer_limit``, LangGraph runtime context).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agentguard import GuardStack
from agentguard.config import load_stack
from agentguard.integrations.langchain import AgentGuardMiddleware, scripted_chat_model
from agentguard.policies.rules import ToolRuleGuard
from agentguard.policies import ToolCallGuard

HERE = Path(__file__).resolve().parent


@dataclass
class Facts:
    """What the application knows about this run (trusted; the model never writes it)."""

    user_info: dict = field(default_factory=dict)


def guard_stack() -> GuardStack:
    user_limit = ToolCallGuard.from_config({
        "policy": str(HERE / "policies" / "transfer_limit.py"), "name": "user-limit",
        "tools": ["transfer_funds"], "unknown_tool": "allow",
        "fields": {"amount": {"from": "argument", "key": "amount"},
                   "limit": {"from": "metadata", "key": "user_info.transfer_limit"}},
    })
    ask = ToolRuleGuard(escalate=["archive_*"], name="ask-before-archiving")
    return GuardStack([load_stack(HERE / "agentguard.toml"), ask, user_limit], name="example+approval")


def main(user_limit: int = 500) -> dict:
    effects: dict[str, list] = {"deleted": [], "archived": [], "transferred": []}

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        effects["deleted"].append(path)
        return f"deleted {path}"

    @tool
    def archive_file(path: str) -> str:
        """Archive a file."""
        effects["archived"].append(path)
        return f"archived {path}"

    @tool
    def transfer_funds(amount: int) -> str:
        """Transfer money."""
        effects["transferred"].append(amount)
        return f"transferred {amount}"

    def call(name, args, cid):
        return AIMessage("", tool_calls=[{"name": name, "args": args, "id": cid}])

    model = scripted_chat_model([
        call("delete_file", {"path": "/srv/db"}, "1"),         # dangerous: refused, the run goes on
        call("transfer_funds", {"amount": 800}, "2"),          # <= 1000 but over this user's own limit?
        call("archive_file", {"path": "/srv/logs/a.gz"}, "3"),  # needs a human: approved
        call("archive_file", {"path": "/srv/db"}, "4"),         # needs a human: rejected
        AIMessage("Done what I was allowed to do."),
    ])
    agent = create_agent(model, [delete_file, archive_file, transfer_funds],
                         middleware=[AgentGuardMiddleware(guard_stack())],
                         checkpointer=InMemorySaver(), context_schema=Facts)
    cfg = {"configurable": {"thread_id": f"example-{user_limit}"}}
    facts = Facts(user_info={"transfer_limit": user_limit})
    out = agent.invoke({"messages": [{"role": "user", "content": "tidy up and pay"}]}, cfg, context=facts)
    asked = []
    while out.get("__interrupt__"):
        request = out["__interrupt__"][0].value  # LangChain's HITLRequest
        action = request["action_requests"][0]
        asked.append(action["args"]["path"])
        ok = action["args"]["path"] != "/srv/db"    # the human's decision
        decision = {"type": "approve"} if ok else {"type": "reject", "message": "not the database"}
        out = agent.invoke(Command(resume={"decisions": [decision]}), cfg, context=facts)
    for m in out["messages"]:
        if isinstance(m, ToolMessage):
            print(f"tool {m.name} [{m.status}]: {m.content}")
    print("final:", out["messages"][-1].content)
    return {**effects, "asked": asked, "final": out["messages"][-1].content}


if __name__ == "__main__":
    print(main(500))
    print(main(5000))
