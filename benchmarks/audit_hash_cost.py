"""CPU per call of the audit writer's per-record Python work (issue 32): :func:`agentguard.server.chain.record_hash`
by orjson (its fast path) and by the standard encoder alone (the function before it: orjson's ``Fragment`` taken
away), on a row shaped like the service's; and :meth:`agentguard.server.runslots.RunSlots.write`.

    python benchmarks/audit_hash_cost.py --n 20000 --rounds 3 --out benchmarks/results/audit_hash_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from agentguard.server import chain
from agentguard.server.runslots import RunSlots

ROW = {"decision_id": "0123456789abcdef0000000000000abc", "ts": 1795839427.5398946, "run_id": "load-3",
       "kind": "check", "guard": "rules", "input_digest": "ab" * 32, "decision": "ALLOW",
       "reason": "tool allowed by rule 3", "numbers": '{"cost":1.5}', "guard_version": "v1", "principal": "token-1",
       "seq": 123456, "chain_hash": None, "run_hash": None, "shadow": None}


def per_call_us(fn: Callable[[], Any], n: int) -> float:
    t = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - t) / n * 1e6


def measure(n: int) -> dict[str, float]:
    out = {"record_hash_us": per_call_us(lambda: chain.record_hash(ROW), n)}
    fragment, chain._Fragment = getattr(chain, "_Fragment", None), None
    try:
        out["record_hash_encoder_only_us"] = per_call_us(lambda: chain.record_hash(ROW), n)
    finally:
        chain._Fragment = fragment
    with tempfile.TemporaryDirectory() as tmp:
        slots = RunSlots(os.path.join(tmp, "runstate"))
        i = iter(range(10**9))
        out["runslots_write_us"] = per_call_us(lambda: slots.write("load-3", next(i), "check", 1.5, True), n)
        slots.close()
    return {k: round(v, 2) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000, help="calls per measure")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    rounds = [measure(a.n) for _ in range(a.rounds)]
    res = {"benchmark": "CPU per call of the audit writer's per-record Python work (record hash, run slot write)",
           "command": "python " + " ".join([f"benchmarks/{Path(__file__).name}", *sys.argv[1:]]),
           "label": a.label, "n": a.n, "median_us": {k: statistics.median(r[k] for r in rounds) for k in rounds[0]},
           "rounds": rounds, "loadavg_1_5_15": list(os.getloadavg()), "nproc": os.cpu_count(),
           "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(json.dumps(res["median_us"]))
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
