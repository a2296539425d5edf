"""A/B throughput of the guard service: this tree's code versus a base tree (main before issue 13's
fail-closed core and bounded policy language), side by side, alternating, same load, same guard file.

Each run is ``benchmarks/server_load.py`` (a fresh ``agentguard serve`` on loopback, wrk or an asyncio
pool driving ``POST /v1/check``); the only difference between A and B is ``PYTHONPATH`` (which source tree
the server imports). The guard file is this tree's ``mind2web_sc.toml`` for both sides.

    git worktree add --detach ../13a-base <main commit>
    python benchmarks/server_load_ab.py --base ../13a-base --pairs 3 --duration 10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _git(tree: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="a worktree of the base commit (its src/ is imported for B)")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--port", type=int, default=8893, help="a port no other load test on the machine uses")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "server_load_ab.json"))
    args = ap.parse_args()
    base = Path(args.base).resolve()
    trees = {"head": REPO, "base": base}
    guards = REPO / "src" / "agentguard" / "server" / "examples" / "mind2web_sc.toml"
    runs: dict[str, list[dict]] = {"head": [], "base": []}
    for i in range(args.pairs):
        order = ("base", "head") if i % 2 == 0 else ("head", "base")
        for name in order:
            out = Path(tempfile.mkdtemp()) / "r.json"
            env = {**os.environ, "PYTHONPATH": str(trees[name] / "src")}
            subprocess.run([sys.executable, str(REPO / "benchmarks" / "server_load.py"), "--no-verify",
                            "--duration", str(args.duration), "--warmup", "2", "--connections", str(args.connections),
                            "--workers", str(args.workers), "--port", str(args.port), "--guards", str(guards), "--out", str(out)],
                           env=env, check=True, capture_output=True)
            r = json.loads(out.read_text())
            runs[name].append({"rps": r["rps"], "p50_ms": r["latency_ms"]["p50"], "p99_ms": r["latency_ms"]["p99"],
                               "errors": sum(r["errors"].values()), "decisions": r.get("decisions_by_outcome"),
                               "loadavg": r["conditions_before"].get("loadavg_1_5_15")})
            print(name, runs[name][-1], file=sys.stderr, flush=True)
    med = {k: statistics.median(x["rps"] for x in v) for k, v in runs.items()}
    result = {
        "benchmark": "server_load_ab: POST /v1/check throughput, this tree vs base tree, alternating pairs",
        "command": f"python benchmarks/server_load_ab.py --base {args.base} --pairs {args.pairs} "
                   f"--duration {args.duration} --connections {args.connections} --workers {args.workers} "
                   f"--port {args.port}",
        "head": {"tree": str(REPO), "commit": _git(REPO)}, "base": {"tree": str(base), "commit": _git(base)},
        "guard_file": str(guards.relative_to(REPO)),
        "runs": runs,
        "median_rps": med,
        "ratio_head_over_base": med["head"] / med["base"],
        "within_10_percent": med["head"] >= 0.9 * med["base"],
        "note": "server and load generator share the machine's cores with other jobs; pairs alternate the order "
                "so drift in machine load affects both sides alike",
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({"median_rps": med, "ratio": result["ratio_head_over_base"]}))


if __name__ == "__main__":
    main()
