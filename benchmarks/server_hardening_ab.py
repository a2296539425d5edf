"""A/B: the service before and after the hardening of issue 13 (connection limits, header and body
timeouts, in-flight limit, security headers, strict JSON with duplicate-key refusal), side by side,
alternating, same load (``benchmarks/server_load.py``: verified Mind2Web-SC policy, 2 workers, wrk).

The baseline is the source tree of git revision ``--base`` exported to a temporary folder; the
candidate is this checkout. Each run starts its own ``agentguard serve`` from the tree under test.

    python benchmarks/server_hardening_ab.py --pairs 3 --duration 10
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


def export(rev: str) -> Path:
    """The ``src`` folder of ``rev``, exported (git archive) to a temporary folder."""
    d = Path(tempfile.mkdtemp(prefix="ag-base-"))
    arch = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(d)], input=arch, check=True)
    return d / "src"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="5e889fb", help="git revision of the baseline (before the hardening)")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "server_hardening_ab.json"))
    args = ap.parse_args()
    trees = {"baseline": export(args.base), "hardened": REPO / "src"}
    runs: dict[str, list[dict]] = {k: [] for k in trees}
    for i in range(args.pairs):
        for name in (("baseline", "hardened") if i % 2 == 0 else ("hardened", "baseline")):
            out = Path(tempfile.mkdtemp()) / "r.json"
            env = {**os.environ, "PYTHONPATH": str(trees[name])}
            subprocess.run([sys.executable, str(REPO / "benchmarks" / "server_load.py"), "--no-verify",
                            "--duration", str(args.duration), "--warmup", "2", "--connections", str(args.connections),
                            "--out", str(out)], env=env, check=True, capture_output=True)
            r = json.loads(out.read_text())
            runs[name].append({"rps": r["rps"], "p50_ms": r["latency_ms"]["p50"], "p99_ms": r["latency_ms"]["p99"],
                               "errors": sum(r["errors"].values()),
                               "loadavg": r["conditions_before"].get("loadavg_1_5_15")})
            print(name, runs[name][-1], file=sys.stderr)

    def med(name: str, key: str) -> float:
        xs = sorted(x[key] for x in runs[name])
        return xs[len(xs) // 2]

    summary = {k: {m: med(k, m) for m in ("rps", "p50_ms", "p99_ms")} for k in runs}
    result = {
        "benchmark": "server_hardening_ab: POST /v1/check throughput before/after the service hardening",
        "command": "python " + " ".join([str(Path(__file__).relative_to(REPO))] + sys.argv[1:]),
        "base_revision": args.base, "runs": runs, "median": summary,
        "ratio_hardened_over_baseline": {"rps": summary["hardened"]["rps"] / summary["baseline"]["rps"],
                                         "p99": summary["hardened"]["p99_ms"] / summary["baseline"]["p99_ms"]},
        "note": "alternating runs on the same shared 2-core machine (load averages recorded); verified "
                "Mind2Web-SC policy, wrk c=%d, 2 workers, SQLite WAL synchronous=FULL" % args.connections,
        "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({"median": summary, "ratio": result["ratio_hardened_over_baseline"]}, indent=2))


if __name__ == "__main__":
    main()
