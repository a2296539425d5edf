"""Composition on AgentDojo: the Pro2Guard proactive guard (agentguard.predictive) over predicates of the call
history, learned from the no-guard replays of the design half, scored on the held-out half; writes
benchmarks/results/policies_agentdojo_proactive.json.

    python benchmarks/policies_agentdojo_proactive.py                 # AgentDojo v1
    python benchmarks/policies_agentdojo_proactive.py --version v1.2.2

See agentguard.bench.agentdojo_proactive for the predicates, the unsafe label and the threshold rule.
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
RESULTS = REPO / "benchmarks" / "results"


def main() -> None:
    from agentguard.bench.agentdojo_proactive import evaluate

    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="v1")
    args = ap.parse_args()
    res = evaluate(args.version, progress=lambda m: print(m, file=sys.stderr, flush=True))
    res = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
           "cpus": os.cpu_count(), "load_average_1m": os.getloadavg()[0], **res}
    suffix = "" if args.version == "v1" else "_" + args.version.replace(".", "_")
    out = RESULTS / f"policies_agentdojo_proactive{suffix}.json"
    out.write_text(json.dumps(res, indent=1, default=str) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
