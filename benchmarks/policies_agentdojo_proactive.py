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


def _cross(res: dict) -> dict:
    """For each pair the provenance guard let succeed (policies_agentdojo_<version>.json), whether the
    proactive guard warned before its injected call."""
    f = RESULTS / f"policies_agentdojo_{res['agentdojo_version'].replace('.', '_')}.json"
    if not f.exists():
        return {"source": None}
    warned = {(r["suite"], r["user_task"], r["injection_task"]): r["warned"] for r in res["runs"]}
    out: dict = {"source": f.name}
    for half in ("design", "heldout"):
        out[half] = [{"suite": s, **a, "proactive_warned_before": warned.get((s, a["user_task"], a["injection_task"]))}
                     for s, r in json.loads(f.read_text())["suites"].items()
                     for a in r["provenance"][half]["attack_successes"]]
    return out


def main() -> None:
    from agentguard.bench.agentdojo_proactive import evaluate

    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="v1")
    args = ap.parse_args()
    res = evaluate(args.version, progress=lambda m: print(m, file=sys.stderr, flush=True))
    res = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
           "cpus": os.cpu_count(), "load_average_1m": os.getloadavg()[0], **res}
    res["provenance_attack_successes"] = _cross(res)
    suffix = "" if args.version == "v1" else "_" + args.version.replace(".", "_")
    out = RESULTS / f"policies_agentdojo_proactive{suffix}.json"
    out.write_text(json.dumps(res, indent=1, default=str) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
