"""The provenance guard on the GitHub MCP server's tools, a tool set nobody designed it on (issue 27): a blind
generalisation measurement with the method frozen at the commit the scenario file names
(agentguard.bench.github_hijack; declarations inferred from the schemas only). Writes
benchmarks/results/policies_provenance_github.json; ``--label`` names the figure (``blind`` for the first and
only run on the frozen method, ``after_fixes (not blind)`` for any later one), and each label is kept.

    python benchmarks/policies_provenance_github.py --label blind
    python benchmarks/policies_provenance_github.py --label "schema grants (not blind)" --schema-grants
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "policies_provenance_github.json"


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run(evaluate: Callable[..., dict[str, Any]], out: Path, blind_ready: Callable[[], bool] = lambda: True) -> None:
    """Parse the command line, score once with ``evaluate`` and keep the run under its label in ``out`` (the
    Stripe set's script runs this too); a ``blind`` run is refused until ``blind_ready()``."""
    ap = argparse.ArgumentParser(description=(sys.modules["__main__"].__doc__ or "").split("\n")[0])
    ap.add_argument("--label", required=True, help="blind | 'after_fixes (not blind)'")
    ap.add_argument("--tool-words", action="store_true",
                    help="tool-word grants for the tools the grant lexicon gives no action")
    ap.add_argument("--schema-grants", action="store_true",
                    help="grants from each consequential tool's own schema (agentguard.policies.schemagrants)")
    args = ap.parse_args()
    if args.label == "blind" and not blind_ready():
        sys.exit(f"set frozen_method_commit in the scenario file before the blind run ({out.name})")
    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    res = evaluate(tool_words=args.tool_words, schema_grants=args.schema_grants)
    record = {"command": "python " + shlex.join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
              "label": args.label, "code_commit": _commit(),
              "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
              "load_average_1m_before": load0, "load_average_1m_after": os.getloadavg()[0],
              "seconds": time.perf_counter() - t0, **res}
    doc = json.loads(out.read_text()) if out.exists() else {"runs": {}}
    doc["runs"][args.label] = record
    out.write_text(json.dumps(doc, indent=1) + "\n")
    for g in ("none", "provenance"):
        r = res[g]
        u, a = r["utility"], r["attack_success"]
        print(f"{args.label} {g}: utility {u['k']}/{u['n']}, attack success {a['k']}/{a['n']} "
              f"(CP95 {a['clopper_pearson95'][0]:.3f}-{a['clopper_pearson95'][1]:.3f}), "
              f"max per injection task {r['max_asr_per_injection_task']:.2f}, "
              f"blocked benign calls {len(r['blocked_benign'])}", file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)


def main() -> None:
    from agentguard.bench.github_hijack import evaluate

    run(evaluate, OUT)


if __name__ == "__main__":
    main()
