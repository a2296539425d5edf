"""AgentDojo replay under no guard, the previous environment-grounded guard and the provenance guard, per
benchmark version the installed package ships; writes benchmarks/results/policies_agentdojo_<version>.json.

    python benchmarks/policies_agentdojo_versions.py                 # every version
    python benchmarks/policies_agentdojo_versions.py --version v1.2  # one version

Design/held-out halves: see agentguard.bench.agentdojo (the intent lexicon was fitted on the v1 design half).
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
    from agentguard.bench.agentdojo import evaluate, versions

    ap = argparse.ArgumentParser()
    ap.add_argument("--version", action="append")
    args = ap.parse_args()
    for v in args.version or versions():
        res = evaluate(None, version=v, progress=lambda m: print(m, file=sys.stderr, flush=True))
        res = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
               "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
               "cpus": os.cpu_count(), "load_average_1m": os.getloadavg()[0], **res}
        out = RESULTS / f"policies_agentdojo_{v.replace('.', '_')}.json"
        out.write_text(json.dumps(res, indent=1, default=str) + "\n")
        print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
