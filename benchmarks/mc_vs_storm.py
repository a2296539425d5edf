"""Native model checker vs Storm on random sparse DTMCs (10^3, 10^4, 10^5 states, 4 successors each).

Model: state i has 4 successors drawn uniformly at random with random weights; 1% of the states
are absorbing targets, 1% absorbing failures (so P[F target] is strictly between 0 and 1 almost
everywhere and neither engine can answer from the graph alone). Property: ``P=? [F "target"]``
for every state. Both engines get the same matrix in the same process:

* native: :func:`agentguard.predictive.checker.reach` (Prob0/Prob1 + one sparse solve; includes
  the precomputation, the submatrix extraction and the solve);
* Storm (stormpy) on the explicit model built from the same matrix (building not timed):
  ``default`` (Storm's default environment: topological solver, relative precision 1e-6),
  ``gauss-seidel 1e-12`` (native solver, Gauss-Seidel, precision 1e-12: accuracy matched) and
  ``sound`` (interval iteration, precision 1e-12, guaranteed bounds).

Timing: median of ``--repeats`` (5) timed runs after one warm-up, wall-clock (time.perf_counter),
engines interleaved round-robin so that they share the same background load.
Accuracy: for every result x, a *certified* bound on max|x - exact| from
:func:`agentguard.predictive.checker.error_bound` (residual times max expected steps, no reference
needed), plus max|x - x_ref| against a reference solved by scipy's BiCGSTAB to a relative residual
of 1e-15 with residual correction (at 10^3 also against a direct sparse LU solve).

Writes benchmarks/results/mc_vs_storm.json and .png.
Run:  nice .venv/bin/python benchmarks/mc_vs_storm.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
from scipy.sparse import linalg as spla

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from agentguard.predictive import checker as C
from agentguard.predictive.dtmc import DTMC


def random_dtmc(n: int, seed: int, succ: int = 4) -> tuple[sp.csr_matrix, np.ndarray]:
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, n, size=(n, succ))
    w = rng.random((n, succ))
    w /= w.sum(1, keepdims=True)
    k = max(1, n // 100)
    target = np.zeros(n, bool)
    target[:k] = True
    absorbing = np.zeros(n, bool)
    absorbing[: 2 * k] = True
    cols[absorbing] = np.arange(n)[absorbing, None]
    w[absorbing] = 1.0 / succ
    P = sp.csr_matrix((w.ravel(), (np.repeat(np.arange(n), succ), cols.ravel())), shape=(n, n))
    P.sum_duplicates()
    return P, target


def interleaved(fns: dict, repeats: int) -> tuple[dict, dict]:
    """Time every function ``repeats`` times, round-robin (native, storm, ..., native, storm, ...)
    after one warm-up call each, so that all engines see the same background load."""
    outs = {k: f() for k, f in fns.items()}  # warm-up
    times: dict = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t0 = time.perf_counter()
            outs[k] = f()
            times[k].append(time.perf_counter() - t0)
    return times, outs


def reference(P, target) -> np.ndarray:
    """P[F target] solved independently of the native engine's solver: scipy's BiCGSTAB on the
    extracted S? system to a relative residual of 1e-15, plus three residual-correction steps."""
    no = C.prob0(P, None, target)
    yes = C.prob1(P, None, target, no)
    idx = np.flatnonzero(~(no | yes))
    rows = P[idx]
    A = rows[:, idx].tocsr()
    b = np.asarray(rows[:, yes].sum(axis=1)).ravel()
    M = (sp.identity(idx.size, format="csr") - A).tocsr()
    x = np.zeros(P.shape[0])
    x[yes] = 1
    y, _ = spla.bicgstab(M, b, rtol=1e-15, atol=0.0, maxiter=5000)
    for _ in range(3):
        d, _ = spla.bicgstab(M, b - M @ y, rtol=1e-12, atol=0.0, maxiter=5000)
        y = y + d
    x[idx] = y
    return x


def storm_envs(stormpy):
    from stormpy import environments as E

    envs = {"storm default": stormpy.Environment()}
    e = stormpy.Environment()
    s = e.solver()
    s.set_linear_equation_solver_type(E.EquationSolverType.NATIVE)
    s.native().method = E.NativeLinearEquationSolverMethod.GAUSS_SEIDEL
    s.native().precision = stormpy.Rational("1/1000000000000")
    envs["storm gauss-seidel 1e-12"] = e
    e = stormpy.Environment()
    s = e.solver()
    s.set_linear_equation_solver_type(E.EquationSolverType.NATIVE)
    s.native().method = E.NativeLinearEquationSolverMethod.INTERVAL_ITERATION
    s.native().precision = stormpy.Rational("1/1000000000000")
    s.force_soundness = True
    envs["storm sound 1e-12"] = e
    return envs


def run(sizes: list[int], repeats: int, seed: int) -> dict:
    import stormpy

    from agentguard.predictive.storm_engine import to_storm

    rows = []
    formula = stormpy.parse_property('P=? [F "target"]')
    for n in sizes:
        print(f"n={n}: generating", file=sys.stderr, flush=True)
        P, target = random_dtmc(n, seed)
        t0 = time.perf_counter()
        model = to_storm(DTMC(P, 0, {"target": target}), {"target": target})
        storm_build = time.perf_counter() - t0
        row: dict = {"states": n, "transitions": int(P.nnz), "storm_build_seconds": storm_build, "engines": {}}
        ref = reference(P, target)
        row["reference_certified_error_bound"] = C.error_bound(P, None, target, ref)

        def native(P=P, target=target):
            return C.reach(P, target)

        fns = {"native": native}
        for name, env in storm_envs(stormpy).items():
            def storm(env=env, model=model):
                r = stormpy.model_checking(model, formula, only_initial_states=False, environment=env)
                return np.asarray(r.get_value_vector(), dtype=np.float64)

            fns[name] = storm
        times, outs = interleaved(fns, repeats)
        x = outs["native"]
        info = C.last_solve_info()
        for name in fns:
            y = outs[name]
            e = {"median_seconds": statistics.median(times[name]), "min_seconds": min(times[name]),
                 "times": times[name], "certified_error_bound": C.error_bound(P, None, target, y),
                 "max_abs_diff_vs_reference": float(np.max(np.abs(y - ref)))}
            if name == "native":
                e.update(solver=info.method, residual=info.residual)
            else:
                e["max_abs_diff_vs_native"] = float(np.max(np.abs(y - x)))
            row["engines"][name] = e
            print(f"  {name} median {e['median_seconds']:.4f}s", file=sys.stderr, flush=True)
        if n <= 1000:
            lu = C.reach(P, target, method="direct")
            row["native_direct_vs_reference"] = float(np.max(np.abs(lu - ref)))
            row["native_vs_native_direct"] = float(np.max(np.abs(x - lu)))
        nat = row["engines"]["native"]["median_seconds"]
        row["speedup_native_vs_storm_default"] = row["engines"]["storm default"]["median_seconds"] / nat
        rows.append(row)
    return {"rows": rows}


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    ns = [r["states"] for r in rows]
    names = list(rows[0]["engines"])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name in names:
        a1.plot(ns, [r["engines"][name]["median_seconds"] for r in rows], "o-", label=name)
        a2.plot(ns, [max(r["engines"][name]["max_abs_diff_vs_reference"], 1e-17) for r in rows], "o-", label=name)
    for a, t in ((a1, "median time, P=? [F target] for all states (s)"), (a2, "max |error| vs reference")):
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xlabel("states (4 successors each)")
        a.set_title(t, fontsize=10)
        a.grid(True, which="both", alpha=0.3)
    a1.legend(fontsize=8)
    fig.suptitle("agentguard native checker vs Storm (same machine, same run, median of 5)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "mc_vs_storm.json")
    args = ap.parse_args(argv)
    import stormpy

    res = run(args.sizes, args.repeats, args.seed)
    res["command"] = "nice .venv/bin/python benchmarks/mc_vs_storm.py" + (
        "" if args.sizes == [1000, 10000, 100000] else " --sizes " + " ".join(map(str, args.sizes)))
    res["property"] = 'P=? [F "target"] for every state; 1% absorbing targets, 1% absorbing failures'
    res["machine"] = {"cpus": os.cpu_count(), "load_average_at_end": os.getloadavg(),
                      "python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
                      "stormpy": getattr(stormpy, "__version__", "?"),
                      "note": "shared 2-core machine with other jobs running; compare ratios from the same run"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1))
    plot(res, args.out.with_suffix(".png"))
    for r in res["rows"]:
        e = r["engines"]
        print(f"n={r['states']:>7}: " + "  ".join(
            f"{k}={v['median_seconds']:.4f}s(err {v['max_abs_diff_vs_reference']:.1e})" for k, v in e.items())
            + f"  speedup vs storm default={r['speedup_native_vs_storm_default']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
