"""What session 22's run-id scoping adds to every ``/v1/check``, ``/steps`` and ``/signals`` request:
:meth:`agentguard.server.binding.RunBinding.scope` timed alone (nanoseconds per call, best of 5 rounds of
``timeit``), for an ordinary run id (one ``startswith``), for ``default`` (one SHA-256 of the identity) and
under ``shared`` binding. Why alone: the end-to-end A/B on this shared 2-core machine swings by far more.

    python benchmarks/server_s22_default_scope.py
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import timeit
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def main() -> None:
    from agentguard.server.binding import RunBinding

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--number", type=int, default=200_000)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "server_s22_default_scope.json"))
    a = ap.parse_args()
    out: dict[str, float] = {}
    cases = {"identity, ordinary id": ("identity", "run-7f3a9c2e-41b0"), "identity, default": ("identity", "default"),
             "identity, own default:... id": ("identity", None), "shared, default": ("shared", "default")}
    for label, (mode, run) in cases.items():
        b = RunBinding(mode, store=None)
        rid = run if run is not None else b.scope("default", "agent-prod")
        best = min(timeit.repeat(lambda: b.scope(rid, "agent-prod"), number=a.number, repeat=5))
        out[label] = round(best / a.number * 1e9, 1)
    res = {"ns_per_call": out, "number": a.number, "python": platform.python_version(),
           "command": "nice -n 19 python benchmarks/server_s22_default_scope.py"}
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
