"""False refusals of the rules guard's path reading (``deny_paths``) on benign tool calls.

    python benchmarks/rules_benign_paths.py --label after [--data ../shared/data]

Every benign call of these corpora is checked by a ToolRuleGuard holding only the shipped example's
``deny_paths`` (``src/agentguard/server/examples/rules.toml``; no allow list, so a refusal is the path
reading's): AgentDojo v1.2 ground-truth calls (97 user tasks), Mind2Web-SC's 200 actions (when the data
is present), the dict literals of ``examples/``; the shell corpus (``tests/policies/shell/benign_commands.txt``)
is checked with the whole example stack as ``run_command``; since session 19 also everyday calls of published
file tools' schemas (``tests/policies/benign_file_calls.json``, written by hand after that session's change: a
regression corpus, not a blind one), with ``deny_paths`` only. Each run is stored under its ``--label`` in
``benchmarks/results/rules_benign_paths.json`` (with the commit, the command and os.getloadavg()), so a change
to the path reading is reported as the refusals before and after it, call by call.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def _shaped_globs(calls: list) -> int:
    """How many string values are path-shaped and hold a glob character (what the structural rule reads anew)."""
    from agentguard.policies.arguments import leaves, path_shaped

    return sum(path_shaped(t) and not set(t).isdisjoint("*?[{~") for call in calls
               for value in call.arguments.values() for t in leaves(value) or [])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--label", required=True)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/rules_benign_paths.json"))
    a = ap.parse_args()
    from agentguard.bench.secret_leak import benign_corpus
    from agentguard.config import load_stack
    from agentguard.core import Context, ToolCall
    from agentguard.policies.rules import ToolRuleGuard

    example = REPO / "src/agentguard/server/examples/rules.toml"
    table = next(g for g in tomllib.loads(example.read_text())["guards"] if g["type"] == "tool-rules")
    paths_only = ToolRuleGuard(deny_paths=table["deny_paths"], name="deny-paths")
    corpora = {k: v for k, v in benign_corpus(a.data, REPO / "examples").items() if k.endswith(("_calls", "examples"))}
    shell = [ln for ln in (REPO / "tests/policies/shell/benign_commands.txt").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    stack = load_stack(example)
    runs = {name: (paths_only, calls) for name, calls in corpora.items()}
    files = REPO / "tests/policies/benign_file_calls.json"  # session 19: file tools' own schemas (not blind)
    if files.is_file():
        runs["file_tool_calls"] = (paths_only, [ToolCall(n, args) for n, args in json.loads(files.read_text())["calls"]])
    runs["shell_corpus"] = (stack, [ToolCall("run_command", {"command": c}) for c in shell])
    res: dict = {}
    for name, (guard, calls) in runs.items():
        refused = []
        for call in calls:
            v = guard.check(Context(), call)
            if v.blocks:
                refused.append({"tool": call.name, "arguments": call.arguments, "reason": v.reason})
        res[name] = {"n": len(calls), "refused": len(refused), "rate": len(refused) / len(calls) if calls else None,
                     "path_shaped_glob_values": _shaped_globs(calls), "refusals": refused}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "src"], cwd=REPO, capture_output=True,
                                text=True).stdout.strip())
    out = Path(a.out)
    store = json.loads(out.read_text()) if out.is_file() else {}
    store[a.label] = {"command": " ".join(["python", "benchmarks/rules_benign_paths.py", *sys.argv[1:]]),
                      "commit": commit, "src_uncommitted_changes": dirty, "loadavg": os.getloadavg(),
                      "corpora": res}
    out.write_text(json.dumps(store, indent=1, default=str) + "\n")
    for name, r in res.items():
        print(f"{a.label} {name}: {r['refused']}/{r['n']} refused")


if __name__ == "__main__":
    main()
