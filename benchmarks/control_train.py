"""Train the Agentic Driving guards (Privileged and ReGuard text-latent) and record the learning curve.

Writes benchmarks/results/control_driving_{privileged,reguard}_full.pt (the weights that
`agentguard bench driving` loads) and benchmarks/results/control_train_{kind}.json with the value-F1
curve against exact value iteration, the wall-clock and CPU time, and the command.

    nice python benchmarks/control_train.py privileged
    nice python benchmarks/control_train.py reguard
    nice python benchmarks/control_train.py reguard --encoder wordllama --iterations 8000 --n-states 20000 \
        --tag embedding_only      # ablation: the sentence embedding without the parsed numbers

Training is single-threaded (torch.set_num_threads(1)); CPU seconds are what a dedicated core needs,
wall seconds include waiting for a shared machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agentguard.control.ddqn import f1_score
from agentguard.bench.driving import FULL_CONFIG, FULL_ITERATIONS, RESULTS, cache_root, eval_states
from agentguard.envs.driving.guard import make_text_encoder, train_privileged, train_text_latent
from agentguard.envs.driving.encoders import StateEncoder
from agentguard.envs.driving.value_iteration import DrivingValueGrid, solve_driving
from agentguard.envs import driving as D


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["privileged", "reguard"])
    ap.add_argument("--iterations", type=int, default=FULL_ITERATIONS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--encoder", default="wordllama+numbers")
    ap.add_argument("--n-states", type=int, default=30_000)
    ap.add_argument("--eval-n", type=int, default=5000)
    ap.add_argument("--tag", default="full")
    a = ap.parse_args()
    gpath = cache_root() / "control" / "driving_vi_r0.05_t64.npz"
    if gpath.exists():
        grid = DrivingValueGrid.load(str(gpath))
    else:
        grid = solve_driving(0.05, 64)
        gpath.parent.mkdir(parents=True, exist_ok=True)
        grid.save(str(gpath))
    ev, truth = eval_states(grid, a.eval_n, seed=0)
    if a.kind == "privileged":
        z = StateEncoder().encode(ev)
    else:
        enc = make_text_encoder(a.encoder)
        z = enc.encode([D.observation_text(s) for s in ev])

    def cb(it, m):
        pred = m.q_values(z).max(1) > 0
        return {"value_f1": f1_score(pred, truth), "value_f1_unsafe": f1_score(~pred, ~truth)}

    t0 = time.perf_counter()
    if a.kind == "privileged":
        m = train_privileged(a.iterations, seed=a.seed, progress=True, callback=cb, **FULL_CONFIG)
    else:
        m = train_text_latent(enc, a.iterations, n_states=a.n_states, seed=a.seed, progress=True, callback=cb,
                              batch_size=1536, **FULL_CONFIG)
    out_pt = RESULTS / f"control_driving_{a.kind}_{a.tag}.pt"
    RESULTS.mkdir(parents=True, exist_ok=True)
    m.save(str(out_pt))
    rep = {
        "command": ("nice " if os.nice(0) > 0 else "") + "python benchmarks/control_train.py " + " ".join(sys.argv[1:]),
        "kind": a.kind, "iterations": a.iterations, "seed": a.seed, "config": {**FULL_CONFIG},
        "meta": m.meta, "wall_seconds_total": time.perf_counter() - t0,
        "final_value_f1": m.history[-1]["value_f1"], "final_value_f1_unsafe": m.history[-1]["value_f1_unsafe"],
        "curve": m.history, "weights": str(out_pt.relative_to(ROOT)),
        "machine": f"{platform.machine()}, shared 2-core machine (other jobs running; wall > CPU)",
    }
    name = f"control_train_{a.kind}.json" if a.tag == "full" else f"control_train_{a.kind}_{a.tag}.json"
    (RESULTS / name).write_text(json.dumps(rep, indent=1, default=float))
    print(json.dumps({k: v for k, v in rep.items() if k != "curve"}, indent=1, default=float))


if __name__ == "__main__":
    main()
