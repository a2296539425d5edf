"""External PRISM DTMC files through `agentguard check`, against Storm's exact engine.

The set (``tests/predictive/data/external/models.json``): the DTMC examples shipped in the stormpy
wheel (read from the installed package, GPL-3.0, not copied; the parametric ones instantiated with
``--const``) and models written for agentguard from the published PRISM case-study descriptions
(two_dice, herman, leader_sync, brp, crowds, nand, zeroconf, gambler's ruin, ...), plus a Storm DRN
file and a 1,000-state model written by ``write_prism``. Each file is checked three ways:

* ``agentguard check FILE -p PROP ... [--const ...] --json`` in this process (the real command: it
  must exit 0 and print the values): "parsed";
* agentguard's read + check in Python (``load_dtmc`` + ``check``, native engine), timed;
* Storm: parse + build + check with its default engine (timed), and an exact reference
  (rational model, exact environment; not timed). Values are compared over every state Storm
  builds (matched through the state valuations), ``inf`` rewards must agree.

Timing: median of ``--repeats`` runs each, same process, agentguard and Storm alternated.
Writes benchmarks/results/mc_external.json.
Run:  nice .venv/bin/python benchmarks/mc_external.py
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

DATA = REPO / "tests" / "predictive" / "data" / "external"


def resolve(entry: str) -> Path:
    import stormpy

    kind, rel = entry.split(":", 1)
    if kind == "wheel":
        return Path(stormpy.__file__).parent / "examples" / "files" / rel
    return DATA / rel


def run_cli(path: Path, props: list[str], const: str | None) -> tuple[int, str]:
    from agentguard.cli import main

    args = ["check", str(path), "--json"]
    for p in props:
        args += ["-p", p]
    if const:
        args += ["--const", const]
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, (out.getvalue() if code == 0 else err.getvalue()).strip()


def keys_of_dtmc(dtmc) -> dict[tuple, int] | None:
    if not dtmc.variables:
        return None
    names = sorted(dtmc.variables)
    cols = [dtmc.variables[k] for k in names]
    return {tuple(int(c[i]) for c in cols): i for i in range(dtmc.n)}


def storm_keys(model) -> list[tuple] | None:
    if not model.has_state_valuations():
        return None
    sv = model.state_valuations
    vs = sorted(sv.get_all_variables(), key=lambda v: v.name)
    cols = []
    for v in vs:
        if v.has_boolean_type():
            a = np.zeros(model.nr_states, dtype=np.int64)
            a[list(sv.get_boolean_values(v))] = 1
        else:
            a = np.asarray(sv.get_int64_values(v), dtype=np.int64)
        cols.append(a)
    return [tuple(int(c[i]) for c in cols) for i in range(model.nr_states)]


def storm_side(path: Path, props: list[str], const: str | None, exact: bool):
    """Storm parse + build + check; returns (values per property, model, seconds)."""
    import stormpy

    from agentguard.predictive.prism_storm import quiet, storm_program
    from agentguard.spec.pctl import Property, parse_property

    t0 = time.perf_counter()
    with quiet():
        if path.suffix == ".drn":
            model = stormpy.build_model_from_drn(str(path))
            forms = [stormpy.parse_property(_query(p)) for p in props]
        else:
            prog = storm_program(path, const)
            forms = [stormpy.parse_property(_query(p, prog), prog) for p in props]
            opts = stormpy.BuilderOptions(forms)
            opts.set_build_all_labels()
            opts.set_build_all_reward_models()
            opts.set_build_state_valuations()
            model = stormpy.build_model[stormpy.Rational](prog, options=opts) if exact else \
                stormpy.build_model(prog, options=opts)
        env = stormpy.environments.exact() if exact and path.suffix != ".drn" else stormpy.Environment()
        if exact and path.suffix == ".drn":  # Storm reads DRN in floating point: sound, precision 1e-12
            from stormpy import environments as E

            env = stormpy.Environment()
            sol = env.solver()
            sol.set_linear_equation_solver_type(E.EquationSolverType.NATIVE)
            sol.native().method = E.NativeLinearEquationSolverMethod.INTERVAL_ITERATION
            sol.native().precision = stormpy.Rational("1/1000000000000")
            sol.force_soundness = True
        outs = []
        for f in forms:
            r = stormpy.model_checking(model, f, only_initial_states=False, environment=env)
            vals = r.get_value_vector()
            outs.append(np.array([_num(v) for v in vals], dtype=np.float64) if exact else np.asarray(vals, float))
    return outs, model, time.perf_counter() - t0


def _query(text: str, prog=None) -> str:
    from agentguard.spec.pctl import Property, parse_property

    consts = None
    p = parse_property(text, consts)
    return str(Property(p.path, None, None, p.kind, p.reward, p.state))


def _num(v) -> float:
    s = str(v)
    if s in ("inf", "oo", "+inf"):
        return float("inf")
    return float(Fraction(s))


def ours(path: Path, props: list[str], const: str | None):
    from agentguard.predictive.checker import check
    from agentguard.predictive.load import load_dtmc
    from agentguard.predictive.prism_storm import parse_constants
    from agentguard.spec.pctl import parse_property

    t0 = time.perf_counter()
    dtmc = load_dtmc(path, const)
    known = dict(dtmc.meta.get("constants") or {})
    known.update({k: float(Fraction(v)) for k, v in parse_constants(const).items()})
    vals = [check(dtmc, parse_property(p, known)).values for p in props]
    return vals, dtmc, time.perf_counter() - t0


def compare(dtmc, our_vals, model, ref_vals) -> float:
    """max |ours - Storm exact| over Storm's states (matched by valuation); inf must match."""
    ko, ks = keys_of_dtmc(dtmc), storm_keys(model)
    if ko is None or ks is None:
        idx = np.arange(model.nr_states)
    else:
        idx = np.array([ko[k] for k in ks])
    err = 0.0
    for a, b in zip(our_vals, ref_vals):
        a = a[idx]
        inf_a, inf_b = np.isinf(a), np.isinf(b)
        if not np.array_equal(inf_a, inf_b):
            return float("inf")
        fin = ~inf_b
        if fin.any():
            err = max(err, float(np.max(np.abs(a[fin] - b[fin]))))
    return err


