"""Empirical validation of the PAC stopping rule (Algorithm 1 line 11 of Pro2Guard).

For each ground-truth DTMC (known transition matrix, a valid-transition relation that also allows
some transitions of true probability 0, an unsafe target) and each rule variant: repeat
``--repetitions`` times "sample traces from the truth and add them to an incremental DTMCLearner
until ``learner.done``", then compute the reachability error |P_hat[F unsafe] - P[F unsafe]| at the
initial state and at every state. The (epsilon, delta) guarantee holds empirically when the error
exceeds epsilon in at most a delta fraction of the repetitions.

    python benchmarks/learn_pac_validation.py [--repetitions 200] [--epsilon 0.1] [--delta 0.1]

Writes benchmarks/results/learn_pac_validation.json and .png.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from agentguard.predictive.pac_validation import simulate_guarantee

# "embodied": 0 start, 3 unsafe, 4 finish (absorbing); 2 -> 3 valid but of true probability 0
EMBODIED = np.array([
    [0.2, 0.5, 0.3, 0.0, 0.0],
    [0.0, 0.2, 0.0, 0.3, 0.5],
    [0.0, 0.4, 0.0, 0.0, 0.6],
    [0.0, 0.0, 0.0, 1.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 1.0],
])
# "loops": back-and-forth between 0..3, 4 unsafe, 5 finish; 0 -> 2 and 2 -> 4 valid but never taken
LOOPS = np.array([
    [0.3, 0.5, 0.0, 0.0, 0.0, 0.2],
    [0.4, 0.0, 0.4, 0.0, 0.1, 0.1],
    [0.0, 0.3, 0.0, 0.5, 0.0, 0.2],
    [0.0, 0.0, 0.3, 0.0, 0.3, 0.4],
    [0.0, 0.0, 0.0, 0.0, 1.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
])


def truths():
    v1 = EMBODIED > 0
    v1[2, 3] = True
    v2 = LOOPS > 0
    v2[0, 2] = v2[2, 4] = True
    return {
        "embodied": (EMBODIED, v1, np.array([0, 0, 0, 1, 0], bool)),
        "loops": (LOOPS, v2, np.array([0, 0, 0, 0, 1, 0], bool)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=200)
    ap.add_argument("--epsilon", type=float, default=0.1)
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--variants", default="conservative,line11")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--control-traces", type=int, default=20,
                    help="negative control: also stop after this many traces regardless of the rule")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "learn_pac_validation.json"))
    a = ap.parse_args()
    results = []
    t_all = time.perf_counter()
    for name, (P, valid, target) in truths().items():
        for variant in [*(v for v in a.variants.split(",") if v), "control"]:
            t0 = time.perf_counter()

            def progress(i, n, name=name, variant=variant):
                if i % 20 == 0 or i == n:
                    print(f"  {name}/{variant}: {i}/{n} repetitions", file=sys.stderr, flush=True)

            control = variant == "control"
            r = simulate_guarantee(P, 0, target, valid, a.epsilon, a.delta, a.repetitions, alpha=a.alpha,
                                   variant="line11" if control else variant, seed=a.seed, progress=progress,
                                   first_batch=a.control_traces if control else 10,
                                   max_traces=a.control_traces if control else 2_000_000)
            if control:
                r["variant"] = f"control: stop after {a.control_traces} traces"
            r["truth"] = name
            r["seconds"] = time.perf_counter() - t0
            r["guarantee_holds_start"] = r["failure_rate_start"] <= a.delta
            r["guarantee_holds_all_states"] = r["failure_rate_all_states"] <= a.delta
            r["summary"] = {
                "error_start_q50_q90_max": np.quantile(r["error_start"], [0.5, 0.9, 1.0]).tolist(),
                "error_all_states_max": float(np.max(r["error_all_states"])),
                "traces_q10_q50_q90": np.quantile(r["traces"], [0.1, 0.5, 0.9]).tolist(),
                "B_median": float(np.median(r["B"])),
            }
            print(f"{name:9s} {variant:12s} failures(start) {r['failure_rate_start']:.3f} "
                  f"failures(all states) {r['failure_rate_all_states']:.3f} (delta {a.delta}); "
                  f"median traces {np.median(r['traces']):.0f}; max error {max(r['error_all_states']):.4f} "
                  f"(epsilon {a.epsilon}); {r['seconds']:.0f}s", flush=True)
            results.append(r)
    out = {
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "epsilon": a.epsilon, "delta": a.delta, "alpha": a.alpha, "repetitions": a.repetitions, "seed": a.seed,
        "truths": {k: {"P": v[0].tolist(), "valid": v[1].astype(int).tolist(), "unsafe": np.flatnonzero(v[2]).tolist()}
                   for k, v in truths().items()},
        "seconds_total": time.perf_counter() - t_all,
        "results": results,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.6), squeeze=False)
    for ax, r in zip(axes[0], results):
        ax.hist(r["error_all_states"], bins=30, color="tab:blue", alpha=0.75, label="max over states")
        ax.hist(r["error_start"], bins=30, color="tab:orange", alpha=0.75, label="initial state")
        ax.axvline(a.epsilon, color="red", ls="--", label=f"epsilon = {a.epsilon}")
        ax.set_title(f"{r['truth']} / {r['variant']}\nfail {r['failure_rate_all_states']:.3f} (delta {a.delta}), "
                     f"median {np.median(r['traces']):.0f} traces", fontsize=9)
        ax.set_xlabel("|P_hat[F unsafe] - P[F unsafe]|")
        ax.legend(fontsize=7)
    fig.suptitle(f"PAC stopping rule, {a.repetitions} repetitions each", fontsize=10)
    fig.tight_layout()
    fig.savefig(Path(a.out).with_suffix(".png"), dpi=110)
    print(f"wrote {a.out} and {Path(a.out).with_suffix('.png')}")


if __name__ == "__main__":
    main()
