"""CPU cost of the LangChain middleware's own hooks per tool call, before and after the one decision path
(issue 24), side by side in one run.

The full-graph benchmark (``integrations_langchain_overhead.py``) measures the middleware inside a real
``create_agent`` run, where LangGraph's own scheduling dominates and a loaded machine makes the difference
of two medians noisy. This one calls the two hooks a guarded tool call goes through, ``after_model`` (the
turn's proposals decided before any runs) and ``wrap_tool_call`` (the gate, with a handler that returns at
once), directly on LangChain's own ``AIMessage`` / ``ToolCallRequest`` objects, 20 calls per run, in subprocesses that
alternate between the base checkout (A) and this one (B), and reports CPU microseconds per call (process
time, so other load on the machine counts less). Both run the same stack
(``examples/integrations/agentguard.toml`` of each checkout: two rule guards and a verified policy).

    python benchmarks/one_path_hooks_ab.py --base /tmp/agentguard-base [--rounds 6] [--calls 4000]
        [--out benchmarks/results/one_path_hooks_ab.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from pathlib import Path
from langchain.agents.middleware import ToolCallRequest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from agentguard.config import load_stack
from agentguard.integrations.langchain import AgentGuardMiddleware

stack = load_stack(Path("examples/integrations/agentguard.toml"))
mw = AgentGuardMiddleware(stack)
N = int(sys.argv[1])

class RT:  # the runtime object LangChain passes: only its config and context are read
    context = None
    config: dict = {}  # no thread id: both hooks key the run on the first message, as after_model does here

FIRST = [HumanMessage("read", id=f"run{r}") for r in range(2000)]

def one(i):
    tc = {"name": "read_file", "args": {"path": f"/x/{i % 50}"}, "id": f"c{i}", "type": "tool_call"}
    # 20 tool calls per run, as in integrations_langchain_overhead.py (the run is keyed on its first message)
    state = {"messages": [FIRST[(i // 20) % len(FIRST)], AIMessage("", tool_calls=[tc])]}
    mw.after_model(state, RT())
    req = ToolCallRequest(tool_call=tc, tool=None, state=state, runtime=RT())
    mw.wrap_tool_call(req, lambda r: ToolMessage("ok", tool_call_id=r.tool_call["id"]))

for i in range(300):
    one(i)
c0 = time.process_time()
for i in range(N):
    one(i)
print(json.dumps({"us_per_call": (time.process_time() - c0) / N * 1e6}))
"""


def _run(checkout: Path, calls: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    out = subprocess.run([sys.executable, "-c", CHILD, str(calls)], check=True, env=env, cwd=checkout,
                         capture_output=True, text=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["us_per_call"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="checkout of the code before the Pipeline")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "one_path_hooks_ab.json"))
    a = ap.parse_args()
    sides = {"A_base": Path(a.base).resolve(), "B_pipeline": REPO}
    us: dict[str, list[float]] = {k: [] for k in sides}
    for r in range(a.rounds):
        for k in (list(sides) if r % 2 == 0 else list(reversed(sides))):
            us[k].append(_run(sides[k], a.calls))
            print(k, r, round(us[k][-1], 1), flush=True)
    med = {k: statistics.median(v) for k, v in us.items()}
    out = {
        "command": "python benchmarks/one_path_hooks_ab.py " + " ".join(sys.argv[1:]),
        "cpu_us_per_call_median": med,
        "added_us_per_call": med["B_pipeline"] - med["A_base"],
        "ratio_B_over_A": med["B_pipeline"] / med["A_base"],
        "rounds": us,
        "machine": {"cpus": os.cpu_count(), "load1": os.getloadavg()[0]},
    }
    Path(a.out).write_text(json.dumps(out, indent=2))
    print(json.dumps({k: out[k] for k in ("cpu_us_per_call_median", "added_us_per_call", "ratio_B_over_A")}))


if __name__ == "__main__":
    main()
