"""CPU per decision of the shipped rules example for calls that read whole trees (``grep -r``, ``git``'s operands,
``ls -R``, ``tar``, a search tool below a directory), this tree against an earlier one, in one run.

Session 25 decides a literal tree by two compiled regular expressions (:class:`agentguard.policies.reach.TreeRules`)
instead of a glob-automaton product per rule, and compares two globs' fixed ends first
(:func:`agentguard.policies.shell.globs.intersects`); its new deny rules grew the rule list. Each call is decided
``--n`` times by ``load_stack(rules.toml).check`` (the shell reader's kept readings stay warm: what is measured is
the path reading), CPU by ``time.thread_time``, the least of 5 chunks: ``us`` repeated (the guard's kept glob answers
help: an agent repeating a command), ``cold_us`` with them forgotten before each decision (a command not seen); each tree in its own child process
(``PYTHONPATH=<tree>/src``), the trees alternating ``--rounds`` times, the median of the rounds reported with each
tree's decision (the rule lists differ, so a decision may too: reported, not required equal).

    PYTHONPATH=$PWD/src python benchmarks/rules_tree_cost.py --base /tmp/s25base --n 200 --rounds 3 \\
        --out benchmarks/results/rules_tree_cost_s25.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("run_command", {"command": "git status"}), ("run_command", {"command": "git log --oneline -5"}),
    ("run_command", {"command": "git diff HEAD~1 -- src"}), ("run_command", {"command": "grep -rn TODO src"}),
    ("run_command", {"command": "ls -R src"}), ("run_command", {"command": "tar czf out.tgz src docs"}),
    ("run_command", {"command": "du -a build"}), ("run_command", {"command": "cp -r src /tmp/copy"}),
    ("run_command", {"command": "grep -r key /home/u"}), ("run_command", {"command": "ls -la"}),
    ("search_files", {"path": "/home/u/project", "pattern": "*.py"}), ("read_file", {"path": "src/app.py"}),
]


def child(tree: str, n: int) -> dict[str, Any]:
    from agentguard.config import load_stack
    from agentguard.core.types import Context, ToolCall

    stack = load_stack(Path(tree) / "src" / "agentguard" / "server" / "examples" / "rules.toml")
    memos = [getattr(g, k)._memo for g in stack.guards for k in ("_trees", "_file_trees", "_globs")
             if hasattr(getattr(g, k, None), "_memo")]  # (a tree before session 25 keeps none)

    def forget() -> None:
        for m in memos:
            m.clear()
    out = {}
    for name, args in CALLS:
        ctx, call = Context(run_id="r"), ToolCall(name, args)
        v = stack.check(ctx, call)
        chunks = []
        for _ in range(5):
            t0 = time.thread_time()
            for _ in range(max(1, n // 5)):
                stack.check(ctx, call)
            chunks.append((time.thread_time() - t0) / max(1, n // 5) * 1e6)
        cold = []  # each decision with the guard's kept glob answers forgotten (a command it has not seen)
        for _ in range(5):
            t0 = time.thread_time()
            for _ in range(max(1, n // 5)):
                forget()
                stack.check(ctx, call)
            cold.append((time.thread_time() - t0) / max(1, n // 5) * 1e6)
        out[f"{name} {json.dumps(args)}"] = {"us": round(min(chunks), 1), "cold_us": round(min(cold), 1),
                                             "decision": v.decision.name}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="a worktree of an earlier commit")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "rules_tree_cost.json"))
    ap.add_argument("--child", default="")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.n)))
        return
    trees = {"after": REPO, "before": Path(a.base).resolve()}
    rounds: dict[str, list[dict[str, Any]]] = {k: [] for k in trees}
    for r in range(a.rounds):
        for kind in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
            env = {**os.environ, "PYTHONPATH": str(trees[kind] / "src")}
            p = subprocess.run([sys.executable, __file__, "--base", a.base, "--child", str(trees[kind]), "--n",
                                str(a.n)], env=env, capture_output=True, text=True, check=True)
            rounds[kind].append(json.loads(p.stdout))
    calls = {key: {kind: {"us": statistics.median(x[key]["us"] for x in rounds[kind]),
                          "cold_us": statistics.median(x[key]["cold_us"] for x in rounds[kind]),
                          "decision": rounds[kind][0][key]["decision"]} for kind in trees}
             for key in rounds["after"][0]}
    for row in calls.values():
        row["speedup"] = round(row["before"]["us"] / max(row["after"]["us"], 1e-9), 2)
        row["speedup_cold"] = round(row["before"]["cold_us"] / max(row["after"]["cold_us"], 1e-9), 2)
    result = {"benchmark": __doc__.splitlines()[0],
              "command": "python " + " ".join([os.path.relpath(__file__, REPO)] + sys.argv[1:]),
              "base": str(a.base), "n": a.n, "rounds": a.rounds, "calls": calls,
              "median_speedup": statistics.median(r["speedup"] for r in calls.values()),
              "median_speedup_cold": statistics.median(r["speedup_cold"] for r in calls.values()),
              "loadavg_1_5_15": list(os.getloadavg()), "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    Path(a.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: (v["before"]["us"], v["after"]["us"], v["speedup"]) for k, v in calls.items()}, indent=1))


if __name__ == "__main__":
    main()
