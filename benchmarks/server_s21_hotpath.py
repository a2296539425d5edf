"""The two request-path pieces session 21's service fixes touched, timed alone in this tree and in ``--base`` (an
earlier tree), each in its own process: ``Service.pipelines()`` (now reading the guards and their version as one
pair) and the header-size count of one request read (``_Guarded._ag_data``: now counting up to the blank line that
ends the headers), on a 300-byte ``/v1/check`` request and on one carrying a 100 KB body in the same read.

Why alone: the end-to-end A/B (``benchmarks/server_check_ab.py``) on this shared 2-core machine swings by more than
these pieces cost; this says what they cost per request, in nanoseconds, side by side.

    python benchmarks/server_s21_hotpath.py --base /tmp/s21svc/base
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r'''
import json, sys, tempfile, timeit
from pathlib import Path
from agentguard.server.protocol import Limits, _Guarded
from agentguard.server.settings import ServerSettings
from agentguard.server.app import create_app

class C:
    def __init__(self):
        self._ag_limits = Limits(); self._ag_timer = object()
        self._ag_bytes, self._ag_tail, self._ag_done = 0, b"", False
    def _ag_stop(self): self._ag_timer = None
    def _ag_close(self): pass

def per_read(data, n):
    best = float("inf")
    for _ in range(5):  # fresh counters built outside the timed loop (each read changes its counter)
        it = iter([C() for _ in range(n)])
        best = min(best, timeit.timeit(lambda: _Guarded._ag_data(next(it), data), number=n))
    return best / n * 1e9

small = (b"POST /v1/check HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer x\r\nContent-Length: 80\r\n\r\n"
         b'{"run_id":"a","tool_call":{"name":"read_file","arguments":{"path":"notes.txt"}}}' + b" " * 120)
big = small + b"x" * 100_000
tmp = tempfile.mkdtemp()
(Path(tmp) / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_file"]\n')
app = create_app(ServerSettings(state_dir=tmp, tool_guards=str(Path(tmp) / "tools.toml"), token="t" * 20, reload_s=0))
svc = app.state.service
svc.pipelines()
pipes_ns = min(timeit.repeat(svc.pipelines, number=200_000, repeat=5)) / 200_000 * 1e9
print(json.dumps({"pipelines_ns": pipes_ns, "header_count_small_ns": per_read(small, 200_000),
                  "header_count_100kb_ns": per_read(big, 20_000)}))
'''


def measure(src: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="an earlier tree (its src/ is imported)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "server_s21_hotpath.json"))
    a = ap.parse_args()
    rows = []
    for _ in range(a.rounds):  # alternate, so a busy moment hits both
        rows.append({"this": measure(REPO / "src"), "base": measure(Path(a.base) / "src")})
    keys = rows[0]["this"].keys()
    med = {k: {w: sorted(r[w][k] for r in rows)[len(rows) // 2] for w in ("this", "base")} for k in keys}
    res = {"benchmark": "server_s21_hotpath", "command": "python " + " ".join([Path(__file__).relative_to(REPO).as_posix(),
                                                                              *sys.argv[1:]]),
           "unit": "ns per call (min of 5 repeats, median of rounds)", "median": med, "rounds": rows,
           "load_avg": os.getloadavg()}
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(med, indent=1))


if __name__ == "__main__":
    tempfile.gettempdir()
    main()
