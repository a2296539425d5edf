"""A/B: SQLite writers of several worker processes queueing on a kernel file lock (default) versus
SQLite's own busy handler (AGENTGUARD_SQLITE_FLOCK=0), side by side, alternating, same load.

    python benchmarks/server_lock_ab.py --pairs 3 --duration 10
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "server_lock_ab.json"))
    args = ap.parse_args()
    runs: dict[str, list[dict]] = {"flock": [], "busy_handler": []}
    for i in range(args.pairs):
        for name, flag in (("busy_handler", "0"), ("flock", "1")):
            out = Path(tempfile.mkdtemp()) / "r.json"
            subprocess.run([sys.executable, str(REPO / "benchmarks" / "server_load.py"), "--no-verify",
                            "--duration", str(args.duration), "--warmup", "2", "--connections", str(args.connections),
                            "--out", str(out)], env={**os.environ, "AGENTGUARD_SQLITE_FLOCK": flag}, check=True,
                           capture_output=True)
            r = json.loads(out.read_text())
            runs[name].append({"rps": r["rps"], "p50_ms": r["latency_ms"]["p50"], "p99_ms": r["latency_ms"]["p99"],
                               "max_ms": r["latency_ms"]["max"], "errors": sum(r["errors"].values()),
                               "loadavg": r["conditions_before"].get("loadavg_1_5_15")})
            print(name, runs[name][-1], file=sys.stderr)

    def med(name: str, key: str) -> float:
        xs = sorted(x[key] for x in runs[name])
        return xs[len(xs) // 2]

    summary = {k: {m: med(k, m) for m in ("rps", "p50_ms", "p99_ms", "max_ms")} for k in runs}
    result = {
        "benchmark": "server_lock_ab: SQLite write lock across 2 uvicorn workers, flock vs busy handler",
        "command": "python " + " ".join([str(Path(__file__).relative_to(REPO))] + sys.argv[1:]),
        "runs": runs, "median": summary,
        "ratio_flock_over_busy": {"rps": summary["flock"]["rps"] / summary["busy_handler"]["rps"],
                                  "p99": summary["flock"]["p99_ms"] / summary["busy_handler"]["p99_ms"]},
        "note": "alternating runs on the same shared 2-core machine (load averages recorded); "
                "verified Mind2Web-SC policy, wrk c=%d, 2 workers, SQLite WAL synchronous=FULL" % args.connections,
        "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["median"], indent=2))


if __name__ == "__main__":
    main()
