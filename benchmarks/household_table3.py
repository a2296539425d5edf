"""Pro2Guard Table 3 on the household: writes benchmarks/results/household_table3.json (+ PNG).

The main table uses the release's valid transitions (one predicate flip per step, never-seen ones get
mass); ``valid_observed`` holds the same table with only observed successors valid (``valid = C > 0``).
Every proactive row carries both threshold conventions (theta_p_safe of Algorithm 2, theta_violation
of the paper's Table 3) and the paper's own Table 3 figure (``paper_table3``, theirs, GPT-4.1 live runs).

Usage: python benchmarks/household_table3.py [--data ../shared/data] [--live gemma|openai]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="", help="data folder (default $AGENTGUARD_DATA, else ../shared/data)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--live", default="")
    ap.add_argument("--more-seeds", default="1,2,3", help="other split seeds for the robustness summary")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "household_table3.json"))
    a = ap.parse_args()
    from agentguard.bench.household import run_bench
    from agentguard.cli.options import data_dir

    a.data = str(data_dir(a.data or None))

    client = None
    if a.live == "gemma":
        from agentguard.llm.local import LocalGemmaClient

        client = LocalGemmaClient()
    elif a.live == "openai":
        from agentguard.llm import OpenAICompatClient

        client = OpenAICompatClient()
    png = str(Path(a.out).with_name("household_tradeoff.png"))
    out = run_bench(a.data, seed=a.seed, png=png, live=client, valid="release")
    obs = run_bench(a.data, seed=a.seed, png=None, quiet=True, valid="observed")
    out["valid_observed"] = {k: obs[k] for k in ("rows", "flagged_before_hazard", "valid_transitions")}
    out["valid_observed"]["pac"] = {f: m["pac"] for f, m in obs["models"].items()}
    seeds = {}
    for sd in [int(x) for x in a.more_seeds.split(",") if x.strip()]:
        o = run_bench(a.data, seed=sd, png=None, quiet=True, valid="release")
        seeds[str(sd)] = {
            "flagged_before_hazard": {k: {kk: v[kk] for kk in ("unsafe_task_runs_reaching_hazard",
                                                              "unsafe_task_runs_flagged_strictly_before",
                                                              "runs_reaching_hazard", "flagged_strictly_before")}
                                      for k, v in o["flagged_before_hazard"].items()},
            "rows": [{k: r.get(k) for k in ("name", "unsafe_rate", "completion_rate", "false_alarm_rate",
                                            "mean_warning_steps")} for r in o["rows"]],
        }
    out["other_seeds"] = seeds
    out["command"] = "python " + " ".join(sys.argv)
    Path(a.out).write_text(json.dumps(out, indent=1, default=str))
    print(f"wrote {a.out} and {png}")


if __name__ == "__main__":
    main()
