"""OpenAI Agents SDK agent behind agentguard: a refusal the run carries on from, a human approval through
the SDK's own interruptions (``needs_approval`` -> ``RunState.approve``/``reject``), and per-run facts
reaching a verified policy (the SDK's ScriptedModel; no network, no API key).

    python examples/integrations/openai_agents_approval.py

Same guard stack as langchain_approval.py: the shared agentguard.toml + "ask before archiving"
(ESCALATE) + the verified transfer-limit policy reading the user's own limit from the run context.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path

from agents import Agent, Runner, function_tool, set_trace_processors
from agents.testing import ScriptedModel, assistant_message, function_call

from agentguard import GuardStack
from agentguard.config import load_stack
from agentguard.integrations.openai_agents import AgentsGuard
from agentguard.policies.rules import ToolRuleGuard
from agentguard.policies import ToolCallGuard

HERE = Path(__file__).resolve().parent


@dataclass
class Facts:
    """The run context: what the application knows about this run (the model never writes it)."""

    user_info: dict = field(default_factory=dict)
    run_id: str = "example"  # names the guard's run across the interruption


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

    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        effects["deleted"].append(path)
        return f"deleted {path}"

    @function_tool
    def archive_file(path: str) -> str:
        """Archive a file."""
        effects["archived"].append(path)
        return f"archived {path}"

    @function_tool
    def transfer_funds(amount: int) -> str:
        """Transfer money."""
        effects["transferred"].append(amount)
        return f"transferred {amount}"

    set_trace_processors([])  # keep the example offline (no trace export)
    ag = AgentsGuard(guard_stack())
    model = ScriptedModel([
        [function_call("delete_file", {"path": "/srv/db"}, call_id="1"),
         function_call("transfer_funds", {"amount": 800}, call_id="2")],
        [function_call("archive_file", {"path": "/srv/logs/a.gz"}, call_id="3"),
         function_call("archive_file", {"path": "/srv/db"}, call_id="4")],
        [assistant_message("Done what I was allowed to do.")],
    ])
    agent = Agent(name="assistant", instructions="Be careful.", model=model,
                  tools=ag.guard_tools([delete_file, archive_file, transfer_funds]))
    facts = Facts(user_info={"transfer_limit": user_limit}, run_id=f"example-{user_limit}")

    async def run() -> tuple[object, list[str]]:
        result = await Runner.run(agent, "tidy up and pay", context=facts)
        asked = []
        while result.interruptions:
            state = result.to_state()
            for item in result.interruptions:  # the SDK's ToolApprovalItem
                path = json.loads(item.arguments or "{}").get("path")
                asked.append(path)
                state.approve(item) if path != "/srv/db" else state.reject(item)  # the human's decision
            result = await Runner.run(agent, state)
        return result, asked

    result, asked = asyncio.run(run())
    print("final:", result.final_output)
    return {**effects, "asked": asked, "final": result.final_output}


if __name__ == "__main__":
    print(main(500))
    print(main(5000))
