"""The monitoring comparison in the shape of Figures 1-2 of the online-safety-monitoring paper, and the
paper's qualitative claims (section 4.1, Fig. 1 text) checked one by one against our measurements.

Input: the protocol results of benchmarks/calib_protocol.py (default the 100-split run,
calib_protocol_100splits.json: CRC, UCB, e-valuator anytime and PAC on math, gsm8k and hotpotqa,
alpha 0.05..0.3, delta 0.1, false-alarm control). Nothing is recomputed here: this reads the per-split
means and standard deviations and writes

* benchmarks/results/calib_compare.json: one table row per (data set, alpha, method) with false alarm
  rate, power and detection delay (mean and std over splits), and ``claims``: each claim, the criterion
  we used to decide it, the measured numbers and holds / does not hold per data set;
* benchmarks/results/calib_compare.png: power against the realised false alarm rate (matched-risk
  view of "competitive") and detection delay against alpha, per data set.

    python benchmarks/calib_compare.py [--protocol benchmarks/results/calib_protocol_100splits.json]
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
METHODS = ("crc", "ucb", "evaluator-anytime", "evaluator-pac")
METRICS = ("false_alarm_rate", "power", "detection_delay")
ON_PAR = 0.05  # "on par" / "competitive": power within 0.05 (absolute), stated with every claim


def _claims(res: dict, alphas: list[float], splits: int) -> list[dict]:
    def m(meth, k):
        return res[meth]["mean"][k]

    def sd(meth, k):
        return res[meth]["std"][k]

    se = lambda meth, k, i: sd(meth, k)[i] / math.sqrt(splits)  # noqa: E731
    out = []
    # C1 risk control
    far_ok = {}
    for meth in METHODS:
        if meth == "crc" and res[meth].get("exact_mean"):
            vals = res[meth]["exact_mean"]
            far_ok[meth] = all(v <= a + 1e-12 for v, a in zip(vals, alphas))
        else:
            far_ok[meth] = all(m(meth, "false_alarm_rate")[i] <= a + 2 * se(meth, "false_alarm_rate", i)
                               for i, a in enumerate(alphas))
    out.append({"claim": "UCB, e-valuator-anytime and e-valuator-PAC control the false alarm rate; CRC meets its "
                         "in-expectation guarantee",
                "criterion": "mean FAR <= alpha + 2 SE at every alpha (CRC: exact mean over all splits <= alpha)",
                "measured": far_ok, "holds": all(far_ok.values())})
    # C2 anytime highest power at small alpha
    small = [i for i, a in enumerate(alphas) if a <= 0.1]
    best = {alphas[i]: max(METHODS, key=lambda k: m(k, "power")[i]) for i in small}
    out.append({"claim": "e-valuator-anytime has the highest power at small tolerance levels",
                "criterion": "anytime has the largest mean power at alpha 0.05 and 0.1",
                "measured": {"best_method": best}, "holds": all(v == "evaluator-anytime" for v in best.values())})
    # C3 PAC vs UCB on par
    d = [m("evaluator-pac", "power")[i] - m("ucb", "power")[i] for i in range(len(alphas))]
    out.append({"claim": "e-valuator-PAC and UCB are on par in power",
                "criterion": f"|power(PAC) - power(UCB)| <= {ON_PAR} at every alpha",
                "measured": {"pac_minus_ucb": d}, "holds": all(abs(x) <= ON_PAR for x in d)})
    # C4 CRC > UCB power
    d = [m("crc", "power")[i] - m("ucb", "power")[i] for i in range(len(alphas))]
    out.append({"claim": "CRC yields higher power than UCB",
                "criterion": "power(CRC) >= power(UCB) at every alpha (ties: discrete scores give both the same "
                             "threshold) and > on average",
                "measured": {"crc_minus_ucb": d}, "holds": all(x >= 0 for x in d) and sum(d) > 0})
    # C5 e-valuators later
    later = {}
    for ev in ("evaluator-anytime", "evaluator-pac"):
        for rc in ("crc", "ucb"):
            later[f"{ev} - {rc}"] = [m(ev, "detection_delay")[i] - m(rc, "detection_delay")[i]
                                     for i in range(len(alphas))]
    out.append({"claim": "the e-valuator monitors detect later than CRC and UCB",
                "criterion": "delay(e-valuator) > delay(CRC) and > delay(UCB) at every alpha, both e-valuators",
                "measured": later, "holds": all(x > 0 for v in later.values() for x in v)})
    # C6 CRC slightly ahead of UCB
    d = [m("crc", "detection_delay")[i] - m("ucb", "detection_delay")[i] for i in range(len(alphas))]
    out.append({"claim": "CRC detects slightly earlier than UCB", "criterion": "delay(CRC) <= delay(UCB) at every alpha",
                "measured": {"crc_minus_ucb": d}, "holds": all(x <= 0 for x in d)})
    # C7 about half the sequence
    dl = {k: sum(m(k, "detection_delay")) / len(alphas) for k in ("crc", "ucb")}
    out.append({"claim": "CRC and UCB flag incorrect sequences after about half the sequence",
                "criterion": "mean delay over alphas in [0.4, 0.6]", "measured": dl,
                "holds": all(0.4 <= v <= 0.6 for v in dl.values())})
    # headline
    comp = []
    for i in range(len(alphas)):
        ev = max(m("evaluator-anytime", "power")[i], m("evaluator-pac", "power")[i])
        rc = max(m("crc", "power")[i], m("ucb", "power")[i])
        comp.append(rc - ev)
    out.append({"claim": "headline: the risk-control monitor is competitive with the e-valuator (power) while detecting "
                         "earlier",
                "criterion": f"max(power CRC, UCB) >= max(power e-valuators) - {ON_PAR} at every alpha, and C5 holds",
                "measured": {"best_rc_minus_best_evaluator_power": comp},
                "holds": all(x >= -ON_PAR for x in comp) and out[4]["holds"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--protocol", default=str(REPO / "benchmarks" / "results" / "calib_protocol_100splits.json"))
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "calib_compare.json"))
    a = ap.parse_args()
    src = json.loads(Path(a.protocol).read_text())
    alphas, splits = src["alphas"], src["splits"]
    table, claims = [], {}
    for ds, r in src["results"].items():
        res = r["false_alarm"]["results"]
        for i, al in enumerate(alphas):
            for meth in METHODS:
                row = {"dataset": ds, "alpha": al, "method": meth}
                for k in METRICS:
                    row[k] = res[meth]["mean"][k][i]
                    row[k + "_std"] = res[meth]["std"][k][i]
                table.append(row)
        claims[ds] = _claims(res, alphas, splits)
    names = [c["claim"] for c in claims[next(iter(claims))]]
    summary = [{"claim": n, **{ds: claims[ds][j]["holds"] for ds in claims}} for j, n in enumerate(names)]
    out = {"command": "python " + " ".join(shlex.quote(x) for x in sys.argv), "source": Path(a.protocol).name,
           "splits": splits, "alphas": alphas, "delta": src["delta"],
           "note": "the paper's Figure 1 is on MATH (Claude 3.5 Haiku and Mistral-7B, Qwen PRM); our math file is the "
                   "e-valuator release's (Claude 3.5 Haiku, math-shepherd PRM). Its Figure 2 data (FineHarm, "
                   "Anthropic Red Teaming) are not available offline; gsm8k and hotpotqa stand in for the second figure.",
           "table": table, "claims": claims, "claims_summary": summary}
    Path(a.out).write_text(json.dumps(out, indent=1))
    plot(table, list(src["results"]), Path(a.out).with_suffix(".png"))
    for s in summary:
        print(s)


def plot(table: list[dict], datasets: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"crc": "seagreen", "ucb": "crimson", "evaluator-anytime": "steelblue", "evaluator-pac": "darkorange"}
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.2 * len(datasets), 6.4), squeeze=False)
    for c, ds in enumerate(datasets):
        for meth in METHODS:
            rows = [r for r in table if r["dataset"] == ds and r["method"] == meth]
            axes[0][c].plot([r["false_alarm_rate"] for r in rows], [r["power"] for r in rows], "o-",
                            color=colors[meth], ms=3, label=meth)
            axes[1][c].plot([r["alpha"] for r in rows], [r["detection_delay"] for r in rows], "o-",
                            color=colors[meth], ms=3, label=meth)
        axes[0][c].set_title(ds)
        axes[0][c].set_xlabel("realised false alarm rate")
        axes[0][c].set_ylabel("power")
        axes[1][c].set_xlabel("alpha")
        axes[1][c].set_ylabel("detection delay (fraction seen)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Monitors compared at matched false alarm rate (top) and by detection delay (bottom)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
