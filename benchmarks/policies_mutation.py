"""Mutation report of every shipped policy (issue 26): how many mutants the checks reject, stage by stage.

For each shipped policy, :func:`agentguard.policies.mutation.mutants` generates mutants (boundary changes,
inverted conditions, removed branches and contract clauses, swapped constants and verdicts, in the code,
the contract or both), plus the issue's named mutants. Each goes through the pipeline of
``agentguard verify`` in order: the sandbox, the specification's contract (refused when the contract is
not the one fixed from the rule), the generated tests, then an exhaustive comparison with the original over
the whole finite domain of facts (same verdict everywhere = equivalent). Nagini then runs (one warm worker)
on every mutant that passed the sandbox and the contract check (``--nagini all``, default) or only on the
ones the tests did not kill and that are not equivalent, plus the named code-only ones and a seeded sample of
``--sample`` killed and equivalent mutants per policy as a cross-check (``--nagini needed``).
A *survivor* is a non-equivalent mutant that Nagini verifies: a hole in the contract.

    AGENTGUARD_NAGINI_VENV=... python benchmarks/policies_mutation.py [--nagini all|needed|none] [--policy NAME]

Writes benchmarks/results/policies_mutation.json with the command that made it, Nagini's worker start-up
and per-file seconds, and one cold single-file ``verify()`` for comparison (start-up paid per file).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

NAMED = {  # the mutants: (name, where, [(old, new, count)]); count -1 = every occurrence
    "mind2web_sc": [
        ("off-by-one hotel age <= 18", "code", [("    if category == HOTEL and age < 18:", "    if category == HOTEL and age <= 18:", 1)]),
        ("off-by-one hotel age <= 18", "code+contract", [("age < 18", "age <= 18", -1)]),
        ("deny every hotel", "code", [("    if category == HOTEL and age < 18:", "    if category == HOTEL:", 1)]),
        ("JOB denied under 18", "code", [("    if category == JOB and age < 15:", "    if category == JOB and age < 18:", 1)]),
        ("JOB denied under 18", "code+contract", [("category == JOB and age < 15", "category == JOB and age < 18", -1)]),
    ],
    "agentdojo_provenance": [
        ("request rule removed", "code", [("    if needs_request(kind) and not requested:\n        return NOT_REQUESTED\n", "", 1)]),
        ("request rule removed", "code+contract", [
            ("    if needs_request(kind) and not requested:\n        return NOT_REQUESTED\n", "", 1),
            ("    Ensures(Implies(kind != READ and kind != FETCH and target_trust > 0 and not requested,\n"
             "                    Result() == NOT_REQUESTED))\n", "", 1)]),
    ],
    "agentdojo_grounding": [
        ("request rule removed", "code", [("    if not requested:\n        return NOT_REQUESTED\n", "", 1)]),
    ],
    "asb_declared_tools": [
        ("every tool allowed", "code", [("    return UNDECLARED\n", "    return ALLOW\n", 1)]),
    ],
}


def _named(stem: str, source: str):
    from agentguard.policies.mutation import Mutant

    out = []
    for i, (name, where, edits) in enumerate(NAMED.get(stem, []), 1):
        s = source
        for old, new, count in edits:
            assert old in s, (stem, name, old)
            s = s.replace(old, new, count)
        out.append(Mutant(f"named{i}", s, "named", where, 0, name))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nagini", choices=["all", "needed", "none"], default="all")
    ap.add_argument("--policy", action="append", help="policy stem (default: every shipped policy)")
    ap.add_argument("--examples", type=int, default=100, help="hypothesis examples per mutant")
    ap.add_argument("--sample", type=int, default=3, help="with --nagini needed: also this many mutants per "
                    "policy and stage (killed-by-tests, equivalent), seeded, as a cross-check of Nagini")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/policies_mutation.json"))
    a = ap.parse_args()
    from agentguard.policies.conformance import behaviour, load_spec
    from agentguard.policies.library import library_path, shipped_policies
    from agentguard.policies.model import load_policy
    from agentguard.policies.mutation import judge, mutants

    t0 = time.perf_counter()
    stems = a.policy or [p.stem for p in shipped_policies()]
    report: dict = {"policies": {}}
    queue = []  # (stem, row) to send to Nagini
    for stem in stems:
        src = library_path(stem).read_text(encoding="utf-8")
        spec = load_spec(stem)
        orig = load_policy(library_path(stem))
        table = behaviour(lambda f: orig.evaluate(f).code, spec)
        rows = []
        t1 = time.perf_counter()
        for m in [*mutants(src), *_named(stem, src)]:
            stage, why = judge(m.source, spec, table, examples=a.examples)
            row = {"id": m.id, "operator": m.operator, "where": m.where, "line": m.line,
                   "description": m.description, "stage": stage, "why": why, "nagini": None}
            rows.append((row, m.source))
            if stage in ("killed-by-tests", "equivalent", "needs-nagini") and (
                    a.nagini == "all" or (a.nagini == "needed" and (stage == "needs-nagini" or m.operator == "named"))):
                queue.append((stem, row, m.source))
        if a.nagini == "needed" and a.sample > 0:
            import random

            rng = random.Random(0)
            queued = {id(r) for _, r, _ in queue}
            for st in ("killed-by-tests", "equivalent"):
                pool = [(r, s) for r, s in rows if r["stage"] == st and id(r) not in queued]
                for r, s in rng.sample(pool, min(a.sample, len(pool))):
                    r["nagini_sample"] = True
                    queue.append((stem, r, s))
        report["policies"][stem] = {"rows": [r for r, _ in rows], "pipeline_seconds": time.perf_counter() - t1}
        print(f"{stem}: {len(rows)} mutants judged in {time.perf_counter() - t1:.1f}s", file=sys.stderr)
    nag: dict = {"mode": a.nagini}
    if queue:
        from agentguard.policies.nagini import NaginiVerifier, verify

        t2 = time.perf_counter()
        cold = verify(library_path("asb_declared_tools"))
        nag["cold_single_file"] = {"file": "asb_declared_tools", "wall_seconds": time.perf_counter() - t2,
                                   "nagini_seconds": cold.seconds, "status": cold.status}
        per_file = []
        with NaginiVerifier() as v:
            nag["warm_worker_startup_seconds"] = v.startup_seconds
            for i, (stem, row, source) in enumerate(queue, 1):
                r = v.verify_source(source, f"{stem}_{row['id']}")
                row["nagini"] = r.status
                row["nagini_seconds"] = round(r.seconds, 2)
                if r.errors:
                    row["nagini_error"] = r.errors[0].message[:300]
                per_file.append(r.seconds)
                print(f"[{i}/{len(queue)}] {stem} {row['id']} {row['stage']} -> nagini {r.status} "
                      f"({r.seconds:.1f}s)", file=sys.stderr)
                Path(a.out + ".partial").write_text(json.dumps(report, indent=1, default=str))
        nag["files"] = len(per_file)
        nag["per_file_seconds"] = {"median": statistics.median(per_file), "max": max(per_file),
                                   "total": sum(per_file)}
    report["nagini"] = nag
    for stem, pr in report["policies"].items():
        rows = pr["rows"]
        summ = {"mutants": len(rows)}
        for st in ("refused-at-load", "refused-contract", "killed-by-tests", "equivalent", "needs-nagini"):
            summ[st] = sum(r["stage"] == st for r in rows)
        checked = [r for r in rows if r["nagini"] is not None]
        summ["nagini_checked"] = [{k: r.get(k) for k in ("id", "description", "where", "stage", "nagini",
                                                          "nagini_seconds")} for r in checked]
        summ["nagini_run"] = len(checked)
        summ["rejected_by_nagini"] = sum(r["nagini"] in ("failed", "invalid") for r in checked)
        summ["rejected_by_nagini_among_non_equivalent"] = sum(
            r["nagini"] in ("failed", "invalid") for r in checked if r["stage"] != "equivalent")
        summ["non_equivalent_run_through_nagini"] = sum(r["stage"] != "equivalent" for r in checked)
        survivors = [r for r in rows if r["stage"] == "needs-nagini" and r["nagini"] not in ("failed", "invalid")]
        summ["survivors"] = [{k: r[k] for k in ("id", "description", "why", "nagini")} for r in survivors]
        summ["equivalent_mutants"] = [{k: r[k] for k in ("id", "description", "nagini")}
                                      for r in rows if r["stage"] == "equivalent"]
        summ["named"] = [{k: r[k] for k in ("description", "where", "stage", "why", "nagini")}
                         for r in rows if r["operator"] == "named"]
        pr["summary"] = summ
    res = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
           "cpus": os.cpu_count(), "seconds": time.perf_counter() - t0, **report}
    Path(a.out).write_text(json.dumps(res, indent=2, default=str) + "\n")
    for stem, pr in report["policies"].items():
        s = pr["summary"]
        print(f"{stem}: {s['mutants']} mutants: load {s['refused-at-load']}, contract {s['refused-contract']}, "
              f"tests {s['killed-by-tests']}, equivalent {s['equivalent']}, left for Nagini {s['needs-nagini']}; "
              f"Nagini rejected {s['rejected_by_nagini']} of {s['nagini_run']} run; survivors {len(s['survivors'])}")


if __name__ == "__main__":
    main()
