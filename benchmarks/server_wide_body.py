"""One request whose body is many small JSON values, and what the rest of the worker sees meanwhile.

A body of ``n`` copies of ``[[[1]]]`` (4 values each) in one tool-call argument is sent to ``/v1/check`` of a
service started in this process (uvicorn on loopback, SQLite, one tool-rules guard), while a thread polls
``GET /health`` every 50 ms; the request's latency and the slowest ``/health`` answer are recorded, with the
default ``max_json_values`` (the body is refused on its text) and with the limit lifted (the session-19 hole:
every value snapshotted before and after each guard on the event loop). A small check is timed first as the
machine's baseline. Run: ``python benchmarks/server_wide_body.py [--n 60000] [--repeats 2]``; writes
``benchmarks/results/server_wide_body.json`` with the command, the machine's load average and every sample.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path


def measure(n: int, limit: int | None, repeats: int) -> dict:
    import httpx

    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    d = Path(tempfile.mkdtemp())
    (d / "t.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_*"]\n')
    kw = {} if limit is None else {"max_json_values": limit}
    app = create_app(ServerSettings(token="bench-token-1234", state_dir=str(d), tool_guards=str(d / "t.toml"), **kw))
    h = {"Authorization": "Bearer bench-token-1234", "Content-Type": "application/json"}
    wide = b'{"tool_call": {"name": "read_file", "arguments": {"n": [' + b",".join([b"[[[1]]]"] * n) + b"]}}}"
    small = b'{"tool_call": {"name": "read_file", "arguments": {"n": 1}}}'
    out: dict = {"max_json_values": app.state.settings.max_json_values, "body_bytes": len(wide), "values": 4 * n + 4,
                 "samples": []}
    with serve_in_thread(app) as base:
        for _ in range(repeats):
            t = time.perf_counter()
            httpx.post(f"{base}/v1/check", headers=h, content=small)
            small_s = time.perf_counter() - t
            worst = [0.0]
            stop = threading.Event()

            def poll() -> None:
                while not stop.is_set():
                    t0 = time.perf_counter()
                    httpx.get(f"{base}/health", timeout=120)
                    worst[0] = max(worst[0], time.perf_counter() - t0)
                    stop.wait(0.05)

            th = threading.Thread(target=poll)
            th.start()
            time.sleep(0.3)
            t = time.perf_counter()
            r = httpx.post(f"{base}/v1/check", headers=h, content=wide, timeout=300)
            wide_s = time.perf_counter() - t
            stop.set()
            th.join()
            out["samples"].append({"small_check_s": round(small_s, 4), "wide_status": r.status_code,
                                   "wide_s": round(wide_s, 4), "worst_health_s": round(worst[0], 4)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=60000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(Path(__file__).with_name("results") / "server_wide_body.json"))
    a = ap.parse_args()
    res = {"command": "python " + " ".join(sys.argv), "loadavg_before": os.getloadavg(), "cpus": os.cpu_count(),
           "limited": measure(a.n, None, a.repeats), "unlimited": measure(a.n, 10_000_000, a.repeats),
           "loadavg_after": os.getloadavg()}
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
