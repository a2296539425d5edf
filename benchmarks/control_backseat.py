"""Backseat AI Driver with scripted human proxies (Tables 3 and 4 style) -> results/control_backseat.json.

    nice python benchmarks/control_backseat.py [--episodes 200]

The recommended action is the exact fallback (the paper appends the Privileged answer to the AI's
prompt); the AI's advice is a calm or an urgent sentence. Full: the AI advises every step. Shielded:
the AI speaks only when the exact monitor says the human's intended action is unsafe
(Q(s, a_H) <= tol). Human alone: the weak scripted driver.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agentguard.bench.driving import cache_root
from agentguard.envs.driving.value_iteration import DrivingValueGrid, solve_driving
from agentguard.envs import backseat as B
from agentguard.envs import driving as D


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    t0 = time.perf_counter()
    gpath = cache_root() / "control" / "driving_vi_r0.05_t64.npz"
    grid = DrivingValueGrid.load(str(gpath)) if gpath.exists() else solve_driving(0.05, 64)
    starts = D.sample_initial_states(a.episodes, seed=a.seed)
    rec = lambda s: int(grid.fallback(s[None])[0])
    shield = lambda s, ah: bool(grid.q_values(s[None])[0, ah] <= grid.tol)
    rows = []
    for persona in B.PERSONAS:
        human = B.ScriptedHuman(persona)
        rows.append({"persona": persona, "setting": "human alone",
                     **B.run_backseat(human, None, rec, starts, a.seed)})
        for urgent in (False, True):
            adv = (lambda s, act, u=urgent: B.advice_text(act, u))
            style = "urgent advice" if urgent else "calm advice"
            rows.append({"persona": persona, "setting": f"full, {style}",
                         **B.run_backseat(human, adv, rec, starts, a.seed)})
            rows.append({"persona": persona, "setting": f"shielded, {style}",
                         **B.run_backseat(human, adv, rec, starts, a.seed, shield=shield)})
    rep = {"command": "nice python benchmarks/control_backseat.py " + " ".join(sys.argv[1:]),
           "episodes": a.episodes, "starts_in_exact_safe_set": float(grid.safe(starts).mean()),
           "rows": rows, "seconds": time.perf_counter() - t0}
    (ROOT / "benchmarks" / "results" / "control_backseat.json").write_text(json.dumps(rep, indent=1))
    for r in rows:
        print(f"{r['persona']:7s} {r['setting']:26s} success {r['success_rate']:.3f} failure {r['failure_rate']:.3f}"
              f" interventions {r['intervention_rate']}")


if __name__ == "__main__":
    main()
