"""Per-call overhead of the one decision path (issue 24) against the code before it, side by side in one run.

Runs two checkouts' own overhead benchmarks alternately (A = the base checkout, B = this one), so both
see the same machine load, and compares:

- LangChain: ``guard_stack - noop_hooks`` wall and CPU ms per tool call
  (``benchmarks/integrations_langchain_overhead.py``);
- MCP relay: ``ratio_median`` = relayed / direct median latency per call (``benchmarks/mcp_proxy_latency.py``).

The base checkout is made with ``git worktree add /tmp/agentguard-base <commit>`` (the commit before
the Pipeline; default ``42fdafc``). Each round runs A then B (then B then A on the next round).

    python benchmarks/one_path_overhead_ab.py --base /tmp/agentguard-base [--rounds 4]
        [--out benchmarks/results/one_path_overhead_ab.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(checkout: Path, script: str, args: list[str]) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = fh.name
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    subprocess.run([sys.executable, str(checkout / "benchmarks" / script), *args, "--out", out], check=True,
                   env=env, cwd=checkout, stdout=subprocess.DEVNULL)
    data = json.loads(Path(out).read_text())
    os.unlink(out)
    return data


def _round(checkout: Path, lc_repeats: int, mcp_calls: int) -> dict[str, float]:
    lc = _run(checkout, "integrations_langchain_overhead.py", ["--calls", "20", "--repeats", str(lc_repeats)])
    mcp = _run(checkout, "mcp_proxy_latency.py", ["--calls", str(mcp_calls), "--startups", "1", "--rounds", "1"])
    return {"langchain_wall_ms": lc["overhead_wall_ms_per_call"]["guard_stack-noop_hooks"],
            "langchain_cpu_ms": lc["overhead_cpu_ms_per_call"]["guard_stack-noop_hooks"],
            "mcp_relay_ratio": mcp["ratio_median"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="checkout of the code before the Pipeline")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--lc-repeats", type=int, default=5)
    ap.add_argument("--mcp-calls", type=int, default=200)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "one_path_overhead_ab.json"))
    a = ap.parse_args()
    sides = {"A_base": Path(a.base).resolve(), "B_pipeline": REPO}
    rows: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
    for r in range(a.rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for k in order:
            rows[k].append(_round(sides[k], a.lc_repeats, a.mcp_calls))
            print(k, r, rows[k][-1], flush=True)
    med = {k: {m: statistics.median(x[m] for x in v) for m in v[0]} for k, v in rows.items()}
    out = {
        "command": "python benchmarks/one_path_overhead_ab.py " + " ".join(sys.argv[1:]),
        "median": med,
        "ratio_B_over_A": {m: med["B_pipeline"][m] / med["A_base"][m] for m in med["A_base"]},
        "rounds": rows,
        "machine": {"cpus": os.cpu_count(), "load1": os.getloadavg()[0]},
    }
    Path(a.out).write_text(json.dumps(out, indent=2))
    print(json.dumps({k: out[k] for k in ("median", "ratio_B_over_A")}, indent=2))


if __name__ == "__main__":
    main()
