"""Where ``POST /v1/check`` spends its CPU: per thread, per request, beside a bare FastAPI endpoint (issue 32).

``benchmarks/server_check_ab.py`` measures the ratio the issue asks for (service throughput over a bare
FastAPI endpoint's). This script says where the difference goes, so a change to the request path can be
aimed and its effect read per thread. One uvicorn worker per server (uvloop, httptools, no access log; the
service runs the shipped rules example with the durable SQLite audit, ``synchronous=FULL``, hash chain on)
is driven by the same ``wrk`` load and bodies as the A/B benchmark; the CPU time each of the server's
threads spent (user + system, from ``/proc/PID/task/TID/stat``) is divided by the requests answered:

- ``main``: the event loop (HTTP parsing, the ASGI layers, the guard decision, the answer);
- ``audit-writer`` / ``audit-checkpoint``: the audit store's writer thread (batched inserts, hash chain,
  fsync) and its WAL checkpointer;
- ``worker-pool``: the AnyIO worker threads (synchronous guards and store reads sent off the loop).

Thread names come from ``py-spy dump`` (the OS names every Python thread ``python``); without py-spy every
thread but the main one is reported as ``other``. With ``--stages`` (needs py-spy) a separate run is sampled
by py-spy and the main thread's samples are attributed to the request path's stages (inclusive share of
the main thread's busy samples, times the main thread's CPU per request of the unprofiled runs: an
estimate, since sampling slows the server and shares are of busy wall time, not CPU).

    python benchmarks/server_cpu_profile.py --rounds 3 --duration 6 --stages
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import server_check_ab as ab  # noqa: E402
import server_load  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

#: the stages of the service's request path, outermost first (function names as py-spy reports them)
STAGES = [
    ("uvicorn: HTTP protocol and ASGI task", "RequestResponseCycle.run_asgi"),
    ("hardening middleware (limits, headers)", "Hardening.__call__"),
    ("gate: credentials and the lean route", "Gate.forward"),
    ("gate: credential check", "Gate.check_access"),
    ("/v1/check handler", "register.<locals>.check_raw"),
    ("parse and validate the body", "Service.parse"),
    ("decide: run lock, state, pipeline, answer", "Service.decide"),
    ("run state from the store / slot", "Service.astate"),
    ("pipeline (guard, strategy, audit)", "Pipeline.adecide"),
    ("guard stack decision", "GuardStack.acheck"),
    ("audit record built and handed to the writer", "Pipeline._awrite"),
    ("audit record fields and input digest", "Service.audit_record"),
    ("answer sent (Starlette response)", "Response.__call__"),
]


def _threads(pid: int) -> dict[str, str]:
    """TID -> thread name, from ``py-spy dump`` ({} without py-spy)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        return {}
    out = subprocess.run([spy, "dump", "-p", str(pid)], capture_output=True, text=True, timeout=60).stdout
    return {m.group(1): m.group(2) for m in re.finditer(r'^Thread (\d+) \(\w+\): "([^"]+)"', out, re.M)}


def _kind(name: str | None, tid: str, pid: int) -> str:
    if tid == str(pid):
        return "main"
    if name is None:
        return "other"
    if name.startswith("agentguard-audit-"):
        return name.removeprefix("agentguard-")
    return "worker-pool" if "AnyIO" in name else "other"


def _task_cpu(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) of each thread of ``pid`` so far, by TID."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[tid] = (int(fields[11]) + int(fields[12])) / tick
    return out


def _command(kind: str, port: int, tmp: Path) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "AGENTGUARD_TOKEN": server_load.TOKEN}
    if kind == "service":
        cfg = tmp / "agentguard.toml"
        cfg.write_text(f'[server]\nsqlite_synchronous = "FULL"\ntool_guards = "{ab.RULES}"\n')
        return [sys.executable, "-m", "agentguard", "serve", "--port", str(port), "--workers", "1",
                "--data-dir", str(tmp / "data"), "--config", str(cfg)], env
    return [sys.executable, "-m", "uvicorn", "--factory", f"server_check_ab:{kind}_app", "--app-dir",
            str(Path(__file__).resolve().parent), "--port", str(port), "--workers", "1", "--loop", "uvloop",
            "--http", "httptools", "--no-access-log", "--log-level", "warning", "--no-server-header",
            "--no-date-header", "--backlog", "2048"], env


