"""Reproduce the protocol of Figures 1, 2 and 4 of the online-safety-monitoring paper on the
e-valuator data (math, gsm8k, hotpotqa): 10 random calibration/test splits (20 % calibration, as in
the authors' notebook), alpha in 0.05..0.3, delta = 0.1.

* false-alarm control: CRC, UCB (Hoeffding-Bentkus), e-valuator anytime and PAC -> false alarm rate
  (with the identity line), power, detection delay (fraction of the sequence seen at the alarm);
* missed-detection control (Appendix B): CRC and UCB -> missed detection rate (identity line),
  false alarm rate, detection delay.

For CRC and UCB it also computes, exactly, the mean test risk over *every* possible split of the same
size (agentguard.bench.calibration_exact: the limit the 10-split mean estimates, i.e. the left side of Eq. 3
for this data set), drawn as a dotted line in the controlled-risk row.

Writes benchmarks/results/calib_protocol.json (every number, per split) and
calib_false_alarm.png, calib_missed_detection.png.

    python benchmarks/calib_protocol.py [--data ../shared/data] [--splits 10] [--seed 0]
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

from agentguard.bench.calibration import ALL_METHODS, run_protocol
from agentguard.bench.calibration_exact import split_expected_risk, split_violation_probability
from agentguard.calibration.data import load_signals

DATASETS = {"math": "math_w_scores_compressed.csv.gz", "gsm8k": "gsm8k_w_scores_compressed.csv.gz",
            "hotpotqa": "hotpotqa_w_scores_compressed.csv.gz"}
ALPHAS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3]
NAMES = {"crc": "CRC", "ucb": "UCB", "evaluator-anytime": "E-valuator-anytime", "evaluator-pac": "E-valuator-PAC"}
COLORS = {"crc": "seagreen", "ucb": "crimson", "evaluator-anytime": "steelblue", "evaluator-pac": "darkorange"}


def plot(results: dict, risk: str, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if risk == "false_alarm":
        rows = [("false_alarm_rate", "False alarm rate", True), ("power", "Power", False),
                ("detection_delay", "Detection delay", False)]
    else:
        rows = [("missed_detection_rate", "Missed detection rate", True),
                ("false_alarm_rate", "False alarm rate", False), ("detection_delay", "Detection delay", False)]
    ds_names = list(results)
    n_rows = len(rows) + 1       # + a zoom on (controlled risk - alpha) for CRC and UCB
    fig, axes = plt.subplots(n_rows, len(ds_names), figsize=(4.2 * len(ds_names), 2.6 * n_rows),
                             sharex=True, squeeze=False)
    for c, ds in enumerate(ds_names):
        res = results[ds][risk]["results"]
        for r, (metric, label, identity) in enumerate(rows):
            ax = axes[r, c]
            for m, v in res.items():
                a = np.array(v["alphas"])
                mean = np.array([np.nan if x is None else x for x in v["mean"][metric]], dtype=float)
                lo = np.array([np.nan if x is None else x for x in v["q10"][metric]], dtype=float)
                hi = np.array([np.nan if x is None else x for x in v["q90"][metric]], dtype=float)
                ax.plot(a, mean, marker="o", ms=3, color=COLORS[m], label=NAMES[m])
                ax.fill_between(a, lo, hi, color=COLORS[m], alpha=0.18)
                if identity and "exact_mean" in v:
                    ax.plot(a, v["exact_mean"], ":", lw=1.6, color=COLORS[m],
                            label=f"{NAMES[m]}, mean over all splits (exact)")
            if identity:
                ax.plot(a, a, "--", color="gray", lw=1, label=r"$\alpha$")
            if r == 0:
                ax.set_title(f"{ds} ({risk.replace('_', ' ')} control)")
            if c == 0:
                ax.set_ylabel(label)
            ax.grid(alpha=0.3)
        # zoom: controlled risk minus alpha; 10-split mean +- 2 standard errors, and the exact all-split mean
        ax = axes[-1, c]
        key = rows[0][0]
        for j, m in enumerate(("crc", "ucb")):
            v = res[m]
            a = np.array(v["alphas"])
            mean = np.array(v["mean"][key], dtype=float) - a
            se = np.array(v["std"][key], dtype=float) / np.sqrt(len(v["per_split"][key]))
            ax.errorbar(a + (j - 0.5) * 0.006, mean, yerr=2 * se, fmt="o", ms=3, capsize=2, color=COLORS[m],
                        label=f"{NAMES[m]}: 10-split mean $\\pm$ 2 s.e.")
            ax.plot(a, np.array(v["exact_mean"]) - a, ":", lw=1.6, color=COLORS[m],
                    label=f"{NAMES[m]}: mean over all splits (exact)")
        ax.axhline(0, color="gray", ls="--", lw=1)
        if c == 0:
            ax.set_ylabel(f"{rows[0][1].lower()} $-\\ \\alpha$")
        ax.set_xlabel(r"tolerance $\alpha$")
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7, loc="upper left")
    axes[-1, 0].legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    ap.add_argument("--tag", default="", help="suffix of the output names (e.g. _100splits)")
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated subset of math,gsm8k,hotpotqa")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/calib_protocol.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    results: dict = {}
    t_all = time.perf_counter()
    for ds in args.datasets.split(","):
        if ds not in DATASETS:
            raise SystemExit(f"unknown dataset {ds!r}; expected one of {', '.join(DATASETS)}")
        fname = DATASETS[ds]
        path = Path(args.data) / "evaluator" / fname
        data = load_signals(path)
        results[ds] = {}
        for risk, methods in (("false_alarm", ALL_METHODS), ("missed_detection", ("crc", "ucb"))):
            t0 = time.perf_counter()
            results[ds][risk] = run_protocol(data, methods=methods, risk=risk, alphas=ALPHAS, delta=args.delta,
                                             splits=args.splits, seed=args.seed)
            for m in ("crc", "ucb"):
                v = results[ds][risk]["results"][m]
                v["exact_mean"] = [split_expected_risk(data, risk=risk, method=m, alpha=a, delta=args.delta,
                                                       cal_frac=results[ds][risk]["config"]["cal_frac"])["mean"]
                                   for a in ALPHAS]
                viol = [split_violation_probability(data, risk=risk, method=m, alpha=a, delta=args.delta,
                                                    cal_frac=results[ds][risk]["config"]["cal_frac"])
                        for a in ALPHAS]
                v["exact_violation_share"] = [x["p"] for x in viol]
                v["exact_violation_share_is_exact"] = viol[0]["exact"]   # else an upper bound (tied minima)
            print(f"[{ds}] {risk}: {time.perf_counter() - t0:.1f}s", flush=True)
            for m, v in results[ds][risk]["results"].items():
                key = v["controlled_metric"]
                means = ", ".join(f"{x:.3f}" for x in v["mean"][key])
                print(f"    {m:<18} mean {key} over alphas {ALPHAS}: {means}; violating splits "
                      f"{v['violating_splits']}", flush=True)
    # the claims checked: mean test risk <= alpha (CRC: the 10-split sample mean, and the exact mean over
    # all splits, which is what Eq. 3 bounds), violations in <= delta of splits (UCB)
    checks = {}
    for ds in results:
        for risk in results[ds]:
            for m, v in results[ds][risk]["results"].items():
                key = v["controlled_metric"]
                mean_ok = all(x <= a + 1e-12 for x, a in zip(v["mean"][key], ALPHAS))
                # the 10-split mean is an estimate: also report mean - alpha in standard errors
                se = [s_ / np.sqrt(args.splits) for s_ in v["std"][key]]
                z = [(x - a) / s_ if s_ > 0 else 0.0 for x, a, s_ in zip(v["mean"][key], ALPHAS, se)]
                viol_ok = all(f <= args.delta + 1e-12 for f in v["violation_frequency"])
                exact = v.get("exact_mean")
                checks[f"{ds}/{risk}/{m}"] = {"mean_risk_le_alpha": mean_ok,
                                              "exact_mean_over_all_splits": (None if exact is None else
                                                                             [round(x, 5) for x in exact]),
                                              "exact_mean_le_alpha": (None if exact is None else
                                                                      all(x <= a for x, a in zip(exact, ALPHAS))),
                                              "violation_share_over_all_splits": (
                                                  None if exact is None else
                                                  [round(x, 4) for x in v["exact_violation_share"]]),
                                              "violation_share_is_exact": v.get("exact_violation_share_is_exact"),
                                              "mean_minus_alpha_in_se": [round(float(x), 2) for x in z],
                                              "violating_splits": v["violating_splits"],
                                              "violation_freq_le_delta": viol_ok}
    payload = {"command": command, "seconds": round(time.perf_counter() - t_all, 2), "alphas": ALPHAS,
               "delta": args.delta, "splits": args.splits, "seed": args.seed, "checks": checks,
               "results": results}
    (out / f"calib_protocol{args.tag}.json").write_text(json.dumps(payload, indent=1))
    plot(results, "false_alarm", out / f"calib_false_alarm{args.tag}.png")
    plot(results, "missed_detection", out / f"calib_missed_detection{args.tag}.png")
    print(f"wrote {out}/calib_protocol{args.tag}.json, calib_false_alarm{args.tag}.png, "
          f"calib_missed_detection{args.tag}.png")
    for k, v in checks.items():
        print(f"  {k:<42} {args.splits}-split mean<=alpha: {v['mean_risk_le_alpha']!s:<5} (mean-alpha in SE: "
              f"{v['mean_minus_alpha_in_se']})  exact all-split mean<=alpha: {v['exact_mean_le_alpha']}  "
              f"violations<=delta: {v['violation_freq_le_delta']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
