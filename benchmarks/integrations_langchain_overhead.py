"""LangChain middleware overhead per tool call, wall time, in a real ``create_agent`` run.

One agent run = ``--calls`` model turns, each proposing one allowed tool call (``read_file``), then a
final answer; the model is langchain_core's ``GenericFakeChatModel`` replaying the script (no network),
so the model costs the same in every variant. Variants, interleaved within each repeat (same load):

- ``none``: no middleware;
- ``noop_wrap``: a no-op middleware with only ``wrap_tool_call`` (passes the call through);
- ``noop_hooks``: a no-op middleware with the same hooks as AgentGuardMiddleware (``before_agent``,
  ``before_model``, ``after_model``, ``after_agent``, ``wrap_tool_call``), i.e. the same graph;
- ``guard_stack``: ``AgentGuardMiddleware`` with the example stack (examples/integrations/agentguard.toml:
  two rule guards and a verified policy);
- ``gate_stack``: ``AgentGuardToolGate`` (no ``after_model`` node) with the same stack.

Reported: the median over ``--repeats`` of wall (and process CPU) milliseconds per tool call, and
the overhead of each guarded variant over each baseline per tool call, as the median of the paired
per-round differences (the variants of one round run back to back, so they share the machine's
load). The issue's bound: guard_stack - noop <= 0.5 ms wall per tool call.

    python benchmarks/integrations_langchain_overhead.py [--calls 20] [--repeats 15]
        [--out benchmarks/results/integrations_langchain_overhead.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import AgentMiddleware  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from agentguard.config import load_stack  # noqa: E402
from agentguard.integrations.langchain import (  # noqa: E402
    AgentGuardMiddleware,
    AgentGuardToolGate,
    scripted_chat_model,
)


class NoopWrap(AgentMiddleware):
    def wrap_tool_call(self, request, handler):
        return handler(request)


class NoopHooks(NoopWrap):
    def before_agent(self, state, runtime):
        return None

    def before_model(self, state, runtime):
        return None

    def after_model(self, state, runtime):
        return None

    def after_agent(self, state, runtime):
        return None


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def agent(middleware, calls: int):
    script = [AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": f"/x/{i}"}, "id": f"c{i}"}])
              for i in range(calls)] + [AIMessage("done")]
    model = scripted_chat_model(list(itertools.islice(itertools.cycle(script), 10_000)))
    return create_agent(model, [read_file], middleware=middleware)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "integrations_langchain_overhead.json"))
    a = ap.parse_args()
    stack = load_stack(REPO / "examples" / "integrations" / "agentguard.toml")
    variants = {
        "none": [], "noop_wrap": [NoopWrap()], "noop_hooks": [NoopHooks()],
        "guard_stack": [AgentGuardMiddleware(stack)], "gate_stack": [AgentGuardToolGate(stack)],
    }
    agents = {k: agent(m, a.calls) for k, m in variants.items()}
    per_call: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    for rep in range(a.repeats + 1):  # the first round warms up and is dropped
        for k, ag in agents.items():
            t0, c0 = time.perf_counter(), time.process_time()
            out = ag.invoke({"messages": [{"role": "user", "content": "read"}]},
                            {"configurable": {"thread_id": f"{k}-{rep}"}})
            dt, dc = (time.perf_counter() - t0) * 1000 / a.calls, (time.process_time() - c0) * 1000 / a.calls
            assert out["messages"][-1].content == "done", k
            if rep:
                per_call[k].append(dt)
                cpu[k].append(dc)
    med = {k: statistics.median(v) for k, v in per_call.items()}

    def paired(x: dict[str, list[float]], g: str, b: str) -> float:
        return statistics.median(p - q for p, q in zip(x[g], x[b]))
    res = {
        "command": "python benchmarks/integrations_langchain_overhead.py " + " ".join(sys.argv[1:]),
        "calls_per_run": a.calls, "repeats": a.repeats,
        "wall_ms_per_call_median": med,
        "cpu_ms_per_call_median": {k: statistics.median(v) for k, v in cpu.items()},
        "overhead_wall_ms_per_call": {
            f"{g}-{b}": paired(per_call, g, b) for g in ("guard_stack", "gate_stack") for b in ("noop_hooks", "noop_wrap", "none")
        },
        "overhead_cpu_ms_per_call": {
            f"{g}-{b}": paired(cpu, g, b) for g in ("guard_stack", "gate_stack") for b in ("noop_hooks", "noop_wrap", "none")
        },
        "bound_ms": 0.5,
        "per_run_wall_ms_per_call": per_call,
        "per_run_cpu_ms_per_call": cpu,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load1": os.getloadavg()[0]},
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps({k: v for k, v in res.items() if not k.startswith("per_run")}, indent=2))


if __name__ == "__main__":
    main()
