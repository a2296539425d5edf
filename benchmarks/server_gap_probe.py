"""Why the service's event loop costs more per ``POST /v1/check`` under HTTP than driven in-process (issue 32).

``server_cpu_profile.py`` measures the service's loop thread at ~550-640 us CPU per request under ``wrk``,
``server_inproc_cpu.py`` the same application without HTTP at ~340-370 us, and a plain ASGI callable under
uvicorn (the HTTP floor) at ~67 us: ~130-200 us of the HTTP-mode loop is not explained by the sum. This
script measures, in one run and one uvicorn worker each (uvloop, httptools, the same ``wrk`` load and bodies as
``server_check_ab.py``), per-thread CPU (user + system, ``/proc``) and context switches per request of:

- ``service``: ``agentguard serve`` as shipped (its limited protocol class, :mod:`agentguard.server.protocol`);
- ``service_base``: ``agentguard serve`` from ``--base`` (a worktree of an earlier commit), side by side;
- ``service_limited``: the same application built in this process (not through the CLI) under the limited
  protocol class, for comparing with ``service_plain`` alike;
- ``service_factory``: ``agentguard serve``'s own start (``runner.serve``: the factory and the recipe), without
  the command line (diagnostics only);
- ``service_notimer``: as ``service_limited`` without the per-request header timer (diagnostics only);
- ``service_plain``: the same application under uvicorn's plain httptools protocol (no header timer, no cap);
- ``raw`` / ``raw_limited``: the plain ASGI callable under the plain / the service's limited protocol;
- ``raw_wait``: the plain callable that, like the service, hands each request to a second thread and answers
  when that thread resolves its future (``call_soon_threadsafe``, once per batch, as the audit writer does);
  the thread only sleeps ``--fsync-us`` per batch (the GIL released: the fsync) -- the cost of answering
  at the service's pace, woken by another thread, without any Python work there;
- ``raw_wait_gil``: as ``raw_wait``, and the thread also runs ``--writer-us`` of Python per record holding the
  GIL (the writer's own work) -- what a second busy Python thread costs the loop;
- ``inproc``: ``server_inproc_cpu.py``'s in-process drive of the service application (no HTTP), for the
  difference being explained.

    python benchmarks/server_gap_probe.py --rounds 2 --duration 5 --connections 16 --out benchmarks/results/x.json
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import queue
import shutil
import signal
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
import server_cpu_profile as prof  # noqa: E402
import server_load  # noqa: E402

KINDS = ["service", "service_limited", "service_notimer", "service_plain", "raw", "raw_limited", "raw_wait", "raw_wait_gil"]


def _spin(us: float) -> None:
    """Python work holding the GIL for about ``us`` microseconds."""
    end = time.perf_counter() + us / 1e6
    x = 0
    while time.perf_counter() < end:
        for i in range(50):
            x += i


def waiting_app(writer_us: float, fsync_us: float) -> Any:
    """The plain ASGI callable, answering only once a second thread has 'committed' its record."""
    inner = ab.raw_app()
    q: queue.SimpleQueue = queue.SimpleQueue()

    def resolve_all(futs: list) -> None:
        for f in futs:
            if not f.done():
                f.set_result(None)

    def writer() -> None:
        while True:
            batch = [q.get()]
            while True:
                try:
                    batch.append(q.get_nowait())
                except queue.Empty:
                    break
            if writer_us:
                _spin(writer_us * len(batch))
            time.sleep(fsync_us / 1e6)
            by: dict[Any, list] = collections.defaultdict(list)
            for loop, fut in batch:
                by[loop].append(fut)
            for loop, futs in by.items():
                loop.call_soon_threadsafe(resolve_all, futs)

    threading.Thread(target=writer, name="agentguard-audit-writer", daemon=True).start()

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await inner(scope, receive, send)
        loop = asyncio.get_running_loop()
        more = True
        while more:
            msg = await receive()
            more = msg.get("more_body", False)
        fut = loop.create_future()
        q.put((loop, fut))
        await fut
        await inner(scope, _done_receive, send)

    return app


async def _done_receive() -> dict:
    return {"type": "http.request", "body": b"", "more_body": False}


def _no_timer(cls: type) -> type:
    class NoTimer(cls):  # type: ignore[valid-type,misc]
        def _ag_wait(self) -> None:
            self._ag_stop()
            self._ag_bytes, self._ag_tail, self._ag_done = 0, b"", False
            self._ag_timer = True
            self._ag_idle[self] = None

        def _ag_stop(self) -> None:
            self._ag_timer = None
            self._ag_idle.pop(self, None)

    return NoTimer


def serve(kind: str, port: int, data: str, writer_us: float, fsync_us: float) -> None:
    """Run one server of ``kind`` in this process (uvloop, httptools, one worker)."""
    import uvicorn
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from agentguard.server.app import create_app
    from agentguard.server.protocol import HttpToolsLimited, Limits
    from agentguard.server.runner import uvicorn_config
    from agentguard.server.settings import ServerSettings

    if kind == "service_factory":  # diagnostics: agentguard serve's own path (runner.serve), without the CLI
        from agentguard.server.runner import serve as run_service

        cfg_file = Path(data).parent / "agentguard.toml"
        cfg_file.write_text(f'[server]\nsqlite_synchronous = "FULL"\ntool_guards = "{ab.RULES}"\n')
        settings = ServerSettings(token=server_load.TOKEN, state_dir=data, tool_guards=str(ab.RULES),
                                  sqlite_synchronous="FULL", port=port)
        run_service(settings, str(cfg_file), {"state_dir": data, "port": port, "workers": 1})
        return
    if kind.startswith("service"):
        settings = ServerSettings(token=server_load.TOKEN, state_dir=data, tool_guards=str(ab.RULES),
                                  sqlite_synchronous="FULL", port=port)
        cfg = uvicorn_config(settings, app=create_app(settings))
        if kind == "service_plain":
            cfg.http = HttpToolsProtocol
        if kind == "service_notimer":  # diagnostics: the limited class without its per-request header timer
            cfg.http = _no_timer(HttpToolsLimited)
    else:
        app = {"raw": ab.raw_app, "raw_limited": ab.raw_app}.get(kind)
        app_obj = app() if app else waiting_app(writer_us if kind == "raw_wait_gil" else 0.0, fsync_us)
        cfg = uvicorn.Config(app_obj, port=port, loop="uvloop", access_log=False, log_level="warning",
                             server_header=False, date_header=False, backlog=2048,
                             http=HttpToolsLimited if kind == "raw_limited" else HttpToolsProtocol)
        cfg.agentguard_limits = Limits()  # type: ignore[attr-defined]
    server = uvicorn.Server(cfg)
    if os.environ.get("AG_GAP_PROFILE"):  # diagnostics: a cProfile of the loop thread, SIGUSR1 to SIGUSR2
        import cProfile
        import signal

        pr = cProfile.Profile()
        signal.signal(signal.SIGUSR1, lambda *_: pr.enable())

        def dump(*_: Any) -> None:
            pr.disable()
            pr.dump_stats(os.environ["AG_GAP_PROFILE"])

        signal.signal(signal.SIGUSR2, dump)
    server.run()


def _task_sys(pid: int) -> dict[str, float]:
    """System (kernel) CPU seconds of each thread of ``pid`` so far, by TID."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[tid] = int(Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[12]) / tick
        except OSError:
            continue
    return out


