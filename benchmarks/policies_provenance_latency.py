"""Latency of the full provenance-guarded check (label propagation + verified policy) per call on AgentDojo's
own calls: every user task of the four suites plus the first --pairs injection pairs per suite, replayed
through AgentDojo's runtime (agentguard.bench.provenance_latency). Target: median under 1 ms per call.

    python benchmarks/policies_provenance_latency.py [--version v1] [--pairs 60]

Writes benchmarks/results/policies_provenance_latency.json with the command that made it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="v1")
    ap.add_argument("--pairs", type=int, default=60, help="injection pairs per suite (-1: all)")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/policies_provenance_latency.json"))
    a = ap.parse_args()
    from agentguard.bench.provenance_latency import measure

    t0 = time.perf_counter()
    res = measure(version=a.version, max_pairs=None if a.pairs < 0 else a.pairs,
                  progress=lambda m: print(m, file=sys.stderr))
    res = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
           "cpus": os.cpu_count(), "seconds": time.perf_counter() - t0, **res}
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    a_ = res["all"]["full"]
    print(f"full check per call: median {a_['median_us']:.1f} us, p99 {a_['p99_us']:.1f} us over {a_['n']} calls; "
          f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