def run_one(entry: dict, repeats: int) -> dict:
    path = resolve(entry["file"])
    props, const = entry["props"], entry.get("const")
    row: dict = {"file": entry["file"], "const": const, "properties": props}
    code, text = run_cli(path, props, const)
    row["cli_exit"] = code
    row["parsed"] = code == 0
    if code != 0:
        row["cli_error"] = text.splitlines()[-1] if text else ""
        return row
    d = json.loads(text)
    row["cli_initial"] = [r["initial"] for r in d["results"]] if "results" in d else [d["initial"]]
    try:
        ref, model, _ = storm_side(path, props, const, exact=True)
    except Exception as exc:  # noqa: BLE001 - a model Storm's exact engine cannot do is reported, not fatal
        row["storm_exact_error"] = str(exc).strip().splitlines()[-1][:200]
        ref = model = None
    t_ours, t_storm = [], []
    our_vals = dtmc = None
    for _ in range(repeats):
        our_vals, dtmc, t = ours(path, props, const)
        t_ours.append(t)
        _, _, t = storm_side(path, props, const, exact=False)
        t_storm.append(t)
    row.update(states=dtmc.n, reader=dtmc.meta.get("reader", "native"),
               agentguard_read_check_seconds=statistics.median(t_ours),
               storm_parse_build_check_seconds=statistics.median(t_storm),
               agentguard_times=t_ours, storm_times=t_storm)
    row["time_ratio_storm_over_agentguard"] = row["storm_parse_build_check_seconds"] / row[
        "agentguard_read_check_seconds"]
    if ref is not None:
        row["storm_states"] = int(model.nr_states)
        row["max_abs_error_vs_storm_exact"] = compare(dtmc, our_vals, model, ref)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "mc_external.json")
    args = ap.parse_args(argv)
    manifest = json.loads((DATA / "models.json").read_text())
    rows = []
    for entry in manifest["models"]:
        print(entry["file"], file=sys.stderr, flush=True)
        rows.append(run_one(entry, args.repeats))
        r = rows[-1]
        print(f"  parsed={r['parsed']} err={r.get('max_abs_error_vs_storm_exact')} "
              f"ratio={r.get('time_ratio_storm_over_agentguard')} {r.get('cli_error', '')}", file=sys.stderr)
    parsed = [r for r in rows if r["parsed"]]
    errs = [r["max_abs_error_vs_storm_exact"] for r in parsed if "max_abs_error_vs_storm_exact" in r]
    ratios = [r["time_ratio_storm_over_agentguard"] for r in parsed]
    summary = {
        "files": len(rows), "parsed": len(parsed), "parsed_fraction": len(parsed) / len(rows),
        "compared_with_storm_exact": len(errs), "max_abs_error_vs_storm_exact": max(errs) if errs else None,
        "within_1e-9": sum(e <= 1e-9 for e in errs),
        "median_time_ratio_storm_over_agentguard": statistics.median(ratios) if ratios else None,
        "agentguard_faster_on": sum(x > 1 for x in ratios),
        "not_parsed": {r["file"]: r.get("cli_error") for r in rows if not r["parsed"]},
    }
    result = {"command": "nice .venv/bin/python benchmarks/mc_external.py " + " ".join(argv or sys.argv[1:]),
              "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
              "summary": summary, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