def _ctx(pid: int) -> dict[str, int]:
    """Voluntary + involuntary context switches of each thread of ``pid`` so far, by TID."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            txt = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except OSError:
            continue
        out[tid] = sum(int(line.split()[1]) for line in txt.splitlines() if line.endswith("ctxt_switches") or
                       "ctxt_switches:" in line)
    return out


def measure(kind: str, args: argparse.Namespace, bodies: list[dict]) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"agentguard-gap-{kind}-"))
    env = {**os.environ, "AGENTGUARD_TOKEN": server_load.TOKEN}
    if kind in ("service", "service_base"):
        cmd, env = prof._command("service", args.port, tmp)
        if kind == "service_base":  # the service from another source tree (--base): before the change
            env["PYTHONPATH"] = str(Path(args.base).resolve() / "src")
    else:
        cmd = [sys.executable, __file__, "--serve", kind, "--port", str(args.port), "--data", str(tmp / "data"),
               "--writer-us", str(args.writer_us), "--fsync-us", str(args.fsync_us)]
    p = ab.start(cmd, env, tmp, args.port)
    try:
        pid = p.pid
        server_load.run_wrk(args.port, args.warmup, args.connections, 1, bodies, tmp)
        names = prof._threads(pid)
        cpu0, ctx0, sys0 = prof._task_cpu(pid), _ctx(pid), _task_sys(pid)
        res = server_load.run_wrk(args.port, args.duration, args.connections, 1, bodies, tmp)
        cpu1, ctx1, sys1 = prof._task_cpu(pid), _ctx(pid), _task_sys(pid)
        names = {**names, **prof._threads(pid)}
    finally:
        ab.stop(p)
        shutil.rmtree(tmp, ignore_errors=True)
    n = max(1, res["requests"])
    cpu: dict[str, float] = collections.defaultdict(float)
    ctx: dict[str, float] = collections.defaultdict(float)
    for tid, t in cpu1.items():
        k = prof._kind(names.get(tid), tid, pid)
        cpu[k] += (t - cpu0.get(tid, 0.0)) * 1e6 / n
        cpu[k + "_sys"] += (sys1.get(tid, 0.0) - sys0.get(tid, 0.0)) * 1e6 / n
        ctx[k] += (ctx1.get(tid, 0) - ctx0.get(tid, 0)) / n
    return {"kind": kind, "rps": round(res["rps"], 1), "requests": res["requests"],
            "errors": sum(res["errors"].values()),
            "cpu_us_per_request": {k: round(v, 1) for k, v in sorted(cpu.items()) if v},
            "ctx_switches_per_request": {k: round(v, 2) for k, v in sorted(ctx.items()) if v},
            "loadavg_before": list(os.getloadavg())}


HOG = ("import time\nwhile True:\n    t = time.perf_counter()\n    while time.perf_counter() - t < {busy}: pass\n"
       "    if {idle}: time.sleep({idle})\n")


def inproc(args: argparse.Namespace, hog: str = "") -> dict[str, Any]:
    """The in-process drive; ``hog`` ("100" or "50"): with another process busy all the time, or half of each
    2 ms (a stand-in for the load generator sharing the cores, which the in-process drive does not have)."""
    busy, idle = {"": (0, 0), "100": (1.0, 0), "50": (0.001, 0.001)}[hog]
    h = subprocess.Popen([sys.executable, "-c", HOG.format(busy=busy, idle=idle)]) if hog else None
    try:
        got = subprocess.run([sys.executable, str(REPO / "benchmarks" / "server_inproc_cpu.py"), "--one", "--n",
                          str(args.inproc_n), "--conc", str(args.connections)],
                             capture_output=True, text=True, check=True)
    finally:
        if h is not None:
            h.kill()
            h.wait()
    r = json.loads(got.stdout.strip().splitlines()[-1])
    return {"kind": "inproc" + (f"_hog{hog}" if hog else ""), "cpu_us_per_request": {"main": r["main_us"], "main_sys": r.get("main_sys_us", 0.0),
                                                             "other": r["other_threads_us"]},
            "wall_us": r["wall_us"]}


def _calls(path: Path, n: int, skip: str = "") -> dict[str, float]:
    """Python calls per request of each function in a cProfile dump (those called at least every other request:
    start-up and imports drop out), ``skip``: functions of the driver itself."""
    import pstats

    out = {}
    for (f, _line, fn), v in pstats.Stats(str(path)).stats.items():  # type: ignore[attr-defined]
        name = f"{f.split('site-packages/')[-1].split('/src/')[-1]}:{fn}"
        if v[1] / n >= 0.5 and not (skip and skip in f):
            out[name] = out.get(name, 0.0) + v[1] / n
    return out


def calls(args: argparse.Namespace, bodies: list[dict]) -> dict[str, Any]:
    """Deterministic side of the gap: Python calls per request on the loop thread (cProfile) of the service
    under HTTP (``service_limited``), of the raw callable under HTTP, and of the in-process drive."""
    tmp = Path(tempfile.mkdtemp(prefix="agentguard-gap-calls-"))
    got: dict[str, dict[str, float]] = {}
    try:
        for kind in ("service_limited", "raw"):
            env = {**os.environ, "AGENTGUARD_TOKEN": server_load.TOKEN, "AG_GAP_PROFILE": str(tmp / f"{kind}.prof")}
            cmd = [sys.executable, __file__, "--serve", kind, "--port", str(args.port), "--data", str(tmp / kind)]
            p = ab.start(cmd, env, tmp, args.port)
            try:
                server_load.run_wrk(args.port, args.warmup, args.connections, 1, bodies, tmp)
                os.kill(p.pid, signal.SIGUSR1)
                time.sleep(0.2)
                res = server_load.run_wrk(args.port, args.duration, args.connections, 1, bodies, tmp)
                os.kill(p.pid, signal.SIGUSR2)
                for _ in range(100):
                    if (tmp / f"{kind}.prof").exists():
                        break
                    time.sleep(0.1)
                time.sleep(0.5)
            finally:
                ab.stop(p)
            got[kind] = _calls(tmp / f"{kind}.prof", res["requests"])
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "server_inproc_cpu.py"), "--n", str(args.inproc_n),
                        "--conc", str(args.connections), "--profile", str(tmp / "inproc.prof")],
                       capture_output=True, text=True, check=True)
        got["inproc"] = _calls(tmp / "inproc.prof", args.inproc_n, skip="server_inproc_cpu")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    h, i = got["service_limited"], got["inproc"]
    diff = {k: round(h.get(k, 0.0) - i.get(k, 0.0), 2) for k in set(h) | set(i)}
    return {"calls_per_request": {k: round(sum(v.values()), 1) for k, v in got.items()},
            "uvicorn_and_protocol_calls_per_request": {
                k: round(sum(c for f, c in v.items() if f.startswith(("uvicorn/", "agentguard/server/protocol"))), 1)
                for k, v in got.items()},
            "http_minus_inproc_by_function": dict(sorted(((k, v) for k, v in diff.items() if abs(v) >= 0.5),
                                                         key=lambda kv: -abs(kv[1]))),
            "how": "cProfile of the loop thread; calls per answered request of every function called at least every "
                   "other request (the in-process driver's own functions left out)"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--serve", default="", help=argparse.SUPPRESS)
    ap.add_argument("--data", default="", help=argparse.SUPPRESS)
    ap.add_argument("--kinds", default=",".join(KINDS + ["inproc"]))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--inproc-n", type=int, default=3000)
    ap.add_argument("--writer-us", type=float, default=100.0, help="raw_wait_gil: Python work per record")
    ap.add_argument("--fsync-us", type=float, default=800.0, help="raw_wait*: GIL-free wait per batch")
    ap.add_argument("--port", type=int, default=8897)
    ap.add_argument("--base", default="", help="a worktree of an earlier commit, for the kind service_base")
    ap.add_argument("--calls", action="store_true", help="also count Python calls per request (cProfile runs)")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.data, args.writer_us, args.fsync_us)
        return
    bodies = ab.request_mix("issue", 64)
    kinds = args.kinds.split(",")
    rounds = []
    for i in range(args.rounds if kinds != [""] else 0):
        order = kinds[i % len(kinds):] + kinds[:i % len(kinds)]
        r = {k: (inproc(args, k[len("inproc_hog"):]) if k.startswith("inproc") else measure(k, args, bodies))
             for k in order}
        rounds.append(r)
        print(json.dumps({k: [r[k].get("rps"), r[k]["cpu_us_per_request"], r[k].get("ctx_switches_per_request")]
                          for k in kinds}), file=sys.stderr, flush=True)
    med = {}
    for k in (kinds if rounds else []):
        threads = sorted({t for r in rounds for t in r[k]["cpu_us_per_request"]})
        med[k] = {t: statistics.median(r[k]["cpu_us_per_request"].get(t, 0.0) for r in rounds) for t in threads}
        med[k]["total"] = round(sum(v for t, v in med[k].items() if not t.endswith("_sys")), 1)
    result = {"benchmark": "issue 32: per-thread CPU per POST /v1/check, service under HTTP vs variants that "
                           "isolate the protocol class, the cross-thread hand-off and a second busy Python thread",
              "command": "python " + " ".join([os.path.relpath(__file__, REPO)] + sys.argv[1:]),
              "label": args.label, "connections": args.connections, "duration_s": args.duration,
              "writer_us": args.writer_us, "fsync_us": args.fsync_us,
              "median_cpu_us_per_request": med, "rounds": rounds, "conditions": server_load.conditions(),
              "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.calls:
        result["calls"] = calls(args, bodies)
        print(json.dumps({k: result["calls"][k] for k in ("calls_per_request", "uvicorn_and_protocol_calls_per_request")}))
    print(json.dumps(med, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
