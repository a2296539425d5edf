"""Over-refusal of the vacuity check (``agentguard.policies.testing.vacuity_problem``), run by every verification path
since session 19: which loadable policies it calls vacuous, and how long it takes.

Corpus: the shipped policies and the examples (benign: each states a real rule, none may be flagged), and every
policy text written as a string literal in ``tests/policies/test_*.py`` that loads (a mixed set: some are vacuous on
purpose; each flagged one is listed with its file and first Ensures so a reader can judge it).

    python benchmarks/vacuity_benign.py   # writes benchmarks/results/vacuity_benign.json
"""

from __future__ import annotations

import ast
import json
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agentguard.policies import policy_from_source  # noqa: E402
from agentguard.policies.testing import vacuity_problem  # noqa: E402


def _texts() -> list[tuple[str, str, str]]:
    """(kind, where, source) for every candidate policy text."""
    out = []
    for p in sorted((ROOT / "src/agentguard/policies/library").glob("*.py")) + sorted(ROOT.glob("examples/**/*.py")):
        text = p.read_text(encoding="utf-8")
        if "nagini_contracts" in text and "def check(" in text:
            out.append(("benign", str(p.relative_to(ROOT)), text))
    for p in sorted((ROOT / "tests/policies").glob("test_*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "def check(" in node.value \
                    and "nagini_contracts" in node.value:
                out.append(("tests", f"{p.relative_to(ROOT)}:{node.lineno}", node.value))
    return out


def main() -> None:
    rows = []
    for kind, where, src in _texts():
        try:
            pol = policy_from_source(src)
        except Exception:  # noqa: BLE001 - not a loadable policy: not in the corpus
            continue
        t0 = time.perf_counter()
        problem = vacuity_problem(pol)
        rows.append({"kind": kind, "where": where, "vacuous": problem is not None,
                     "seconds": round(time.perf_counter() - t0, 4), "first_ensures": pol.ensures[0] if pol.ensures else ""})
    summary = {k: {"policies": sum(r["kind"] == k for r in rows), "flagged_vacuous": sum(r["kind"] == k and r["vacuous"] for r in rows)}
               for k in ("benign", "tests")}
    secs = sorted(r["seconds"] for r in rows)
    report = {
        "command": "python benchmarks/" + Path(sys.argv[0]).name + (" " + shlex.join(sys.argv[1:]) if sys.argv[1:] else ""),
        "summary": summary,
        "seconds_median": secs[len(secs) // 2] if secs else None, "seconds_max": secs[-1] if secs else None,
        "flagged": [r for r in rows if r["vacuous"]],
        "all": rows,
    }
    out = ROOT / "benchmarks/results/vacuity_benign.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({"summary": summary, "seconds_median": report["seconds_median"], "seconds_max": report["seconds_max"],
                      "flagged": [(r["where"], r["first_ensures"]) for r in report["flagged"]]}, indent=1))


if __name__ == "__main__":
    main()
