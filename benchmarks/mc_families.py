"""Native checker vs Storm on model families that stress linear solvers (issue 14).

Families (``P=? [F "target"]`` for every state):

* ``random``: random sparse DTMCs of ``mc_vs_storm.py`` (4 successors, 1% targets, 1% failures);
* ``gambler``: gambler's ruin / birth-death chain 0..n-1 (0 and n-1 absorbing), p = 0.5 and
  0.50001, error against the closed form ``(1 - r^i) / (1 - r^(n-1))``, ``r = (1-p)/p``;
* ``grid``: random walk on a k x k grid, border absorbing, target = top edge (no closed form: error
  against the native direct solution's certified bound and Storm's sound result where it finishes).

Engines: native (:func:`agentguard.predictive.checker.reach`, solver chosen by structure), Storm
default environment, Storm sound (interval iteration, precision 1e-12) run once in a forked child
with a time limit (it does not finish on chains). Median of ``--repeats`` after a warm-up, native and
Storm default alternated in one process. Writes benchmarks/results/mc_families.json.
Run:  nice .venv/bin/python benchmarks/mc_families.py
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from agentguard.predictive import checker as C  # noqa: E402
from agentguard.predictive.dtmc import DTMC  # noqa: E402


def gambler(n: int, p: float):
    i = np.arange(n)
    up, dn = np.minimum(i + 1, n - 1), np.maximum(i - 1, 0)
    absb = (i == 0) | (i == n - 1)
    rows = np.concatenate([i, i])
    cols = np.concatenate([np.where(absb, i, up), np.where(absb, i, dn)])
    vals = np.concatenate([np.where(absb, 1.0, p), np.where(absb, 0.0, 1 - p)])
    P = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    P.eliminate_zeros()
    return P, i == n - 1


def gambler_exact(n: int, p: float) -> np.ndarray:
    i = np.arange(n, dtype=np.longdouble)
    if p == 0.5:
        return (i / (n - 1)).astype(float)
    r = np.longdouble(1 - p) / np.longdouble(p)
    return (np.expm1(i * np.log(r)) / np.expm1((n - 1) * np.log(r))).astype(float)


def grid(k: int):
    n = k * k
    r, c = np.divmod(np.arange(n), k)
    border = (r == 0) | (r == k - 1) | (c == 0) | (c == k - 1)
    rows, cols = [], []
    for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        rows.append(np.arange(n))
        cols.append(np.where(border, np.arange(n), np.clip(r + dr, 0, k - 1) * k + np.clip(c + dc, 0, k - 1)))
    P = sp.csr_matrix((np.full(4 * n, 0.25), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    P.sum_duplicates()
    return P, (r == 0) & (c > 0) & (c < k - 1)


def _sound_child(model, conn):
    import stormpy

    from mc_vs_storm import storm_envs

    env = storm_envs(stormpy)["storm sound 1e-12"]
    f = stormpy.parse_property('P=? [F "target"]')
    t0 = time.perf_counter()
    r = stormpy.model_checking(model, f, only_initial_states=False, environment=env)
    conn.send((time.perf_counter() - t0, np.asarray(r.get_value_vector(), dtype=float)))


def storm_sound(model, limit: float):
    parent, child = mp.Pipe()
    proc = mp.get_context("fork").Process(target=_sound_child, args=(model, child))
    proc.start()
    if parent.poll(limit):
        out = parent.recv()
        proc.join()
        return out
    proc.kill()
    proc.join()
    return None


def run_case(family: str, size: int, P, target, exact, repeats: int, sound_limit: float) -> dict:
    import stormpy

    from agentguard.predictive.storm_engine import to_storm

    model = to_storm(DTMC(P, 0, {"target": target}), {"target": target})
    f = stormpy.parse_property('P=? [F "target"]')
    env = stormpy.Environment()

    def storm():
        r = stormpy.model_checking(model, f, only_initial_states=False, environment=env)
        return np.asarray(r.get_value_vector(), dtype=float)

    fns = {"native": lambda: C.reach(P, target), "storm default": storm}
    outs = {k: g() for k, g in fns.items()}
    times: dict = {k: [] for k in fns}
    for _ in range(repeats):
        for k, g in fns.items():
            t0 = time.perf_counter()
            outs[k] = g()
            times[k].append(time.perf_counter() - t0)
    info = C.last_solve_info()
    row: dict = {"family": family, "states": int(P.shape[0]), "transitions": int(P.nnz), "engines": {}}
    ref = exact
    sound = storm_sound(model, sound_limit)
    if ref is None and sound is not None:
        ref = sound[1]
    for k in fns:
        e = {"median_seconds": statistics.median(times[k]), "times": times[k]}
        if ref is not None:
            e["max_abs_error"] = float(np.max(np.abs(outs[k] - ref)))
        row["engines"][k] = e
    row["engines"]["native"].update(solver=info.method, residual=info.residual,
                                    certified_error_bound=C.error_bound(P, None, target, outs["native"])
                                    if P.shape[0] <= 10**5 else None)
    row["engines"]["storm sound 1e-12"] = ({"seconds": sound[0], "max_abs_error":
                                            float(np.max(np.abs(sound[1] - exact))) if exact is not None else None}
                                           if sound is not None else {"did_not_finish_within_seconds": sound_limit})
    row["reference"] = "closed form" if exact is not None else ("storm sound 1e-12" if sound else "none")
    row["time_ratio_storm_default_over_native"] = (row["engines"]["storm default"]["median_seconds"]
                                                   / row["engines"]["native"]["median_seconds"])
    return row


def main(argv: list[str] | None = None) -> int:
    from mc_vs_storm import random_dtmc

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sound-limit", type=float, default=10.0)
    ap.add_argument("--random", type=int, nargs="*", default=[1000, 10000, 100000, 1000000])
    ap.add_argument("--gambler", type=int, nargs="*", default=[10000, 100000, 1000000])
    ap.add_argument("--grid", type=int, nargs="*", default=[100, 316])
    ap.add_argument("--note", default="", help="a remark stored in the JSON (e.g. why sizes were left out)")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "mc_families.json")
    args = ap.parse_args(argv)
    cases = [("random", n, *random_dtmc(n, 0), None) for n in args.random]
    for n in args.gambler:
        for p in (0.5, 0.50001):
            cases.append((f"gambler p={p}", n, *gambler(n, p), gambler_exact(n, p)))
    cases += [("grid", k * k, *grid(k), None) for k in args.grid]
    rows = []
    for fam, n, P, t, ex in cases:
        print(f"{fam} n={n}", file=sys.stderr, flush=True)
        rows.append(run_case(fam, n, P, t, ex, args.repeats, args.sound_limit))
        r = rows[-1]
        print(f"  native {r['engines']['native']['median_seconds']:.4f}s ({r['engines']['native']['solver']}) "
              f"storm {r['engines']['storm default']['median_seconds']:.4f}s ratio "
              f"{r['time_ratio_storm_default_over_native']:.2f} err native "
              f"{r['engines']['native'].get('max_abs_error')} storm {r['engines']['storm default'].get('max_abs_error')}",
              file=sys.stderr, flush=True)
    result = {"command": "nice .venv/bin/python benchmarks/mc_families.py " + " ".join(argv or sys.argv[1:]),
              "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                                                                  "loadavg": os.getloadavg()},
              **({"note": args.note} if args.note else {}), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
