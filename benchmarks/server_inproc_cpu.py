"""CPU per ``POST /v1/check`` of the service's ASGI application driven in-process (no HTTP, no load generator):
the event loop's thread and the other threads (the audit writer) separately, for aiming a change to the request
path (issue 32) without the noise of ``wrk`` on a shared 2-core machine.

The application is what ``agentguard serve`` builds (:func:`agentguard.server.app.create_app`: the gate, the lean
``/v1/check`` path, the shipped rules example as the tool guards, the durable SQLite audit store with
``synchronous=FULL`` and the hash chain), fed the bodies of ``server_check_ab.py`` (``--mix``) by ``--conc``
concurrent callers on one uvloop event loop. Each answer must be 200 and the audit store must hold one decision
per request afterwards. CPU is read per thread from ``/proc`` (user + system) around the measured requests.
The writer's batches during the measured requests are
counted (``batches``, ``mean_batch``). What uvicorn's HTTP parsing adds is not here (``server_check_ab.py --raw`` measures it: about 80 us per request).

    python benchmarks/server_inproc_cpu.py --n 4000 --rounds 3 --out benchmarks/results/server_inproc_cpu.json
    python benchmarks/server_inproc_cpu.py --n 3000 --rounds 1 --profile /tmp/check.prof   # cProfile of the loop
    python benchmarks/server_inproc_cpu.py --n 3000 --rounds 3 --base ../before   # an earlier tree, alternating
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import server_check_ab as ab  # noqa: E402
from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

TOKEN = "inproc-token-0123456789"


def _threads() -> dict[str, tuple[str, float]]:
    """CPU seconds (user + system) of each thread of this process, by task id, with its name."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for t in glob.glob(f"/proc/{os.getpid()}/task/*"):
        try:
            f = Path(t, "stat").read_text().rsplit(")", 1)[1].split()
            out[t] = (Path(t, "comm").read_text().strip(), (int(f[11]) + int(f[12])) / tick)
        except OSError:
            pass
    return out


def _main_sys() -> float:
    """System (kernel) CPU seconds of this thread so far."""
    f = Path(f"/proc/self/task/{threading.get_native_id()}/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[12]) / os.sysconf("SC_CLK_TCK")


async def _drive(app: Any, bodies: list[bytes], n: int, conc: int) -> None:
    head = [(b"host", b"x"), (b"authorization", f"Bearer {TOKEN}".encode()), (b"content-type", b"application/json")]
    todo = iter(range(n))

    async def one(body: bytes) -> None:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": "/v1/check", "raw_path": b"/v1/check", "query_string": b"",
                 "root_path": "", "headers": [*head, (b"content-length", str(len(body)).encode())],
                 "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2)}
        given = False
        sent: list[dict] = []

        async def receive() -> dict:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.sleep(3600)  # a client that stays connected
            return {"type": "http.disconnect"}

        async def send(msg: dict) -> None:
            sent.append(msg)

        await app(scope, receive, send)
        if sent[0]["status"] != 200:
            raise SystemExit(f"answer {sent[0]['status']}: {sent[1].get('body', b'')[:200]!r}")

    async def caller() -> None:
        for i in todo:
            await one(bodies[i % len(bodies)])

    await asyncio.gather(*[caller() for _ in range(conc)])


def _decisions(state_dir: Path) -> int:
    import sqlite3

    db = state_dir / "audit.sqlite"
    with sqlite3.connect(db) as c:
        return int(c.execute("SELECT count(*) FROM decisions").fetchone()[0])


def measure(mix: str, n: int, conc: int, profile: str = "") -> dict[str, Any]:
    """One fresh application and store; ``n`` measured requests after 300 to warm up."""
    import uvloop

    tmp = Path(tempfile.mkdtemp(prefix="agentguard-inproc-"))
    settings = ServerSettings(token=TOKEN, state_dir=str(tmp), tool_guards=str(ab.RULES), sqlite_synchronous="FULL")
    app = create_app(settings)
    bodies = [json.dumps(b).encode() for b in ab.request_mix(mix, 64)]
    uvloop.install()
    asyncio.run(_drive(app, bodies, 300, conc))
    st0 = dict(app.state.store.stats)
    t0, m0, w0, s0 = _threads(), time.thread_time(), time.perf_counter(), _main_sys()
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    asyncio.run(_drive(app, bodies, n, conc))
    if prof is not None:
        prof.disable()
        prof.dump_stats(profile)
    m1, w1, t1, s1 = time.thread_time(), time.perf_counter(), _threads(), _main_sys()
    st1 = dict(app.state.store.stats)
    others = {}
    for k, (name, cpu) in t1.items():
        d = cpu - t0.get(k, (name, 0.0))[1]
        if d > 0:
            others[name] = others.get(name, 0.0) + d
    main_name = Path(f"/proc/{os.getpid()}/comm").read_text().strip()
    total_other = sum(others.values()) - (m1 - m0)
    stored = _decisions(tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    if stored != n + 300:
        raise SystemExit(f"{stored} decisions stored for {n + 300} answers")
    return {"main_us": round((m1 - m0) / n * 1e6, 1), "other_threads_us": round(max(0.0, total_other) / n * 1e6, 1),
            "total_us": round(((m1 - m0) + max(0.0, total_other)) / n * 1e6, 1),
            "wall_us": round((w1 - w0) / n * 1e6, 1), "main_sys_us": round((s1 - s0) / n * 1e6, 1),
            "threads": sorted(others), "main_thread": main_name, "batches": st1["batches"] - st0["batches"],
            "mean_batch": round((st1["records"] - st0["records"]) / max(1, st1["batches"] - st0["batches"]), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=4000, help="measured requests per round")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each in a fresh process")
    ap.add_argument("--conc", type=int, default=16, help="concurrent callers (one uvicorn worker under wrk -c32 "
                                                          "with 2 workers sees about 16)")
    ap.add_argument("--mix", choices=["issue", "shell"], default="issue")
    ap.add_argument("--profile", default="", help="write a cProfile of the measured requests here (one round)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child round: print its JSON
    ap.add_argument("--base", default="", help="also measure the application from this source tree (a worktree of an "
                                                "earlier commit), rounds alternating with this tree's")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if a.one or a.profile:
        print(json.dumps(measure(a.mix, a.n, a.conc, a.profile)))
        return
    rounds, base_rounds = [], []
    trees = [("", rounds)] + ([(a.base, base_rounds)] if a.base else [])
    for _ in range(a.rounds):
        for tree, into in trees:
            env = dict(os.environ)
            if tree:
                env["PYTHONPATH"] = str(Path(tree).resolve() / "src")
            got = subprocess.run([sys.executable, __file__, "--one", "--n", str(a.n), "--conc", str(a.conc), "--mix",
                                  a.mix], capture_output=True, text=True, check=True, env=env)
            into.append(json.loads(got.stdout.strip().splitlines()[-1]))
            print(("base " if tree else "") + json.dumps(into[-1]), flush=True)
    keys = ("main_us", "other_threads_us", "total_us", "wall_us", "mean_batch")
    res = {"benchmark": "CPU per POST /v1/check of the service's ASGI app driven in-process (rules example, durable "
                        "SQLite audit, hash chain), by thread",
           "command": "python " + " ".join([f"benchmarks/{Path(__file__).name}", *sys.argv[1:]]),
           "label": a.label, "mix": a.mix, "n": a.n, "conc": a.conc,
           "median": {k: statistics.median(r[k] for r in rounds) for k in keys}, "rounds": rounds,
           **({"base": a.base, "base_median": {k: statistics.median(r[k] for r in base_rounds) for k in keys},
               "base_rounds": base_rounds} if a.base else {}), "loadavg_1_5_15": list(os.getloadavg()), "nproc": os.cpu_count(),
           "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(json.dumps(res["median"]), json.dumps(res.get("base_median", {})))
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
