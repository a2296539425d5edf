"""Switching threshold sweep for the learned driving filters -> results/control_epsilon.json.

The filter intervenes when Q(z, a_task) <= epsilon (section 3.3). A learned Q that overestimates
safety near the boundary needs a small positive epsilon. This sweep uses *validation* starts
(seed 1), disjoint from the evaluation starts of `agentguard bench driving` (seed 0).

    nice python benchmarks/control_epsilon.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agentguard.control.ddqn import QModel
from agentguard.bench.driving import RESULTS, rollout
from agentguard.envs.driving.guard import make_filter, make_text_encoder
from agentguard.envs import driving as D


def main() -> None:
    t0 = time.perf_counter()
    priv = QModel.load(str(RESULTS / "control_driving_privileged_full.pt"))
    text = QModel.load(str(RESULTS / "control_driving_reguard_full.pt"))
    enc = make_text_encoder(text.meta["encoder"].replace("wordllama-64", "wordllama").replace("driving-numbers", "numbers"))
    starts = D.sample_initial_states(200, seed=1)
    rows = []
    for eps in (0.0, 0.02, 0.05, 0.1, 0.15):
        for name, f in (("privileged", make_filter("privileged", priv, epsilon=eps)),
                        ("reguard", make_filter("reguard", text, enc, epsilon=eps))):
            r = rollout(f, D.weak_driver_policy, starts, seed=1)
            row = {"guard": name, "epsilon": eps, "success_rate": float(r.success.mean()),
                   "failure_rate": float(r.failure.mean()), "intervention_rate": r.interventions / max(1, r.decisions)}
            rows.append(row)
            print(row, flush=True)
    rep = {"command": "nice python benchmarks/control_epsilon.py", "starts_seed": 1, "episodes": 200,
           "base_policy": "weak", "rows": rows, "seconds": time.perf_counter() - t0}
    (RESULTS / "control_epsilon.json").write_text(json.dumps(rep, indent=1))


if __name__ == "__main__":
    main()
