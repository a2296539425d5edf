"""The cost of not routing by run id: per-step latency of one long run fed to two replicas.

Two ``agentguard serve`` replicas share one audit store (PostgreSQL with ``--db-url``, else one SQLite
file). One client feeds a run of ``--steps`` steps (and a signal every fifth step, so the run's memory has
two kinds of input) either all to replica A (*routed*: what a load balancer hashing the run id does) or
to A and B in turn (*alternating*: no routing, every request lands on the replica that did not decide the
previous one, which must first bring the run up to date from the store). The client waits for each answer
(one agent, one run), so the latency is the service's. Reported: median and p90 per step, the median
of the first and last 50 steps, and the CPU time both replicas used per step (from /proc, for the whole
run and for each third of it: a cost that grows with the run's length shows as a rising CPU per step; the
CPU time is far less sensitive than the latency to other jobs on a shared machine).

With ``--base DIR`` (a worktree of an earlier commit) the same is measured with that tree's service, in
the same run, alternating which goes first.

    python benchmarks/server_replica_routing.py --steps 300 --db-url "$(cat .cache/pg_url)" --base ../before
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
TOKEN = "routing-bench-token-0123"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(src: Path, db: str, state: Path) -> tuple[subprocess.Popen, str]:
    import httpx

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGUARD_")}
    env.update(PYTHONPATH=str(src), AGENTGUARD_TOKEN=TOKEN)
    p = subprocess.Popen([sys.executable, "-m", "agentguard", "serve", "--port", str(port), "--db-url", db,
                          "--state-dir", str(state)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    t0 = time.time()
    while time.time() - t0 < 120:
        if p.poll() is not None:
            raise SystemExit(f"serve exited: {p.stderr.read().decode()[-2000:] if p.stderr else ''}")
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                return p, base
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("serve did not start")


def _stop(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(p.pid, signal.SIGKILL)


def _reset(db: str) -> None:
    if db.startswith("postgresql"):
        sys.path.insert(0, str(REPO / "src"))
        from agentguard.server.testing import reset_postgres

        reset_postgres(db)


def _cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds the server processes used so far (/proc/PID/stat): the replicas' own work,
    far less sensitive to other jobs on a shared machine than the latency is."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _drive(bases: list[str], run: str, steps: int, pids: list[int] | None = None,
           cpu: list[float] | None = None) -> list[float]:
    import httpx

    h = {"Authorization": f"Bearer {TOKEN}"}
    clients = [httpx.Client(base_url=b, headers=h, timeout=60) for b in bases]
    lat = []
    third = max(1, steps // 3)
    try:
        for k in range(steps):
            if pids and cpu is not None and k % third == 0:
                cpu.append(_cpu_s(pids))
            c = clients[k % len(clients)]
            t0 = time.perf_counter()
            if k % 5 == 4:
                r = c.post(f"/v1/runs/{run}/signals", json={"signals": {"score": 0.9}})
            else:
                r = c.post(f"/v1/runs/{run}/steps", json={"state": {"k": k}, "observation": "ok"})
            lat.append((time.perf_counter() - t0) * 1e3)
            if r.status_code != 200:
                raise SystemExit(f"step {k}: {r.status_code} {r.text[:200]}")
    finally:
        for c in clients:
            c.close()
    if pids and cpu is not None:
        cpu.append(_cpu_s(pids))
    return lat


def _summary(lat: list[float], cpu: list[float]) -> dict:
    q = statistics.quantiles(lat, n=10)
    n = len(lat)
    chunks = [n // 3] * 2 + [n - 2 * (n // 3)]
    return {"median_ms": statistics.median(lat), "p90_ms": q[8], "first50_median_ms": statistics.median(lat[:50]),
            "last50_median_ms": statistics.median(lat[-50:]), "total_s": sum(lat) / 1e3,
            "server_cpu_ms_per_step": (cpu[-1] - cpu[0]) * 1e3 / n,
            "server_cpu_ms_per_step_by_third": [(b - a) * 1e3 / k for a, b, k in zip(cpu, cpu[1:], chunks)]}


def measure(src: Path, db: str, steps: int, tmp: Path) -> dict:
    _reset(db)
    a, base_a = _serve(src, db, tmp / "a")
    b, base_b = _serve(src, db, tmp / "b")
    try:
        _drive([base_a, base_b], "warm-up", 10)
        load = list(os.getloadavg())
        cpu_r: list[float] = []
        cpu_a: list[float] = []
        routed = _drive([base_a], "routed", steps, [a.pid, b.pid], cpu_r)
        alternating = _drive([base_a, base_b], "alternating", steps, [a.pid, b.pid], cpu_a)
    finally:
        _stop(a)
        _stop(b)
    r, al = _summary(routed, cpu_r), _summary(alternating, cpu_a)
    return {"loadavg_before": load, "routed": r, "alternating": al,
            "alternating_over_routed_median": statistics.median(alternating) / statistics.median(routed),
            "alternating_over_routed_cpu": al["server_cpu_ms_per_step"] / r["server_cpu_ms_per_step"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--db-url", default=None, help="shared audit store (default: one SQLite file)")
    ap.add_argument("--base", default=None, help="also measure this source tree's service (an earlier commit)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "server_replica_routing.json"))
    args = ap.parse_args()
    trees = {"head": REPO / "src"}
    if args.base:
        trees["base"] = Path(args.base).resolve() / "src"
    rounds = []
    for i in range(args.rounds):
        names = list(trees) if i % 2 == 0 else list(reversed(trees))
        r = {}
        for name in names:
            tmp = Path(tempfile.mkdtemp(prefix=f"agentguard-routing-{name}-"))
            db = args.db_url or f"sqlite:///{tmp / 'shared.sqlite'}"
            r[name] = measure(trees[name], db, args.steps, tmp)
            x = r[name]
            print(f"round {i} {name}: routed {x['routed']['median_ms']:.1f} ms "
                  f"({x['routed']['server_cpu_ms_per_step']:.2f} ms CPU/step), alternating "
                  f"{x['alternating']['median_ms']:.1f} ms ({x['alternating']['server_cpu_ms_per_step']:.2f} ms CPU/step, "
                  f"by third {[round(c, 2) for c in x['alternating']['server_cpu_ms_per_step_by_third']]})",
                  file=sys.stderr, flush=True)
        rounds.append(r)
    result = {
        "benchmark": "per-step latency of one run fed to two replicas: routed by run id vs alternating",
        "command": "python " + " ".join([os.path.relpath(__file__, REPO)] + [
            a if "postgresql" not in a else "<db-url>" for a in sys.argv[1:]]),
        "store": "PostgreSQL" if args.db_url else "SQLite (one file, WAL, synchronous=FULL)",
        "steps": args.steps, "rounds": rounds, "base": args.base,
        "note": "one client waiting for each answer; server, client and other engineers' jobs share 2 cores",
        "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({n: {k: r[n][k] for k in ("routed", "alternating", "alternating_over_routed_median",
                                               "alternating_over_routed_cpu")}
                      for r in rounds[-1:] for n in r}, indent=1))


if __name__ == "__main__":
    main()
