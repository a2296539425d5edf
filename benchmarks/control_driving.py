"""Agentic Driving evaluation (Table 1 / Figure 4 metrics) -> benchmarks/results/control_driving.json + PNGs.

    nice python benchmarks/control_driving.py [--base weak|random] [--episodes 200]

Loads the trained weights from benchmarks/results/control_driving_*_full.pt (made by
benchmarks/control_train.py; trained here with the same seed if absent) and the exact value grid
from ~/.cache/agentguard/control (computed if absent).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agentguard.bench.driving import run_driving_bench


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="weak")
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epsilon", type=float, default=0.1)
    a = ap.parse_args()
    rep = run_driving_bench(quick=False, episodes=a.episodes, base=a.base, seed=a.seed, epsilon=a.epsilon,
                            plots=str(ROOT / "benchmarks" / "results"), quiet=False)
    rep["command"] = "nice python benchmarks/control_driving.py " + " ".join(sys.argv[1:])
    rep["plots"] = [str(Path(p).relative_to(ROOT)) for p in rep.get("plots", [])]
    out = ROOT / "benchmarks" / "results" / f"control_driving_{a.base}.json"
    out.write_text(json.dumps(rep, indent=1, default=float))
    print(json.dumps(rep, indent=1, default=float))


if __name__ == "__main__":
    main()
