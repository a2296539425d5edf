"""A/B of one verified-policy check (the shipped Mind2Web-SC policy through ToolCallGuard.check and
Policy.evaluate): this tree's bounded policy language versus a base tree, alternating in subprocesses.

    python benchmarks/policy_check_ab.py --base ../13a-base --rounds 5
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

PROBE = r"""
import json, time
from agentguard.core import Context, ToolCall
from agentguard.policies import ToolCallGuard, library_path, load_policy
p = load_policy(library_path("mind2web_sc"))
g = ToolCallGuard.from_config({"policy": "mind2web_sc", "fields": {
    "category": {"from": "tool", "map": {"book_hotel": 3, "rent_car": 1}},
    "age": {"from": "metadata", "key": "age"}, "domestic": {"from": "constant", "value": True},
    "dr_license": {"from": "constant", "value": True}, "vaccine": {"from": "constant", "value": True},
    "membership": {"from": "constant", "value": True}}})
args = dict(category=3, age=16, domestic=True, dr_license=True, vaccine=True, membership=True)
ctx, call = Context(metadata={"age": 16}), ToolCall("book_hotel", {})
def timed(f, n):
    for _ in range(n // 10): f()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    ts.sort()
    return {"median_us": ts[n // 2] * 1e6, "p99_us": ts[int(n * 0.99)] * 1e6}
print(json.dumps({"evaluate": timed(lambda: p.evaluate(args), 20000),
                  "guard_check": timed(lambda: g.check(ctx, call), 20000)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "policy_check_ab.json"))
    args = ap.parse_args()
    trees = {"head": REPO, "base": Path(args.base).resolve()}
    runs: dict[str, list[dict]] = {"head": [], "base": []}
    for i in range(args.rounds):
        for name in (("base", "head") if i % 2 == 0 else ("head", "base")):
            env = {**os.environ, "PYTHONPATH": str(trees[name] / "src")}
            out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    med = {k: {m: statistics.median(r[m]["median_us"] for r in v) for m in ("evaluate", "guard_check")}
           for k, v in runs.items()}
    result = {"benchmark": "policy_check_ab: Mind2Web-SC policy evaluate / ToolCallGuard.check, head vs base",
              "command": f"python benchmarks/policy_check_ab.py --base {args.base} --rounds {args.rounds}",
              "runs": runs, "median_us": med,
              "ratio_head_over_base": {m: med["head"][m] / med["base"][m] for m in ("evaluate", "guard_check")},
              "note": "per-call wall time in one process, alternating subprocesses; machine shared with other jobs"}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({"median_us": med, "ratio": result["ratio_head_over_base"]}))


if __name__ == "__main__":
    main()
