"""Why the native engine does not always use sparse LU: direct vs iterative solve on random DTMCs.

Same random models as benchmarks/mc_vs_storm.py (4 successor draws per state, 1% absorbing targets,
1% absorbing failures), ``P=? [F "target"]``. Times ``reach(P, target, method=...)`` for
``direct`` (SuperLU with COLAMD ordering: the factors fill in on random graphs) and ``auto``
(BiCGSTAB above 300 unknowns), one run each (LU is too slow to repeat at 10^4), and their
max abs difference. Writes benchmarks/results/mc_direct_vs_iterative.json.
Run:  nice .venv/bin/python benchmarks/mc_direct_vs_iterative.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from mc_vs_storm import random_dtmc

from agentguard.predictive import checker as C


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000])
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "mc_direct_vs_iterative.json")
    args = ap.parse_args(argv)
    rows = []
    for n in args.sizes:
        P, target = random_dtmc(n, 0)
        row = {"states": n}
        out = {}
        for method in ("auto", "direct"):
            t0 = time.perf_counter()
            out[method] = C.reach(P, target, method=method)
            row[f"{method}_seconds"] = time.perf_counter() - t0
            row[f"{method}_solver"] = C.last_solve_info().method
            print(f"n={n} {method}: {row[f'{method}_seconds']:.3f}s ({row[f'{method}_solver']})",
                  file=sys.stderr, flush=True)
        row["max_abs_diff"] = float(np.max(np.abs(out["auto"] - out["direct"])))
        row["direct_over_auto"] = row["direct_seconds"] / row["auto_seconds"]
        rows.append(row)
    res = {"command": "nice .venv/bin/python benchmarks/mc_direct_vs_iterative.py"
                      + ("" if args.sizes == [1000, 3000, 10000] else " --sizes " + " ".join(map(str, args.sizes))),
           "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1))
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
