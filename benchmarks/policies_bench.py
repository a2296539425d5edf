"""Reproduce the verified-policy evaluations and write benchmarks/results/policies_<name>.json.

    python benchmarks/policies_bench.py mind2web-sc [--data ../shared/data]
    python benchmarks/policies_bench.py mind2web-sc-split [--seed 0]   # fitted on a seeded half, both halves
    python benchmarks/policies_bench.py asb [--data ../shared/data]
    python benchmarks/policies_bench.py agentdojo
    python benchmarks/policies_bench.py latency [--n 20000]
    python benchmarks/policies_bench.py verify          # real Nagini, warm worker vs one cold `nagini` run

Each result file records the exact command that produced it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


def write(name: str, result: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
              "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
              "cpus": os.cpu_count(), "load_average_1m": os.getloadavg()[0], **result}
    out = RESULTS / f"policies_{name}.json"
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return out


def verify_bench() -> dict:
    from agentguard.policies import NaginiVerifier, find_nagini_venv, shipped_policies

    sys.path.insert(0, str(REPO / "tests"))
    from policies.test_nagini import WRONG_HOTEL  # the deliberately wrong policy of the CI test

    venv = find_nagini_venv()
    files = shipped_policies()
    out: dict = {"nagini_venv": str(venv), "policies": {}}
    t0 = time.perf_counter()
    with NaginiVerifier() as v:
        out["warm_startup_seconds"] = v.startup_seconds
        for f in files:
            r = v.verify(f)
            out["policies"][f.stem] = {"status": r.status, "seconds": r.seconds}
        r = v.verify_source(WRONG_HOTEL, "hotel_age_wrong")
        out["wrong_policy"] = {"status": r.status, "seconds": r.seconds,
                               "counterexample": r.counterexample.to_dict() if r.counterexample else None}
        again = v.verify(files[0])  # steady state: the first file again, JVM and prelude warm
        out["warm_second_pass"] = {"file": files[0].stem, "seconds": again.seconds, "status": again.status}
    out["warm_total_seconds"] = time.perf_counter() - t0
    secs = [p["seconds"] for p in out["policies"].values()]
    out["warm_seconds_per_policy_mean"] = sum(secs) / len(secs)
    # one cold run of the plain Nagini CLI on the first policy, for the side-by-side ratio
    t1 = time.perf_counter()
    cp = subprocess.run([str(venv / "bin" / "nagini"), str(files[0])], capture_output=True, text=True)
    cold = time.perf_counter() - t1
    out["cold_cli"] = {"file": files[0].stem, "wall_seconds": cold, "verified": "Verification successful" in cp.stdout}
    out["cold_over_warm_steady_ratio"] = cold / out["warm_second_pass"]["seconds"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["mind2web-sc", "mind2web-sc-split", "asb", "agentdojo", "latency", "verify"])
    ap.add_argument("--data", default="", help="data folder (default $AGENTGUARD_DATA, else ../shared/data)")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0, help="mind2web-sc-split: seed of the design/held-out split")
    a = ap.parse_args()
    from agentguard.cli.options import data_dir

    a.data = data_dir(a.data)
    if a.what == "mind2web-sc":
        from agentguard.bench.mind2web import evaluate, load_items

        write("mind2web_sc", evaluate(load_items(Path(a.data) / "mind2web_sc")))
    elif a.what == "mind2web-sc-split":
        from agentguard.bench.mind2web import evaluate_split, load_items

        write("mind2web_sc_split", evaluate_split(load_items(Path(a.data) / "mind2web_sc"), seed=a.seed))
    elif a.what == "asb":
        from agentguard.bench.asb import evaluate

        write("asb", evaluate(a.data))
    elif a.what == "agentdojo":
        from agentguard.bench.agentdojo import evaluate

        write("agentdojo", evaluate(progress=lambda m: print(m, file=sys.stderr)))
    elif a.what == "latency":
        from agentguard.bench.policy_latency import measure

        write("latency", measure(a.n))
    else:
        write("verify", verify_bench())


if __name__ == "__main__":
    main()
