"""Live agent on held-out household tasks: unguarded vs proactive stop vs proactive reflect.

The recorded runs cannot show what an agent does after a reflection alert, so reflect's unsafe and
completion rates are measured here with a live agent: by default the local gemma-3-270m base model as a
scoring policy (it samples among the task's candidate actions by log-likelihood, seeded), or any
OpenAI-compatible endpoint (``--client openai``, AGENTGUARD_LLM_* variables). The DTMCs are learned
from the training split of the recorded runs exactly as in ``household_table3.py``. Every episode is
appended to ``benchmarks/results/household_live.jsonl`` as it finishes; the summary goes to
``benchmarks/results/household_live.json``.

Usage: nice python benchmarks/household_live.py [--tasks 3] [--steps 6] [--threshold 0.7]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="", help="data folder (default $AGENTGUARD_DATA, else ../shared/data)")
    ap.add_argument("--client", default="gemma", choices=["gemma", "openai"])
    ap.add_argument("--tasks", type=int, default=3, help="unsafe and safe held-out tasks each")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threshold", type=float, default=0.7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "household_live.json"))
    a = ap.parse_args()

    from agentguard.bench.household import live_rows
    from agentguard.bench.household_eval import family_guard, learn_family_models, split_by_task
    from agentguard.cli.options import data_dir
    from agentguard.envs.household.replay import load_runs, replay_all

    a.data = str(data_dir(a.data or None))

    if a.client == "gemma":
        from agentguard.llm.local import LocalGemmaClient

        client = LocalGemmaClient()
    else:
        from agentguard.llm import OpenAICompatClient

        client = OpenAICompatClient()
    t0 = time.time()
    reps = replay_all(load_runs(a.data), a.data)
    train, test = split_by_task(reps, key=lambda r: str(r.run.task.get("instruction", "")), seed=a.seed)
    guard = family_guard(learn_family_models(train), a.threshold)
    test = [r for r in test if not r.run.controlled]
    out = live_rows(client, test, guard, a.threshold, a.tasks, a.data, quiet=False, max_steps=a.steps,
                    seed=a.seed, log_path=Path(a.out).with_suffix(".jsonl"))
    out["seconds"] = time.time() - t0
    out["command"] = "python " + " ".join(sys.argv)
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out["rows"], indent=1))


if __name__ == "__main__":
    main()
