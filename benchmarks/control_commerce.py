"""Agentic Commerce evaluation (Table 2 plus monitor metrics) -> benchmarks/results/control_commerce_<base>[_bundles].json.

    nice python benchmarks/control_commerce.py [--base random|cheapest] [--episodes 200] [--task plain|bundles]
        [--text-episodes 50]

Trains (seeded) or loads benchmarks/results/control_commerce_*_full.pt; the text-only and gemma + numbers
critics are loaded from benchmarks/results/control_commerce_text_<task>_*.pt (made by
benchmarks/control_commerce_text.py) and run a reduced protocol (gemma at decision time).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agentguard.bench.commerce import run_commerce_bench


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="random")
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--task", choices=["plain", "bundles"], default="plain")
    ap.add_argument("--text-episodes", type=int, default=50)
    a = ap.parse_args()
    rep = run_commerce_bench(quick=False, episodes=a.episodes, base=a.base, seed=a.seed, quiet=False, task=a.task,
                             text_episodes=a.text_episodes)
    rep["command"] = "nice python benchmarks/control_commerce.py " + " ".join(sys.argv[1:])
    suffix = "_bundles" if a.task == "bundles" else ""
    out = ROOT / "benchmarks" / "results" / f"control_commerce_{a.base}{suffix}.json"
    out.write_text(json.dumps(rep, indent=1, default=float))
    print(json.dumps(rep, indent=1, default=float))


if __name__ == "__main__":
    main()
