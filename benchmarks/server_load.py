"""Load test of the guard service: sustained tool-call checks on loopback, bounded in time.

Starts ``agentguard serve`` (fresh SQLite audit store, WAL, synchronous=FULL, the chosen guard) in a
subprocess, drives ``POST /v1/check`` from a separate load-generator process (``wrk`` from Debian
when installed, else an asyncio client pool), then verifies that every answered request is in the
audit store and that no request failed. Writes JSON with the throughput, latency percentiles,
errors, machine conditions and the exact command.

    python benchmarks/server_load.py --duration 30 --connections 32 --workers 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOKEN = "load-test-token-0123456789"

LUA = r"""
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %(token)s"
local bodies = %(bodies)s
local i = 0
request = function()
  i = i + 1
  return wrk.format(nil, nil, nil, bodies[(i %% #bodies) + 1])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "JSON{\"requests\":%%d,\"duration_us\":%%d,\"bytes\":%%d,\"connect_errors\":%%d,\"read_errors\":%%d," ..
    "\"write_errors\":%%d,\"status_errors\":%%d,\"timeouts\":%%d,\"lat_mean_us\":%%f,\"lat_max_us\":%%d," ..
    "\"p50_us\":%%d,\"p90_us\":%%d,\"p99_us\":%%d,\"p999_us\":%%d}\n",
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.max, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9)))
end
"""


def progress(msg: str) -> None:
    print(f"[server_load {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def conditions() -> dict:
    info = {"nproc": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    try:
        info["loadavg_1_5_15"] = list(os.getloadavg())
    except OSError:
        pass
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return info


def wait_health(port: int, timeout: float = 60.0) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("server did not become healthy")


def run_wrk(port: int, duration: int, connections: int, threads: int, bodies: list[dict], tmp: Path) -> dict:
    lua_bodies = "{" + ", ".join(json.dumps(json.dumps(b)) for b in bodies) + "}"
    script = tmp / "check.lua"
    script.write_text(LUA % {"token": TOKEN, "bodies": lua_bodies})
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--timeout", "5s", "-s", str(script),
           f"http://127.0.0.1:{port}/v1/check"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m = re.search(r"^JSON(\{.*\})$", out, re.M)
    if not m:
        raise SystemExit("could not parse wrk output:\n" + out)
    r = json.loads(m.group(1))
    secs = r["duration_us"] / 1e6
    return {
        "generator": "wrk " + " ".join(cmd[1:-1]).replace(str(script), "check.lua"),
        "requests": r["requests"], "seconds": secs, "rps": r["requests"] / secs,
        "latency_ms": {"mean": r["lat_mean_us"] / 1e3, "p50": r["p50_us"] / 1e3, "p90": r["p90_us"] / 1e3,
                       "p99": r["p99_us"] / 1e3, "p99.9": r["p999_us"] / 1e3, "max": r["lat_max_us"] / 1e3},
        "errors": {k: r[k] for k in ("connect_errors", "read_errors", "write_errors", "status_errors", "timeouts")},
    }


async def _pool(port: int, duration: int, connections: int, bodies: list[dict]) -> dict:
    """Fallback generator: keep-alive HTTP/1.1 over asyncio streams, one coroutine per connection."""
    payloads = []
    for b in bodies:
        data = json.dumps(b).encode()
        payloads.append(
            b"POST /v1/check HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    lat: list[float] = []
    errors = {"status_errors": 0, "read_errors": 0}
    stop = time.perf_counter() + duration

    async def conn(k: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        i = k
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            writer.write(payloads[i % len(payloads)])
            i += 1
            try:
                head = await reader.readuntil(b"\r\n\r\n")
                n = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
                await reader.readexactly(n)
            except Exception:
                errors["read_errors"] += 1
                return
            if not head.startswith(b"HTTP/1.1 200"):
                errors["status_errors"] += 1
            lat.append(time.perf_counter() - t0)
        writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(conn(k) for k in range(connections)))
    secs = time.perf_counter() - t0
    lat.sort()

    def q(p: float) -> float:
        return lat[min(len(lat) - 1, int(p / 100 * len(lat)))] * 1e3 if lat else float("nan")

    return {"generator": f"asyncio pool c={connections}", "requests": len(lat), "seconds": secs,
            "rps": len(lat) / secs, "latency_ms": {"mean": sum(lat) / max(1, len(lat)) * 1e3, "p50": q(50),
                                                   "p90": q(90), "p99": q(99), "p99.9": q(99.9),
                                                   "max": lat[-1] * 1e3 if lat else None},
            "errors": errors}


def run_pool(port: int, duration: int, connections: int, bodies: list[dict]) -> dict:
    # In its own process, so the generator does not share an interpreter with anything else.
    code = ("import asyncio, json, sys; sys.path.insert(0, %r); import server_load as s; "
            "print(json.dumps(asyncio.run(s._pool(%d, %d, %d, %r))))"
            % (str(Path(__file__).parent), port, duration, connections, bodies))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=int, default=30, help="seconds of sustained load")
    ap.add_argument("--warmup", type=int, default=3, help="seconds of load before measuring")
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1, help="wrk threads")
    ap.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    ap.add_argument("--port", type=int, default=8793)
    ap.add_argument("--generator", choices=["auto", "wrk", "pool"], default="auto")
    ap.add_argument("--guards", default=str(REPO / "src/agentguard/server/examples/mind2web_sc.toml"),
                    help="guard-stack file for /v1/check (default: the verified Mind2Web-SC policy)")
    ap.add_argument("--no-verify", action="store_true", help="do not re-prove the policy with Nagini first")
    ap.add_argument("--sync", default="FULL", choices=["FULL", "NORMAL"], help="SQLite synchronous level")
    ap.add_argument("--db-url", default=None, help="audit store URL (default: a fresh SQLite file); for "
                    "PostgreSQL, e.g. $(cat .cache/pg_url); its decisions table is emptied first")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "server_load.json"))
    args = ap.parse_args()

    gen = args.generator
    if gen == "auto":
        gen = "wrk" if shutil.which("wrk") else "pool"
    tmp = Path(tempfile.mkdtemp(prefix="agentguard-load-"))
    cfg = tmp / "agentguard.toml"
    guards, verification = Path(args.guards).resolve(), {"nagini": "skipped (--no-verify)"}
    if not args.no_verify:
        progress("proving the policy with Nagini (JVM start-up takes a minute or two) ...")
        guards, verification = verify_policy(guards, tmp)
        progress(f"policy {verification.get('policy')}: {verification.get('nagini')}")
    lines = ["[server]", f'sqlite_synchronous = "{args.sync}"', f'tool_guards = "{guards}"']
    if args.db_url:
        lines.append(f'db_url = "{args.db_url}"')
        import sqlalchemy as sa

        eng = sa.create_engine(args.db_url)
        with eng.begin() as c:
            c.execute(sa.text("DROP TABLE IF EXISTS steps"))
            c.execute(sa.text("DROP TABLE IF EXISTS decisions"))
            c.execute(sa.text("DROP TABLE IF EXISTS alembic_version"))
        eng.dispose()
    cfg.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "AGENTGUARD_TOKEN": TOKEN}
    cmd = [sys.executable, "-m", "agentguard", "serve", "--port", str(args.port), "--workers", str(args.workers),
           "--data-dir", str(tmp / "data"), "--config", str(cfg)]
    before = conditions()
    server = subprocess.Popen(cmd, env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        progress(f"starting agentguard serve --workers {args.workers} ...")
        wait_health(args.port)
        bodies = request_mix()
        progress(f"warm-up {args.warmup}s, then {args.duration}s of load with {gen} c={args.connections} ...")
        if args.warmup:
            (run_wrk(args.port, args.warmup, args.connections, args.threads, bodies, tmp) if gen == "wrk"
             else run_pool(args.port, args.warmup, args.connections, bodies))
        import sqlalchemy as sa

        url = args.db_url or f"sqlite:///{tmp / 'data' / 'audit.sqlite'}"
        eng = sa.create_engine(url)
        db = eng.connect()

        def sql(q: str) -> list:
            return db.execute(sa.text(q)).fetchall()

        n0 = sql("select count(*) from decisions")[0][0]
        res = (run_wrk(args.port, args.duration, args.connections, args.threads, bodies, tmp) if gen == "wrk"
               else run_pool(args.port, args.duration, args.connections, bodies))
        time.sleep(0.5)
        db.commit()
        n1 = sql("select count(*) from decisions")[0][0]
        mix = {r[0]: r[1] for r in sql("select decision, count(*) from decisions group by decision")}
        guard = [r[0] for r in sql("select distinct guard from decisions")]
        versions = [r[0] for r in sql("select distinct guard_version from decisions")]
        db.close()
        eng.dispose()
        with urllib.request.urlopen(urllib.request.Request(
                f"http://127.0.0.1:{args.port}/v1/calibration", headers={"Authorization": f"Bearer {TOKEN}"})) as r:
            desc = json.loads(r.read())
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
    after = conditions()
    audited = n1 - n0
    result = {
        "benchmark": "server_load: sustained POST /v1/check on loopback",
        "command": ("AGENTGUARD_NAGINI_VENV=%s " % os.environ["AGENTGUARD_NAGINI_VENV"]
                    if os.environ.get("AGENTGUARD_NAGINI_VENV") else "")
                   + "python " + " ".join([os.path.relpath(__file__, REPO)] + sys.argv[1:]),
        "server_command": "agentguard serve --workers %d (%s)" % (
            args.workers, "PostgreSQL" if args.db_url else f"SQLite WAL synchronous={args.sync}"),
        "guard_versions_recorded": versions,
        "guard": desc.get("description"), "guard_repr": desc.get("guards", {}).get("tool"), "guards_seen": guard,
        "policy_verification": verification,
        "request_mix": [{"tool": b["tool_call"]["name"], "user_info": b["metadata"]["user_info"]} for b in bodies],
        "duration_s": args.duration, "connections": args.connections, "workers": args.workers,
        **res,
        "audited_during_run": audited,
        "every_answer_audited": audited >= res["requests"],
        "decisions_by_outcome": mix,
        "no_errors": all(v == 0 for v in res["errors"].values()),
        "meets_1000_rps": res["rps"] >= 1000,
        "conditions_before": before, "conditions_after": after,
        "note": "server and load generator share the same 2 cores; the machine may be shared with other jobs "
                "(load averages recorded before/after)",
        "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("rps", "latency_ms", "errors", "requests", "audited_during_run",
                                            "meets_1000_rps")}, indent=2))
    shutil.rmtree(tmp, ignore_errors=True)


def request_mix() -> list[dict]:
    """Tool calls the load test sends: Mind2Web-SC-style actions by users with different facts, so the
    verified policy allows some and refuses others for each of its six rules."""
    adult = {"age": 34, "domestic": True, "dr_license": True, "vaccine": True, "membership": True}
    cases = [
        ("rent_car", {}), ("rent_car", {"dr_license": False}), ("search_movies", {"domestic": False}),
        ("book_hotel", {"age": 17}), ("book_hotel", {}), ("apply_job", {"age": 14}),
        ("buy_product", {"membership": False}), ("book_flight", {"vaccine": False}), ("book_flight", {}),
        ("send_email", {"age": 12, "membership": False}),
    ]
    return [{"run_id": f"load-{i % 4}", "tool_call": {"name": tool, "arguments": {"item": i}},
             "metadata": {"user_info": {**adult, **facts}}} for i, (tool, facts) in enumerate(cases)]


def verify_policy(guard_file: Path, out_dir: Path) -> tuple[Path, dict]:
    """Prove the guard file's policy with Nagini (when installed) and pin its digest in a copy of the file."""
    import tomllib

    from agentguard.policies import NaginiVerifier, find_nagini_venv, library_path, load_policy

    cfg = tomllib.loads(guard_file.read_text())
    spec = next(g for g in cfg["guards"]
                if g.get("type") == "policy" or g.get("factory", "").endswith(":ToolCallGuard"))
    path = Path(spec["policy"]) if Path(spec["policy"]).suffix else library_path(spec["policy"])
    pol = load_policy(path)
    info = {"policy": pol.id, "version": pol.version, "digest": pol.digest, "file": str(path.name)}
    if find_nagini_venv() is None:
        info["nagini"] = "not installed: the policy was not re-verified in this run"
        return guard_file, info
    t0 = time.time()
    with NaginiVerifier() as v:
        res = v.verify(path)
    info.update({"nagini": res.status, "verify_seconds": round(time.time() - t0, 1)})
    if not res.verified:
        raise SystemExit(f"policy {path} did not verify: {res.describe()}")
    text = re.sub(r'(?m)^(policy = .*)$', lambda m: f'{m.group(1)}\nverified_digest = "{pol.digest}"',
                  guard_file.read_text(), count=1)
    pinned = out_dir / guard_file.name
    pinned.write_text(text)
    return pinned, info


if __name__ == "__main__":
    main()
