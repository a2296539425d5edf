"""The provenance guard on Agent Security Bench's tools, a tool set it was not designed on (issue 27):
agentguard.bench.provenance_asb, both settings (no ASB declaration; ASB's normal tools declared from their
descriptions). Writes benchmarks/results/policies_provenance_asb.json.

    python benchmarks/policies_provenance_asb.py [--data ../shared/data]
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
    ap.add_argument("--data", default=os.environ.get("AGENTGUARD_DATA", str(REPO.parent / "shared" / "data")))
    a = ap.parse_args()
    from agentguard.bench.provenance_asb import evaluate

    t0 = time.perf_counter()
    res = evaluate(a.data)
    out = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
           "load_average_1m": os.getloadavg()[0], "seconds": time.perf_counter() - t0, **res}
    p = REPO / "benchmarks/results/policies_provenance_asb.json"
    p.write_text(json.dumps(out, indent=1) + "\n")
    for k in ("generic", "declared"):
        print(f"{k}: ASR {res[k]['ASR']:.3f}, TSR {res[k]['TSR']:.3f} over {res[k]['runs']} runs", file=sys.stderr)


if __name__ == "__main__":
    main()
