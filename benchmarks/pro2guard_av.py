"""Pro2Guard's autonomous-driving domain (section 4) on the released driving DTMCs.

For each of the 7 models in ../shared/data/pro2guard/av_dtmcs (Apollo scenarios; states are
``collision | reach | law-flag | predicate bits``):

1. the traffic law named in ``abstraction.json["rule"]`` is read from LawBreaker's STL
   (``av_laws.txt``) and reduced to its STL_LB rule ``G(phi_s -> F[0,K] phi_t)`` (Definition 5,
   :mod:`agentguard.spec.stl`); ``phi_s``/``phi_t`` are evaluated on the abstraction's predicate bits
   (an atom the abstraction does not observe is assumed true, as the paper's Example 2 does for
   ``stoplineAhead(2)``);
2. the monitor of Definition 6 (``K`` in steps = LawBreaker's seconds x ``--steps-per-second``; 50,
   because Example 2 writes law 38's ``F[0,2]`` as ``F[0,100]``) is composed with the DTMC and
   ``P[F viol]`` is computed from the initial state; next to it, the DTMC's own predictions from its
   recorded flags: ``P[F law-flag]`` (the simulator's verdict on the law), ``P[F collision]``;
3. the time to build the product and solve it, and the median decision time of a ProductGuard along
   200 sampled runs (RQ3: the paper reports 100.79 +- 16.96 ms per decision for driving).

Table 2 (scenario 3, left turn): ``P[F collision]`` of the abstract states the paper lists, next to
the paper's numbers.

    python benchmarks/pro2guard_av.py [--data ../shared/data] [--steps-per-second 50]

Writes benchmarks/results/pro2guard_av.json.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from agentguard.core.types import Context  # noqa: E402
from agentguard.predictive.checker import reach  # noqa: E402
from agentguard.predictive.guard import ProductGuard  # noqa: E402
from agentguard.predictive.prism import read_pro2guard  # noqa: E402
from agentguard.predictive.traffic import law_products, read_driving_model  # noqa: E402
from agentguard.spec.stl import parse_laws  # noqa: E402

# Table 2 of the paper (scenario 3): state description -> (predicate bits NPC==0, Peds==0, speed>0.5, light==3)
TABLE2 = [
    ("no priority NPC or pedestrian ahead, speed < 0.5 km/h", "0001101", 0.4715),
    ("no priority NPC or pedestrian ahead, speed > 0.5 km/h", "0001111", 0.4158),
    ("priority NPC ahead, speed > 0.5 km/h", "0000111", 0.5678),
    ("collision happened", "1000000", 1.0),
    ("destination reached", "0100000", 0.0),
]


def scenario(folder: Path, laws: dict, steps_per_second: int, runs: int, seed: int) -> dict:
    model, ab = read_driving_model(folder)
    out = {"scenario": folder.name, "states": model.n, "rule_id": ab["rule"], "rules": []}
    init = model.initial
    t0 = time.perf_counter()
    made = law_products(model, ab, laws, unknown="true", steps_per_unit=steps_per_second)
    product_s = (time.perf_counter() - t0) / len(made)      # per rule
    for r, prod, unobserved in made:
        out["law"] = r.law
        K = r.K * steps_per_second
        t0 = time.perf_counter()
        guard = ProductGuard(prod, threshold=0.5).bind_names(model.state_names)
        build_s = product_s + time.perf_counter() - t0
        p_viol = 1.0 - guard.step_probability(model.state_names[init], None)[0]
        # decision time along sampled runs of the DTMC (one lookup + monitor step per decision)
        rng = np.random.default_rng(seed)
        P = model.matrix.tocsr()
        times = []
        for _ in range(runs):
            ctx = Context(run_id="r")
            s = init
            for _t in range(50):
                ctx.state = model.state_names[s]
                a = time.perf_counter()
                guard.check(ctx)
                times.append(time.perf_counter() - a)
                row = P.getrow(s)
                s = int(rng.choice(row.indices, p=row.data / row.data.sum()))
        out["rules"].append({
            "rule": str(r), "K_steps": K, "unobserved_atoms_assumed_true": unobserved,
            "product_states": int(prod.model.n), "build_and_solve_s": round(build_s, 4),
            "P_F_viol_monitor_from_initial": round(p_viol, 4),
            "decision_ms_median": round(1e3 * float(np.median(times)), 4),
            "decision_ms_p99": round(1e3 * float(np.quantile(times, 0.99)), 4),
        })
    lab = model.labels
    out["P_F_law_flag_from_initial"] = round(float(reach(model.matrix, lab["violation"])[init]), 4)
    out["P_F_collision_from_initial"] = round(float(reach(model.matrix, lab["collision"])[init]), 4)
    out["P_F_unsafe_from_initial"] = round(float(reach(model.matrix, lab["unsafe"])[init]), 4)
    out["initial_state"] = model.state_names[init]
    return out


def table2(folder: Path) -> list[dict]:
    model = read_pro2guard(folder)
    pc = reach(model.matrix, model.labels["collision"])
    rows = []
    for text, name, paper in TABLE2:
        v = float(pc[model.state_names.index(name)])
        rows.append({"state": text, "bits": name, "P_collision": round(v, 4), "paper": paper,
                     "difference": round(v - paper, 4)})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--steps-per-second", type=int, default=50)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "pro2guard_av.json"))
    args = ap.parse_args(argv)
    root = Path(args.data) / "pro2guard"
    if not (root / "av_dtmcs").is_dir():
        raise SystemExit(f"no driving DTMCs under {root}/av_dtmcs (pass --data)")
    laws = parse_laws((root / "av_laws.txt").read_text())
    t0 = time.perf_counter()
    scen = [scenario(d, laws, args.steps_per_second, args.runs, args.seed)
            for d in sorted((root / "av_dtmcs").iterdir(), key=lambda p: int(p.name[1:]))]
    t2 = table2(root / "av_dtmcs" / "s3")
    payload = {"command": "python benchmarks/pro2guard_av.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])),
               "seconds": round(time.perf_counter() - t0, 2), "steps_per_second": args.steps_per_second,
               "scenarios": scen, "table2_s3": t2}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=1))
    for s in scen:
        for r in s["rules"]:
            print(f"{s['scenario']:>4} {s['law']:<11} {r['rule']}")
            print(f"      K={r['K_steps']} product {r['product_states']} states, built+solved "
                  f"{r['build_and_solve_s'] * 1e3:.1f} ms; P[F viol] {r['P_F_viol_monitor_from_initial']:.4f} "
                  f"(DTMC law flag {s['P_F_law_flag_from_initial']:.4f}, collision {s['P_F_collision_from_initial']:.4f}); "
                  f"decision {r['decision_ms_median'] * 1e3:.0f} us median; assumed true: "
                  f"{r['unobserved_atoms_assumed_true'] or '-'}")
    print("Table 2 (s3, P[F collision]):")
    for r in t2:
        print(f"  {r['state']:<55} {r['P_collision']:.4f}  paper {r['paper']:.4f}  diff {r['difference']:+.4f}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
