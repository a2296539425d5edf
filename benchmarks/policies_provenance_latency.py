"""Per-call latency of the provenance guard (grants + data-flow labels + verified policy) side by side with the
previous guard (issue 15's string co-occurrence ledger, commit ce33900) in one run, on AgentDojo's own calls:
every user task of the four suites plus the first --pairs injection pairs per suite, replayed through
AgentDojo's runtime (agentguard.bench.provenance_latency), the two guards in alternating order per suite.

    python benchmarks/policies_provenance_latency.py [--version v1] [--pairs 60] [--base DIR]

--base: a directory holding the previous guard's package as ``agentguard_base`` (made by
``git worktree add /tmp/agentguard-base-27 ce33900 && cp -r /tmp/agentguard-base-27/src/agentguard DIR/agentguard_base``);
the old guard lives only there, never in the library. Writes benchmarks/results/policies_provenance_latency.json.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="v1")
    ap.add_argument("--pairs", type=int, default=60, help="injection pairs per suite (-1: all)")
    ap.add_argument("--base", default=None, help="directory with the previous guard as package agentguard_base")
    ap.add_argument("--base-label", default="issue15_cooccurrence_ce33900",
                    help="name of the --base guard in the results (e.g. the commit it was copied from)")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/policies_provenance_latency.json"))
    a = ap.parse_args()
    from agentguard.bench.provenance_latency import measure

    pairs = None if a.pairs < 0 else a.pairs
    packages = {"issue27_grants_dataflow": "agentguard"}
    if a.base:
        sys.path.insert(0, a.base)
        packages[a.base_label] = "agentguard_base"
    mods, created = {}, {}
    for g, pkg in packages.items():
        mod = importlib.import_module(f"{pkg}.bench.provenance_latency")
        made: list = []
        orig = mod.TimedProvenanceGuard.agentdojo.__func__
        mod.TimedProvenanceGuard.agentdojo = classmethod(lambda cls, _o=orig, _m=made, **kw: _m.append(_o(cls, **kw)) or _m[-1])
        mods[g], created[g] = mod, made
    res: dict = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
                 "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
                 "cpus": os.cpu_count(), "load_average_1m_before": os.getloadavg()[0], "agentdojo_version": a.version,
                 "pairs_per_suite": a.pairs, "guards": {g: {"suites": {}} for g in packages}}
    t0 = time.perf_counter()
    only = [s for s in os.environ.get("AGENTDOJO_SUITES", "").split(",") if s]
    for i, sname in enumerate(s for s in ("banking", "slack", "travel", "workspace") if not only or s in only):
        for g in (list(packages) if i % 2 == 0 else list(reversed(packages))):   # alternate who goes first
            r = mods[g].measure([sname], version=a.version, max_pairs=pairs)
            res["guards"][g]["suites"][sname] = r["suites"][sname]
    for g, mod in mods.items():
        samples = [s for guard in created[g] for s in guard.samples]
        prompts = [n for guard in created[g] for n in guard.prompt_ns]
        res["guards"][g]["all"] = mod._summary(samples, prompts)
        answers = [n for guard in created[g] for n in getattr(guard, "answer_ns", [])]   # the final answer's check
        if answers:
            res["guards"][g]["all"]["answer_once_per_run"] = mod._stats(answers)
    res["seconds"] = time.perf_counter() - t0
    res["load_average_1m_after"] = os.getloadavg()[0]
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    for g, d in res["guards"].items():
        f = d["all"]["full"]
        print(f"{g}: median {f['median_us']:.1f} us, p99 {f['p99_us']:.1f} us over {f['n']} calls", file=sys.stderr)


if __name__ == "__main__":
    main()
