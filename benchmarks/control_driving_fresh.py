"""The frozen driving guards on fresh starts (issue 31): text-only ReGuard, privileged DDQN, exact filter,
no guard, on N starts from a seed no earlier choice used (see :mod:`agentguard.bench.driving_fresh`).

Stages (each merges its section into benchmarks/results/control_driving_fresh.json with its command):

- ``main``: closed loop of every guard on the same N starts, bootstrap intervals, paired comparisons
  against privileged and exact, crash from exactly-safe starts, wrongly-unsafe rate, value F1 on fresh nodes
  (the same as ``agentguard bench driving --eval-seed S --episodes N --json``);
- ``templates``: held-out observation renderings (written after the critics were frozen) for the text-only
  critic on the fresh nodes and in closed loop on the first K starts of ``main``.

Usage: ``nice -n 19 python benchmarks/control_driving_fresh.py main --eval-seed 31001 --episodes 1000``
then ``... templates --eval-seed 31001 --starts 100``. ``--text-budget SECONDS`` bounds the text-only
closed loop (gemma at every decision; the 2 cores are shared): it is scored on the prefix of starts it
finished in chunks of 50, every guard is also summarised on that prefix, and the JSON says how many.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sections import merge_section  # noqa: E402

from agentguard.bench.driving import RESULTS, eval_states  # noqa: E402
from agentguard.bench.driving_fresh import (  # noqa: E402
    frozen_filters,
    load_exact_grid,
    machine,
    run_fresh_eval,
    template_robustness,
)
from agentguard.envs import driving as D  # noqa: E402

OUT = RESULTS / "control_driving_fresh.json"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("stage", choices=["main", "templates"])
    ap.add_argument("--eval-seed", type=int, default=31001)
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--starts", type=int, default=0)
    ap.add_argument("--text-budget", type=float, default=None, help="seconds for the text-only closed loop")
    args = ap.parse_args()
    if args.stage == "main":
        partial = OUT.with_name("control_driving_fresh_partial.json")

        def save(done, n):  # the text-only outcomes so far (a prefix of the starts), in case the run is cut
            partial.write_text(json.dumps({"eval_seed": args.eval_seed, "starts_done": n,
                                           "failure": done["failure"].astype(int).tolist()}) + "\n")

        rep = run_fresh_eval(args.eval_seed, args.episodes, nodes=args.nodes, quiet=False, templates=False,
                             text_budget_s=args.text_budget, on_chunk=save)
        merge_section(OUT, "main", rep, nice=19)
        return
    t0, mach = time.perf_counter(), machine()
    grid = load_exact_grid()
    filt = frozen_filters(grid, names=("reguard",))["reguard"]
    k, starts, canon = 0, np.zeros((0, 3)), np.zeros(0, bool)
    if args.starts:  # closed loop on the first starts of main: their canonical outcomes come from main
        prev = json.loads(OUT.read_text())["main"]
        if prev["eval_seed"] != args.eval_seed:
            raise SystemExit(f"main was scored on seed {prev['eval_seed']}, not {args.eval_seed}")
        k = min(args.starts, len(prev["outcomes"]["reguard"]["failure"]))
        starts = D.sample_initial_states(prev["episodes"], seed=args.eval_seed)[:k]
        canon = np.asarray(prev["outcomes"]["reguard"]["failure"][:k], bool)
    nodes = eval_states(grid, args.nodes, seed=args.eval_seed)
    res = template_robustness(filt, grid, nodes, starts, args.eval_seed, canon,
                              lambda m: print(m, file=sys.stderr, flush=True))
    res.update({"eval_seed": args.eval_seed, "machine": {**mach, "loadavg_end": list(os.getloadavg())},
                "seconds": time.perf_counter() - t0})
    merge_section(OUT, "templates", res, nice=19)


if __name__ == "__main__":
    main()
