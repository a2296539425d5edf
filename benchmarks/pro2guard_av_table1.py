"""Pro2Guard Table 1 (advance warning, driving) against what the release allows, and the Table 2 gap.

What the release holds: the 7 learned driving DTMCs (s1, s2, s3, s4, s5, s9, s10), and the paper's
own warning logs ``av_warning_logs/log_030|050|070`` (seconds per scenario s1..s9, s8 included, or
"violated but not detected!"). It does *not* hold the time-stamped simulator runs (Apollo/LGSVL) the
warning times were measured on, so a wall-clock advance-warning time cannot be recomputed from it.
What this script computes instead, all from the released files:

1. which paper column each log file is (matching the numbers; scenario names matched on the column
   that agrees), how many of the paper's 21 cells the logs reproduce to 0.01 s, and the detections the
   logs record as missed (the paper states a 100% detection rate);
2. from each released DTMC: the predicted violation probability P_viol of the scenario's property
   (law flag for a law, collision for "No Collision") at the initial abstract state, and whether the
   alarm fires already there at each threshold (then the warning is the whole time to the violation
   and the same for every threshold that fires there);
3. Table 2 (s3): P[F collision] of the three listed states under Laplace smoothing alpha in
   {1, 0.5, 0.1, 0.01} on the counts recovered from the released fractions, with each state's visits.

    python benchmarks/pro2guard_av_table1.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from agentguard.predictive.checker import reach  # noqa: E402

# Paper Table 1 (Pro2Guard columns), rows 1..7: (property, {theta: seconds})
PAPER_T1 = [("Law38_2", (15.84, 15.84, 15.84)), ("Law51_5", (13.41, 13.41, 13.41)),
            ("No Collision", (0.34, 1.76, 23.87)), ("Law51_5", (0.01, 0.01, 15.15)),
            ("Law51_5", (6.22, 9.33, 21.06)), ("No Collision", (12.57, 23.02, 38.66)), ("Law53", (0.77, 0.77, 0.77))]
PAPER_THETAS = (0.3, 0.5, 0.7)
TABLE2 = [("0001101", 0.4715), ("0001111", 0.4158), ("0000111", 0.5678)]


def read_log(path: Path) -> dict:
    vals, missed = {}, 0
    for line in path.read_text().splitlines():
        if "not detected" in line:
            missed += 1
        elif "," in line:
            k, v = line.split(",", 1)
            vals[k.strip()] = float(v)
    return {"warning_s": vals, "violated_not_detected": missed}


def load_model(folder: Path):
    m = json.loads((folder / "model.json").read_text())
    st = m["states"]
    ix = {s: i for i, s in enumerate(st)}
    P = np.zeros((len(st), len(st)))
    for a, row in m["transition_probs"].items():
        for b, p in row.items():
            P[ix[a], ix[b]] = float(Fraction(p))
    init = int(m.get("initial", 0)) if isinstance(m.get("initial"), int) else 0
    prism = (folder / "dtmc.prism").read_text()
    if " init " in prism:
        init = int(prism.split(" init ")[1].split(";")[0])
    return m, st, ix, P, init


def counts_from_fractions(row: dict) -> dict:
    """(n_ij + 1) / (n_i + k_i) reduced -> n_ij, with the smallest common denominator."""
    fr = {b: Fraction(p) for b, p in row.items()}
    D = 1
    for p in fr.values():
        D = D * p.denominator // math.gcd(D, p.denominator)
    return {b: int(p * D) - 1 for b, p in fr.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "pro2guard_av_table1.json"))
    a = ap.parse_args(argv)
    root = Path(a.data) / "pro2guard"
    logs = {p.name: read_log(p) for p in sorted((root / "av_warning_logs").iterdir())}
    # 1. which log is which paper column: match scenario names on the column with most exact agreements
    mapping_cols = {}
    best = None
    for ln, lg in logs.items():
        for c, th in enumerate(PAPER_THETAS):
            col = [r[1][c] for r in PAPER_T1]
            hits = sum(any(abs(v - x) < 0.01 for v in lg["warning_s"].values()) for x in col)
            mapping_cols[(ln, th)] = hits
            if best is None or hits > best[0]:
                best = (hits, ln, c)
    _, ln0, c0 = best
    scen_of_row = {}
    for i, r in enumerate(PAPER_T1):
        for s, v in logs[ln0]["warning_s"].items():
            if abs(v - r[1][c0]) < 0.01 and s not in scen_of_row.values():
                scen_of_row[i] = s
                break
    col_of_log = {}
    for ln, lg in logs.items():
        agree = {th: sum(abs(lg["warning_s"].get(scen_of_row.get(i, ""), -99) - r[1][c]) < 0.01
                         for i, r in enumerate(PAPER_T1)) for c, th in enumerate(PAPER_THETAS)}
        col_of_log[ln] = {"paper_theta": max(agree, key=agree.get), "cells_agreeing": agree}
    rows = []
    for i, r in enumerate(PAPER_T1):
        s = scen_of_row.get(i)
        row = {"paper_row": i + 1, "property": r[0], "release_scenario": s, "paper": dict(zip(map(str, PAPER_THETAS), r[1])),
               "logs": {}}
        for ln, info in col_of_log.items():
            row["logs"][f"{ln} (paper theta {info['paper_theta']})"] = logs[ln]["warning_s"].get(s)
        # 2. from the DTMC, where released
        folder = root / "av_dtmcs" / (s or "none")
        if s and folder.is_dir():
            m, st, ix, P, init = load_model(folder)
            bit = 0 if r[0] == "No Collision" else 2     # collision | reach | law-flag | predicates
            target = np.array([x[bit] == "1" for x in st])
            pv = reach(sp.csr_matrix(P), target)
            p0 = float(pv[init])
            row["dtmc"] = {"states": len(st), "initial_state": st[init], "label": "collision" if bit == 0 else "law-flag",
                           "P_viol_initial": round(p0, 4),
                           "alarm_at_initial_state": {str(th): p0 > 1 - th for th in PAPER_THETAS},
                           "share_of_states_alarmed": {str(th): round(float(np.mean(pv[~target] > 1 - th)), 3)
                                                       for th in PAPER_THETAS}}
            fired = [th for th in PAPER_THETAS if p0 > 1 - th]
            logged = {th: logs[ln]["warning_s"].get(s) for ln, info in col_of_log.items()
                      for th in [info["paper_theta"]]}
            vals = [logged[th] for th in fired if logged.get(th) is not None]
            # an alarm at the initial state means the whole run is warned: equal times at those thresholds
            row["dtmc"]["consistent_with_logs"] = (None if len(vals) < 2 else bool(max(vals) - min(vals) < 0.01))
        else:
            row["dtmc"] = None
        rows.append(row)
    paper_cells = sum(1 for r in rows for _ in PAPER_THETAS)
    reproduced = 0
    for r in rows:
        for ln, info in col_of_log.items():
            v = logs[ln]["warning_s"].get(r["release_scenario"])
            if v is not None and abs(v - r["paper"][str(info["paper_theta"])]) < 0.01:
                reproduced += 1
    # 3. Table 2 gap
    m, st, ix, P, init = load_model(root / "av_dtmcs" / "s3")
    coll = np.array([x[0] == "1" for x in st])
    cnt = {s: counts_from_fractions(row) for s, row in m["transition_probs"].items()}
    sweep = {}
    for alpha in (1.0, 0.5, 0.1, 0.01):
        Q = np.zeros_like(P)
        for s in st:
            c = cnt.get(s)
            if c is None or coll[ix[s]]:
                Q[ix[s], ix[s]] = 1.0
                continue
            tot, k = sum(c.values()), len(c)
            for b, n in c.items():
                Q[ix[s], ix[b]] = (n + alpha) / (tot + alpha * k)
        pc = reach(sp.csr_matrix(Q), coll)
        sweep[str(alpha)] = {b: round(float(pc[ix[b]]), 4) for b, _ in TABLE2}
    t2 = {"paper": {b: p for b, p in TABLE2}, "alpha_sweep": sweep,
          "visits": {b: sum(cnt[b].values()) for b, _ in TABLE2}, "successors_per_row": {b: len(cnt[b]) for b, _ in TABLE2}}
    out = {"command": "python benchmarks/pro2guard_av_table1.py " + " ".join(shlex.quote(x) for x in (argv or sys.argv[1:])),
           "what_the_release_allows": "DTMCs and the paper's own warning-time logs; no time-stamped simulator runs, so "
                                      "wall-clock warning times cannot be recomputed, only the logs compared with the "
                                      "paper and the DTMCs' alarm predictions at the initial state",
           "log_to_paper_column": col_of_log, "scenario_of_paper_row": {str(k + 1): v for k, v in scen_of_row.items()},
           "paper_cells": paper_cells, "paper_cells_reproduced_by_logs": reproduced,
           "violated_not_detected_in_logs": {ln: lg["violated_not_detected"] for ln, lg in logs.items()},
           "rows": rows, "table2_s3": t2,
           "dtmc_consistent_with_logs": [r["dtmc"]["consistent_with_logs"] for r in rows if r["dtmc"]]}
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(json.dumps({k: out[k] for k in ("log_to_paper_column", "paper_cells_reproduced_by_logs",
                                           "violated_not_detected_in_logs")}, indent=1))
    for r in rows:
        print(r["paper_row"], r["release_scenario"], r["paper"], r["logs"], r["dtmc"] and r["dtmc"]["P_viol_initial"],
              r["dtmc"] and r["dtmc"]["alarm_at_initial_state"])
    print(t2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
