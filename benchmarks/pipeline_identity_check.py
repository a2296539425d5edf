"""Cost of the unchanged-proposal check (core/replacement.py: the proposal's call key before and after each
decision) on ``Pipeline.decide``, with it on and off in one process, alternating rounds.

    PYTHONPATH=src python benchmarks/pipeline_identity_check.py [--calls 20000] [--rounds 6]
        [--out benchmarks/results/pipeline_identity_check.json]

"off" replaces ``replacement._identity`` by a function answering None (no check), "on" is the code as shipped.
The guard is the bundled rules example's stack shape in miniature (a ToolRuleGuard with a deny list and one
argument rule); the call has three small arguments. Reports the median microseconds per decision of each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from agentguard.core import Pipeline, ToolCall
from agentguard.core import replacement
from agentguard.policies.rules import ToolRuleGuard


def per_call_us(pipe: Pipeline, calls: int) -> float:
    call = ToolCall("read_file", {"path": "/tmp/a", "mode": "r", "opts": {"depth": 1}}, "c1")
    t0 = time.perf_counter()
    for _ in range(calls):
        pipe.decide("r", call)
    return (time.perf_counter() - t0) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--out", default="benchmarks/results/pipeline_identity_check.json")
    a = ap.parse_args()
    guard = ToolRuleGuard(deny=["delete_*"], arguments=[{"tool": "read_file", "arg": "path", "forbid": "^/etc"}])
    pipe = Pipeline(guard)
    shipped = replacement._identity
    res: dict[str, list[float]] = {"on": [], "off": []}
    per_call_us(pipe, 2000)  # warm up
    for r in range(a.rounds):
        for mode in (("on", "off") if r % 2 == 0 else ("off", "on")):
            replacement._identity = shipped if mode == "on" else (lambda p: None)  # type: ignore[assignment]
            res[mode].append(per_call_us(pipe, a.calls))
    replacement._identity = shipped  # type: ignore[assignment]
    med = {k: statistics.median(v) for k, v in res.items()}
    out = {"command": "PYTHONPATH=src python " + " ".join(sys.argv), "median_us_per_decision": med,
           "added_us": med["on"] - med["off"], "rounds_us": res}
    with open(a.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(json.dumps(out["median_us_per_decision"]), "added", round(out["added_us"], 2), "us")


if __name__ == "__main__":
    main()
