"""LangChain v1 agent behind agentguard (scripted model; no network).

python examples/integrations/langchain_agent.py
"""

from __future__ import annotations

from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from agentguard.config import load_stack
from agentguard.integrations.langchain import AgentGuardMiddleware, scripted_chat_model

HERE = Path(__file__).resolve().parent


def main() -> dict:
    sent, deleted = [], []

    @tool
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    model = scripted_chat_model(
        [
            AIMessage("", tool_calls=[{"name": "delete_file", "args": {"path": "/srv/db"}, "id": "1"}]),
            AIMessage(
                "",
                tool_calls=[
                    {"name": "send_email", "args": {"to": "ann@example.com", "body": "hi"}, "id": "2"}
                ],
            ),
            AIMessage("Sent the report; I was not allowed to delete the database."),
        ]
    )
    agent = create_agent(
        model,
        [send_email, delete_file],
        middleware=[AgentGuardMiddleware(load_stack(HERE / "agentguard.toml"))],
    )
    out = agent.invoke(
        {"messages": [{"role": "user", "content": "clean up and report"}]},
        {"configurable": {"thread_id": "example"}},
    )
    for m in out["messages"]:
        if isinstance(m, ToolMessage):
            print(f"tool {m.name}: {m.content}")
    print("final:", out["messages"][-1].content)
    return {"sent": sent, "deleted": deleted}


if __name__ == "__main__":
    main()
