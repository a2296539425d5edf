"""A gemma-3-270m driver whose choice depends on the observation (issue 31), and its shielded rows.

Stages (each merges its section into benchmarks/results/control_driving_driver.json with its command):

- ``measure``: on road states (``D.sample_initial_states(n, seed=31003)``, used by no other choice), the
  choice of each scoring rule of :class:`agentguard.bench.llm_driver.GemmaScoredDriver`: how often it
  differs from the rule's most common choice, the action histogram, how often the chosen action keeps the
  car in the exact safe set (against the same rate of a uniform choice), and agreement with the exact
  grid's best action. ``letters`` (the Appendix C chat scored on A/B/C) runs on the first ``--letters-n``
  states only (it costs ~3x a completion prompt). The rule for the closed loop is chosen here: the most
  state-dependent rule (highest differ-from-mode fraction).
- ``closed``: the chosen driver unguarded, shielded by the frozen text-only ReGuard critic (epsilon 0.2), and
  the Eq. 4 blend ``argmax_a log pi_LM(a|o) + beta Q(z, a)`` with the same critic, beta chosen on validation
  starts (seed ``--val-seed``: lowest failure, ties to the smaller beta) and scored on the first
  ``--episodes`` fresh starts of seed ``--eval-seed`` (the starts of control_driving_fresh.json).

Usage: ``nice -n 19 python benchmarks/control_driving_driver.py measure|closed [options]``.
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

from agentguard.bench.driving import RESULTS  # noqa: E402
from agentguard.bench.driving_fresh import (  # noqa: E402
    bootstrap_ci,
    frozen_filters,
    load_exact_grid,
    machine,
    paired_comparison,
    shield_rollout,
    summarize,
)
from agentguard.bench.llm_driver import RULES, GemmaScoredDriver  # noqa: E402
from agentguard.envs import driving as D  # noqa: E402

OUT = RESULTS / "control_driving_driver.json"


def choice_stats(choice: np.ndarray, safe_next: np.ndarray, best: np.ndarray) -> dict:
    hist = np.bincount(choice, minlength=3)
    mode = int(hist.argmax())
    return {"n": int(len(choice)), "histogram_A_B_C": hist.tolist(), "most_common": D.ACTIONS[mode],
            "differs_from_most_common": float(np.mean(choice != mode)),
            "chosen_action_exactly_safe": float(safe_next[np.arange(len(choice)), choice].mean()),
            "uniform_choice_exactly_safe": float(safe_next.mean()),
            "agrees_with_exact_best_action": float(np.mean(choice == best)),
            "most_common_agrees_with_exact_best": float(np.mean(best == mode))}


def choose_rule(rules: dict) -> dict:
    """Among rules measured on >= 48 states whose choice differs from their most common one on more than
    10% of states, the one whose choice is exactly safe most often (None when no rule varies)."""
    full = {r: v for r, v in rules.items() if v["n"] >= 48 and v["differs_from_most_common"] > 0.1}
    return {"chosen_rule": max(full, key=lambda r: full[r]["chosen_action_exactly_safe"]) if full else None,
            "rule_choice": choose_rule.__doc__.strip().replace("\n   ", "")}


def stage_measure(args) -> None:
    grid = load_exact_grid()
    states = D.sample_initial_states(args.n, seed=args.seed)
    cal = D.sample_initial_states(args.cal_n, seed=args.cal_seed)
    safe_next = np.stack([grid.safe(D.step(states, np.full(len(states), a))) for a in range(3)], 1)
    best = np.stack([grid.value_at(D.step(states, np.full(len(states), a))) for a in range(3)], 1).argmax(1)
    prev = json.loads(OUT.read_text()).get("measure", {}) if OUT.exists() else {}
    out: dict = {"machine": machine(), "rules": prev.get("rules", {})}
    shared = None
    for rule in args.rules.split(","):
        centred = rule.endswith("_centered")
        t0 = time.perf_counter()
        kw = {"model": shared.model, "tokenizer": shared.tokenizer, "cache": shared.cache} if shared else {}
        drv = GemmaScoredDriver(rule=rule.removesuffix("_centered"), **kw)
        shared = drv
        if centred:
            drv.fit_center(cal)
        k = args.letters_n if rule.startswith("letters") else args.n
        sc = drv.scores(states[:k])
        r = choice_stats(sc.argmax(1), safe_next[:k], best[:k])
        r.update({"states": f"D.sample_initial_states({args.n}, seed={args.seed})[:{k}]",
                  "seconds_per_state_incl_cache_hits": (time.perf_counter() - t0) / k,
                  "subtracted": (f"mean over D.sample_initial_states({args.cal_n}, seed={args.cal_seed})" if centred
                                 else "content-free prompt" if rule.endswith("calibrated") else "nothing"),
                  "subtracted_logprobs": (drv.center if centred else drv._cf).tolist(),
                  "score_margin_median": float(np.median(np.sort(sc, 1)[:, -1] - np.sort(sc, 1)[:, -2]))})
        out["rules"][rule] = r
        print(rule, {k2: v for k2, v in r.items() if k2 != "subtracted_logprobs"}, flush=True)
    out.update(choose_rule(out["rules"]))
    out["machine"]["loadavg_end"] = list(os.getloadavg())
    merge_section(OUT, "measure", out, nice=19)


def _run(filt, drv, starts, grid, seed, beta=None):
    if beta is None:
        return shield_rollout(filt, drv, starts, grid, seed)
    return shield_rollout(filt, drv, starts, grid, seed, propose=lambda s, q, rng: drv.blend(s, q, beta))


def stage_closed(args) -> None:
    rep = json.loads(OUT.read_text())
    rule = args.rule or rep["measure"]["chosen_rule"]
    grid = load_exact_grid()
    filt = frozen_filters(grid, names=("reguard",))["reguard"]
    mach = machine()
    drv = GemmaScoredDriver(rule=rule.removesuffix("_centered"))
    if rule.endswith("_centered"):
        drv.fit_center(D.sample_initial_states(args.cal_n, seed=args.cal_seed))
    t0 = time.perf_counter()
    val = D.sample_initial_states(args.val_episodes, seed=args.val_seed)
    betas = [float(b) for b in args.betas.split(",")]
    val_fail = {}
    for b in betas:
        val_fail[b] = float(_run(filt, drv, val, grid, args.val_seed, beta=b)["failure"].mean())
        print(f"validation beta {b}: failure {val_fail[b]:.3f}", flush=True)
    beta = min(betas, key=lambda b: (val_fail[b], b))
    starts = D.sample_initial_states(args.fresh_pool, seed=args.eval_seed)[: args.episodes]
    safe_start = grid.safe(starts)
    rows = {"unguarded": _run(None, drv, starts, grid, args.eval_seed),
            "shield": _run(filt, drv, starts, grid, args.eval_seed)}
    rows["blend"] = _run(filt, drv, starts, grid, args.eval_seed, beta=beta)
    out = {"rule": rule, "critic": "frozen text-only ReGuard (control_driving_kernel_gemma-L4-w16_n5000.npz, "
                                   "epsilon 0.2)",
           "validation": {"seed": args.val_seed, "episodes": args.val_episodes, "failure_by_beta": val_fail,
                          "beta_chosen": beta, "rule": "lowest validation failure, ties to the smaller beta"},
           "eval_seed": args.eval_seed, "episodes": len(starts),
           "starts": f"the first {len(starts)} of D.sample_initial_states({args.fresh_pool}, seed={args.eval_seed})",
           "rows": {}}
    for name, r in rows.items():
        out["rows"][name] = summarize(r, safe_start, args.eval_seed)
        print(name, out["rows"][name]["failure_rate"], out["rows"][name]["failure_ci95"], flush=True)
    out["paired"] = {"shield_vs_unguarded": paired_comparison(rows["shield"]["failure"], rows["unguarded"]["failure"]),
                     "blend_vs_shield": paired_comparison(rows["blend"]["failure"], rows["shield"]["failure"])}
    fresh = json.loads((RESULTS / "control_driving_fresh.json").read_text()).get("main", {})
    if fresh.get("eval_seed") == args.eval_seed and len(fresh["outcomes"]["reguard"]["failure"]) >= len(starts):
        wd = np.asarray(fresh["outcomes"]["reguard"]["failure"][: len(starts)], bool)
        out["weak_driver_shielded_same_starts"] = {"failure_rate": float(wd.mean()), "failure_ci95": bootstrap_ci(wd)}
    out.update({"driver_calls": drv.calls, "seconds": time.perf_counter() - t0,
                "machine": {**mach, "loadavg_end": list(os.getloadavg())}})
    merge_section(OUT, "closed", out, nice=19)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("stage", choices=["measure", "closed"])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--letters-n", type=int, default=16)
    ap.add_argument("--seed", type=int, default=31003)
    ap.add_argument("--rule", default=None)
    ap.add_argument("--rules", default=",".join(RULES))
    ap.add_argument("--cal-n", type=int, default=16)
    ap.add_argument("--cal-seed", type=int, default=31004)
    ap.add_argument("--betas", default="0.3,3,30")
    ap.add_argument("--val-seed", type=int, default=31002)
    ap.add_argument("--val-episodes", type=int, default=10)
    ap.add_argument("--eval-seed", type=int, default=31001)
    ap.add_argument("--fresh-pool", type=int, default=1000)
    ap.add_argument("--episodes", type=int, default=30)
    args = ap.parse_args()
    stage_measure(args) if args.stage == "measure" else stage_closed(args)


if __name__ == "__main__":
    main()
