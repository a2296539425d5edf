"""How long a ``POST /v1/check`` waits while another request uploads a 1 MB trace batch (33 traces of 10,000 empty
steps) to the same service process: every check sent during the upload, its latency (max and median), this tree
and ``--base`` (an earlier tree) each in its own process. Session 21 moved the batch's parsing off the event loop.

    python benchmarks/server_s21_trace_stall.py --base /tmp/s21svc/base
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r'''
import json, sys, tempfile, threading, time
from pathlib import Path
import httpx
from agentguard.server.app import create_app
from agentguard.server.settings import ServerSettings
from agentguard.server.testing import serve_in_thread
tmp = Path(tempfile.mkdtemp())
(tmp / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_*"]\n')
H = {"Authorization": "Bearer " + "t" * 24}
app = create_app(ServerSettings(state_dir=str(tmp), tool_guards=str(tmp / "tools.toml"), token="t" * 24))
body = json.dumps({"traces": [{"run_id": f"t{i}", "steps": [{}] * 10000} for i in range(33)]},
                  separators=(",", ":")).encode()
with serve_in_thread(app) as base:
    c = httpx.Client()
    check = lambda: c.post(f"{base}/v1/check", headers=H, json={"run_id": "w", "tool_call": {"name": "read_x"}})
    check()
    out = {}
    def up():
        t = time.perf_counter()
        r = httpx.post(f"{base}/v1/traces", headers={**H, "content-type": "application/json"}, content=body, timeout=120)
        out["upload"] = (r.status_code, time.perf_counter() - t)
    th = threading.Thread(target=up); th.start(); time.sleep(0.3)
    lat = []
    while th.is_alive():
        t = time.perf_counter(); check(); lat.append(time.perf_counter() - t)
    th.join()
print(json.dumps({"upload_status": out["upload"][0], "upload_s": out["upload"][1], "checks": len(lat),
                  "max_s": max(lat), "median_s": sorted(lat)[len(lat) // 2]}))
'''


def measure(src: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "server_s21_trace_stall.json"))
    a = ap.parse_args()
    rows = [{"this": measure(REPO / "src"), "base": measure(Path(a.base) / "src")} for _ in range(a.rounds)]
    res = {"benchmark": "server_s21_trace_stall",
           "command": "python " + " ".join([Path(__file__).relative_to(REPO).as_posix(), *sys.argv[1:]]),
           "rounds": rows, "load_avg": os.getloadavg()}
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
