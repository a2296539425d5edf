"""The recipe's LangChain agent (docs/recipe.md): a scripted model calling real tools.

    python agent.py record --runs 30            # record traces (record.toml: observe, record the history)
    python agent.py deploy                      # the learned bundle in the library (deploy.toml)
    python agent.py service http://127.0.0.1:8787   # the same bundle behind `agentguard serve`

Each run replays one scripted episode of tools.EPISODES: the model proposes the calls in order and the
guard decides each before it runs. No network except the guard service in ``service`` mode.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool

from agentguard.core import Decision
from agentguard.integrations.langchain import AgentGuardMiddleware, scripted_chat_model
from agentguard.integrations.recording import TraceRecorder, load_recording

from tools import EPISODES, TOOLS, episode_kind


def run_episode(kind: str, run_id: str, middleware: AgentGuardMiddleware) -> None:
    """One scripted run of episode ``kind`` through a LangChain agent guarded by ``middleware``."""
    calls = EPISODES[kind]
    script = [AIMessage("", tool_calls=[{"name": n, "args": a, "id": f"{run_id}-{i}"}])
              for i, (n, a) in enumerate(calls)] + [AIMessage("done")]
    agent = create_agent(scripted_chat_model(script), [StructuredTool.from_function(t) for t in TOOLS],
                         middleware=[middleware])
    agent.invoke({"messages": [HumanMessage(f"task {kind}")]}, config={"configurable": {"thread_id": run_id}})


def show(trace: Any) -> str:
    """One line per decided call: tool, decision and the predicted probability of staying safe."""
    out = []
    for s in trace.steps:
        d = Decision(int(s.signals.get("decision", 0))).name
        p = s.signals.get("probability")
        out.append(f"{s.action.name}: {d}" + (f" (P_safe {p:.2f})" if p is not None else ""))
    return "; ".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["record", "deploy", "service"])
    ap.add_argument("url", nargs="?", help="the guard service (service mode)")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    if args.mode == "record":
        stack, recorder, state_fn = load_recording("record.toml")
        mw = AgentGuardMiddleware(stack, recorder=recorder, state_fn=state_fn)
        for i in range(args.runs):
            run_episode(episode_kind(i), f"lc-{i}", mw)
        print(f"recorded {args.runs} runs to {os.path.relpath(recorder.path) if recorder and recorder.path else '-'}")
        return
    if args.mode == "deploy":
        from agentguard.config import load_stack

        guard = load_stack("deploy.toml")   # the bundle computes the history state itself
        state_fn = None
    else:
        from agentguard.server.client import GuardServiceClient, RemoteGuard
        from agentguard.spec.history import history_state

        guard = RemoteGuard(GuardServiceClient(args.url, os.environ["AGENTGUARD_TOKEN"]), mode="step")
        state_fn = history_state          # sent as the step's concrete state
    for kind in ("report", "exfiltrate"):
        rec = TraceRecorder()
        run_episode(kind, f"{args.mode}-{kind}", AgentGuardMiddleware(guard, recorder=rec, state_fn=state_fn))
        print(f"{kind}: {show(rec.traces[-1])}")


if __name__ == "__main__":
    main()
