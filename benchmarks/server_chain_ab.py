"""The cost of the tamper-evident audit chain (issue 28): throughput of ``POST /v1/check`` with the hash
chain and signed checkpoints on versus ``--no-chain``, side by side in one run (alternating pairs, same
load, same guard file, fresh SQLite store each), and the verifier's speed (records per second) on the
store the last chain-on run wrote.

Each side is a fresh ``agentguard serve`` on loopback driven by wrk (``benchmarks/server_load.py``'s
request mix and generator). Target: the chain costs at most 10% of the throughput.

    PYTHONPATH=src python benchmarks/server_chain_ab.py --pairs 3 --duration 8
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
import server_load as sl  # noqa: E402


def group_cpu_s(pgid: int) -> float:
    """User + system CPU seconds of every live process in the process group ``pgid`` (the server)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the name: state, ppid, pgrp, ..., utime (12), stime (13)
            total += int(fields[11]) + int(fields[12])
    return total / tick


def one(chain: bool, args: argparse.Namespace, tmp: Path) -> dict:
    guards = REPO / "src" / "agentguard" / "server" / "examples" / "mind2web_sc.toml"
    state = tmp / ("on" if chain else "off") / str(time.time_ns())
    state.mkdir(parents=True)
    (state / "s.toml").write_text(f'[server]\ntool_guards = "{guards}"\ncheckpoint_every = {args.checkpoint_every}\n')
    # the server imports this checkout's package (an installed one may be another tree)
    env = {**os.environ, "AGENTGUARD_TOKEN": sl.TOKEN, "AGENTGUARD_STATE_DIR": str(state),
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    cmd = [sys.executable, "-m", "agentguard", "serve", "--port", str(args.port), "--workers", str(args.workers),
           "--config", str(state / "s.toml"), *([] if chain else ["--no-chain"])]
    server = subprocess.Popen(cmd, env=env, cwd=state, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        sl.wait_health(args.port)
        bodies = sl.request_mix()
        sl.run_wrk(args.port, 2, args.connections, 1, bodies, state)  # warm-up
        cpu0 = group_cpu_s(server.pid)
        res = sl.run_wrk(args.port, args.duration, args.connections, 1, bodies, state)
        res["server_cpu_s"] = group_cpu_s(server.pid) - cpu0
        res["server_cpu_ms_per_request"] = 1000 * res["server_cpu_s"] / max(1, res["requests"])
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
    res["chain"] = chain
    res["db"] = str(state / "audit.sqlite")
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--checkpoint-every", type=int, default=1000)
    ap.add_argument("--port", type=int, default=8897)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "server_chain_ab.json"))
    args = ap.parse_args()
    runs: list[dict] = []
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        for i in range(args.pairs):
            for chain in ((False, True) if i % 2 == 0 else (True, False)):
                r = one(chain, args, tmp)
                sl.progress(f"pair {i + 1}: chain {'on ' if chain else 'off'} {r['rps']:.0f} req/s")
                runs.append(r)
        from agentguard.server.audit import make_engine
        from agentguard.server.chain import verify

        last_on = [r for r in runs if r["chain"]][-1]
        eng = make_engine(f"sqlite:///{last_on['db']}")
        rep = verify(eng)
        eng.dispose()
    on = [r["rps"] for r in runs if r["chain"]]
    off = [r["rps"] for r in runs if not r["chain"]]
    pair_ratios = [a / b for a, b in zip(on, off)]
    out = {
        "benchmark": "server_chain_ab: POST /v1/check throughput, audit hash chain on vs off, alternating pairs",
        "command": "PYTHONPATH=src python benchmarks/server_chain_ab.py " + " ".join(sys.argv[1:]),
        "conditions": sl.conditions(),
        "workers": args.workers, "connections": args.connections, "duration_s": args.duration,
        "checkpoint_every": args.checkpoint_every,
        "rps_chain_on": on, "rps_chain_off": off,
        "median_on_rps": statistics.median(on), "median_off_rps": statistics.median(off),
        "ratio_on_over_off": round(statistics.median(on) / statistics.median(off), 4),
        "pair_ratios": [round(x, 4) for x in pair_ratios],
        "median_pair_ratio": round(statistics.median(pair_ratios), 4),
        # the server's own CPU per answered request: what the chain costs, insensitive to other load on the machine
        "cpu_ms_per_request_on": [round(r["server_cpu_ms_per_request"], 4) for r in runs if r["chain"]],
        "cpu_ms_per_request_off": [round(r["server_cpu_ms_per_request"], 4) for r in runs if not r["chain"]],
        "cpu_cost_percent": round(100 * statistics.median(r["server_cpu_ms_per_request"] for r in runs if r["chain"])
                                  / statistics.median(r["server_cpu_ms_per_request"] for r in runs if not r["chain"])
                                  - 100, 2),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                 text=True).stdout.strip(),
        "cost_percent": round(100 * (1 - statistics.median(on) / statistics.median(off)), 2),
        "target_cost_percent_at_most": 10,
        "errors": {"on": [r.get("errors") for r in runs if r["chain"]], "off": [r.get("errors") for r in runs if not r["chain"]]},
        "verify": {**{k: v for k, v in rep.to_dict().items() if k != "problems"}, "problems": rep.problems[:5]},
        "verify_records_per_s": rep.to_dict()["records_per_s"],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: out[k] for k in ("median_on_rps", "median_off_rps", "ratio_on_over_off", "cost_percent",
                                          "median_pair_ratio", "cpu_cost_percent", "verify_records_per_s")}))


if __name__ == "__main__":
    main()
