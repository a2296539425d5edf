"""Cost of the network guard's configuration-file reading per decision, this tree against a base commit (session 26).

    python benchmarks/network_config_cache.py [--base 7ee4499] [--rounds 5] [--n 300]

Each side runs in its own process (the base's ``src`` exported with ``git archive``; same interpreter, same working
directory: this repository, a git worktree whose ``.git`` file and the main repository's ``config`` a git command's
reading finds) and times ``NetworkGuard().check`` on each command of :data:`COMMANDS` (``run_command``), ``--n``
decisions per command after one warm-up, in ``--rounds`` interleaved rounds (base, tree, base, tree...); the figure
per command is the median round's microseconds per decision, and the ratio tree/base. Every decision of both sides is
also compared (the same verdict: allow or refuse). Writes ``benchmarks/results/network_config_cache_s26.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMANDS = ["git status", "git log --oneline -5", "git diff HEAD~1", "git fetch origin", "git pull --rebase",
            "curl -s https://example.com/x", "wget https://example.com/a.tgz", "pip install requests",
            "npm install left-pad", "ls -la && cat README.md", "python -m pytest -q tests"]

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from agentguard.core import Context, ToolCall
from agentguard.policies.networks import NetworkGuard
g, n, out = NetworkGuard(), int(sys.argv[2]), {}
for c in json.loads(sys.argv[3]):
    call = ToolCall("run_command", {"command": c})
    refuses = g.check(Context(), call).decision.refuses
    t0 = time.perf_counter()
    for _ in range(n):
        g.check(Context(), call)
    out[c] = [(time.perf_counter() - t0) / n * 1e6, refuses]
print(json.dumps(out))
"""


def _side(src: str, n: int) -> dict[str, list]:
    done = subprocess.run([sys.executable, "-c", _CHILD, src, str(n), json.dumps(COMMANDS)], capture_output=True,
                          text=True, check=True, cwd=REPO, timeout=600)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="7ee4499")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/network_config_cache_s26.json"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", a.base, "src"], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        sides = {"base": os.path.join(tmp, "src"), "tree": str(REPO / "src")}
        runs: dict[str, list[dict[str, list]]] = {"base": [], "tree": []}
        for _ in range(a.rounds):
            for name, src in sides.items():
                runs[name].append(_side(src, a.n))
    per: dict[str, dict] = {}
    for c in COMMANDS:
        base = statistics.median(r[c][0] for r in runs["base"])
        tree = statistics.median(r[c][0] for r in runs["tree"])
        per[c] = {"base_us": round(base, 1), "tree_us": round(tree, 1), "ratio": round(tree / base, 3),
                  "base_refuses": runs["base"][0][c][1], "tree_refuses": runs["tree"][0][c][1]}
        print(f"{c:32s} base {base:8.1f} us  tree {tree:8.1f} us  ratio {tree / base:.3f}")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    out = {"benchmark": "network guard decision cost: configuration-file reading cached and skipped (session 26)",
           "command": f"python benchmarks/network_config_cache.py --base {a.base} --rounds {a.rounds} --n {a.n}",
           "commit": commit, "base": a.base, "cwd": str(REPO), "machine_note": "2 shared cores, nice 19",
           "same_verdicts": all(v["base_refuses"] == v["tree_refuses"] for v in per.values()),
           "geomean_ratio": round(statistics.geometric_mean(v["ratio"] for v in per.values()), 3),
           "commands": per}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