def measure(kind: str, args: argparse.Namespace, bodies: list[dict], stages: bool = False) -> dict[str, Any]:
    """One server of ``kind`` under the load: CPU per request by thread kind (or, with ``stages``, the
    py-spy samples of its main thread by stage)."""
    tmp = Path(tempfile.mkdtemp(prefix=f"agentguard-prof-{kind}-"))
    cmd, env = _command(kind, args.port, tmp)
    p = ab.start(cmd, env, tmp, args.port)
    try:
        pid = p.pid  # one worker: uvicorn and ``agentguard serve`` answer in-process
        server_load.run_wrk(args.port, args.warmup, args.connections, 1, bodies, tmp)
        names = _threads(pid)
        if stages:
            return _stages(pid, args, bodies, tmp)
        cpu0 = _task_cpu(pid)
        res = server_load.run_wrk(args.port, args.duration, args.connections, 1, bodies, tmp)
        cpu1 = _task_cpu(pid)
        names = {**names, **_threads(pid)}
    finally:
        ab.stop(p)
        shutil.rmtree(tmp, ignore_errors=True)
    n = max(1, res["requests"])
    by: dict[str, float] = collections.defaultdict(float)
    for tid, t in cpu1.items():
        by[_kind(names.get(tid), tid, pid)] += (t - cpu0.get(tid, 0.0)) * 1e6 / n
    return {"kind": kind, "rps": res["rps"], "requests": res["requests"], "errors": sum(res["errors"].values()),
            "cpu_us_per_request": {k: round(v, 1) for k, v in sorted(by.items())},
            "cpu_us_per_request_total": round(sum(by.values()), 1), "thread_names_known": bool(names)}


def _stages(pid: int, args: argparse.Namespace, bodies: list[dict], tmp: Path) -> dict[str, Any]:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    raw = tmp / "spy.txt"
    spy_p = subprocess.Popen([spy, "record", "-p", str(pid), "-d", str(args.duration), "-r", "200", "-f", "raw", "--threads",
                              "-o", str(raw)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server_load.run_wrk(args.port, args.duration, args.connections, 1, bodies, tmp)
    spy_p.wait(timeout=120)
    main_total, incl = 0, collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if not frames[0].startswith(f"thread ({pid})"):
            continue
        n = int(count)
        main_total += n
        names = {re.sub(r" \(.*$", "", f) for f in frames[1:]}
        for label, fn in STAGES:
            if fn in names:
                incl[label] += n
    return {"main_samples": main_total, "share_of_main": {label: round(incl[label] / max(1, main_total), 4)
                                                          for label, _ in STAGES}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--port", type=int, default=8896, help="a port no other load test on the machine uses")
    ap.add_argument("--mix", choices=["shell", "issue"], default="issue")
    ap.add_argument("--stages", action="store_true", help="also sample the service's main thread with py-spy")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "server_cpu_profile.json"))
    args = ap.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    bodies = ab.request_mix(args.mix, 64)
    kinds = ["service", "bare", "raw"]
    rounds = []
    for i in range(args.rounds):
        order = kinds[i % 3:] + kinds[:i % 3]
        r = {k: measure(k, args, bodies) for k in order}
        rounds.append(r)
        print(f"round {i}: " + ", ".join(f"{k} {r[k]['cpu_us_per_request_total']:.0f} us/request "
                                          f"{r[k]['cpu_us_per_request']}" for k in kinds), file=sys.stderr, flush=True)
    med: dict[str, Any] = {}
    for k in kinds:
        threads = sorted({t for r in rounds for t in r[k]["cpu_us_per_request"]})
        med[k] = {"total": statistics.median(r[k]["cpu_us_per_request_total"] for r in rounds),
                  "by_thread": {t: statistics.median(r[k]["cpu_us_per_request"].get(t, 0.0) for r in rounds)
                                for t in threads},
                  "rps": statistics.median(r[k]["rps"] for r in rounds)}
    result: dict[str, Any] = {
        "benchmark": "CPU per request of POST /v1/check by server thread: service (rules example, durable SQLite "
                     "audit, hash chain) vs bare FastAPI vs a plain ASGI callable, one uvicorn worker each",
        "command": "python " + " ".join([os.path.relpath(__file__, REPO)] + sys.argv[1:]),
        "label": args.label, "mix": args.mix, "connections": args.connections, "duration_s": args.duration,
        "median_cpu_us_per_request": med,
        "cpu_ratio_bare_over_service": med["bare"]["total"] / med["service"]["total"],
        "budget_for_0_7_us": med["bare"]["total"] / 0.7,
        "rounds": rounds, "conditions": server_load.conditions(),
        "note": "CPU per request is what the code costs on these cores; throughput also swings with other jobs",
        "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if args.stages:
        st = measure("service", args, bodies, stages=True)
        main_us = med["service"]["by_thread"].get("main", 0.0)
        result["stages"] = {"main_samples": st["main_samples"], "share_of_main": st["share_of_main"],
                            "estimated_us_per_request": {k: round(v * main_us, 1)
                                                         for k, v in st["share_of_main"].items()},
                            "how": "inclusive share of the main thread's busy py-spy samples (200 Hz, a separate "
                                   "run) times the main thread's median CPU per request of the unprofiled rounds"}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("median_cpu_us_per_request", "cpu_ratio_bare_over_service",
                                            "budget_for_0_7_us")}, indent=2))


if __name__ == "__main__":
    main()
