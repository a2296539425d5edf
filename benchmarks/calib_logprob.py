"""Section 4.3 / Figure 3 of the online-safety-monitoring paper on a generated problem set with exact
labels: gemma-3-270m (local, offline, greedy) solves seeded multi-step arithmetic word problems step
by step; signals: the per-step minimum token log-probability (the paper's internal signal) and an
offline symbolic arithmetic step checker (an external-verifier stand-in; no learned PRM is available
offline); label: the checked final answer. CRC, UCB, e-valuator anytime and PAC are calibrated on
each signal with the same protocol as calib_protocol.py (random 20/80 splits, alpha 0.05..0.3).

Generations are cached (JSON lines) under .cache/calib_logprob/ and reused; a run resumes.

    nice -n 10 python benchmarks/calib_logprob.py --n 200 --max-tokens 32 --generate-only   # the model, cached
    python benchmarks/calib_logprob.py --n 200 --max-tokens 32 --cached-only             # the analysis
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

from agentguard.bench.calibration_logprob import (arithmetic_verifier, label, make_problems, prompt_for,  # noqa: E402
                                                  split_steps, step_signals)

CACHE = REPO / ".cache" / "calib_logprob"
ALPHAS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3]


def generate(n: int, seed: int, max_tokens: int, cached_only: bool = False) -> list[dict]:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"gen_seed{seed}_tok{max_tokens}.jsonl"
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[r["id"]] = r
    todo = [p for p in make_problems(n, seed) if p["id"] not in done]
    if todo and not cached_only:
        from agentguard.llm.local import LocalGemmaClient

        client = LocalGemmaClient()
        for k, p in enumerate(todo):
            t0 = time.time()
            pieces = []
            for tok, lp in client.token_logprobs(prompt_for(p), max_tokens=max_tokens):
                pieces.append((tok, lp))
                if "\n" in tok and "answer" in "".join(x[0] for x in pieces).lower().split("\n")[-2:][0]:
                    break
                if "\n\n" in "".join(x[0] for x in pieces[-2:]):
                    break
            r = {**p, "pieces": pieces, "seconds": time.time() - t0}
            with path.open("a") as fh:
                fh.write(json.dumps(r) + "\n")
            done[p["id"]] = r
            print(f"[{k + 1}/{len(todo)}] {r['seconds']:.1f}s", file=sys.stderr, flush=True)
    return [done[i] for i in sorted(done) if i < n]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-tokens", type=int, default=40)
    ap.add_argument("--splits", type=int, default=50)
    ap.add_argument("--cal-frac", type=float, default=0.5,
                    help="calibration share (0.5: the set is small; the paper's notebook uses 0.2 on 5,000)")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--cached-only", action="store_true", help="analyse the cached generations only (no model)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "calib_logprob.json"))
    a = ap.parse_args()
    t0 = time.time()
    gens = generate(a.n, a.seed, a.max_tokens, a.cached_only)
    if a.generate_only:
        return
    from agentguard.bench.calibration import ALL_METHODS, run_protocol
    from agentguard.calibration.data import Sequences
    from agentguard.core.errors import GuaranteeError

    steps = [split_steps([tuple(x) for x in g["pieces"]]) or [("", [0.0])] for g in gens]
    labels = [label(st, g["answer"]) for st, g in zip(steps, gens)]
    signals = {"logprob_min": [step_signals(st) for st in steps],
               "arithmetic_checker": [arithmetic_verifier(st) for st in steps]}
    out = {"command": "python " + " ".join(shlex.quote(x) for x in sys.argv), "n_problems": len(gens),
           "solved_rate": float(np.mean(labels)), "n_requested": a.n, "generator": "gemma-3-270m (base, q4_k_m GGUF via transformers), greedy",
           "mean_generation_seconds": float(np.mean([g["seconds"] for g in gens])),
           "mean_steps": float(np.mean([len(s) for s in steps])), "signals": {}, "examples": []}
    for name, sig in signals.items():
        data = Sequences.from_lists(sig, labels)
        res = {}
        for meth in ALL_METHODS:
            try:
                res[meth] = run_protocol(data, methods=[meth], alphas=ALPHAS, splits=a.splits, seed=a.seed,
                                         cal_frac=a.cal_frac)
            except GuaranteeError as e:  # too few calibration sequences of a class for this method
                res[meth] = {"error": str(e)}
        flat = np.concatenate([np.asarray(s, float) for s in sig])
        y = np.concatenate([[l] * len(s) for s, l in zip(sig, labels)])
        from sklearn.metrics import roc_auc_score

        auc = float(roc_auc_score(y, flat)) if 0 < y.mean() < 1 else None
        summary = {m: ({k: [None if x is None else round(x, 4) for x in pr["results"][m]["mean"][k]]
                        for k in ("false_alarm_rate", "power", "detection_delay")} if "error" not in pr
                       else {"error": pr["error"]}) for m, pr in res.items()}
        out["signals"][name] = {"step_auroc": auc, "summary": summary, "protocol": res}
    for g, st, l in list(zip(gens, steps, labels))[:5]:
        out["examples"].append({"problem": g["text"], "answer": g["answer"], "steps": [s for s, _ in st],
                                "label": l, "logprob_min": step_signals(st), "checker": arithmetic_verifier(st)})
    out["alphas"], out["cal_frac"], out["splits"] = ALPHAS, a.cal_frac, a.splits
    out["seconds"] = time.time() - t0
    Path(a.out).write_text(json.dumps(out, indent=1, default=float))
    plot(out, Path(a.out).with_suffix(".png"))
    print(f"wrote {a.out}")


def plot(out: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [("false_alarm_rate", "False alarm rate"), ("power", "Power"), ("detection_delay", "Detection delay")]
    colors = {"crc": "seagreen", "ucb": "crimson", "evaluator-anytime": "steelblue", "evaluator-pac": "darkorange"}
    styles = {"arithmetic_checker": "-", "logprob_min": "--"}
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for sname, s in out["signals"].items():
        for m, pr in s["protocol"].items():
            if "error" in pr:
                continue
            r, alphas = pr["results"][m], pr["config"]["alphas"]
            for ax, (k, title) in zip(axes, metrics):
                ax.plot(alphas, r["mean"][k], styles[sname], color=colors[m], marker="o", ms=3,
                        label=f"{m} ({sname})")
                ax.set_title(title)
                ax.set_xlabel("alpha")
    axes[0].plot(ALPHAS, ALPHAS, ":", color="grey")
    axes[2].legend(fontsize=6)
    fig.suptitle("gemma-3-270m on generated arithmetic problems: log-prob (dashed) vs arithmetic checker (solid)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
