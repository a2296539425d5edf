"""AgentDojo replay under no guard and the provenance guard, for every benchmark version the installed package
ships, plus leave-one-suite-out (issue 27); writes benchmarks/results/policies_agentdojo_<version>.json and
policies_agentdojo_loso.json.

    python benchmarks/policies_agentdojo_versions.py                    # every version + LOSO on v1.2.2
    python benchmarks/policies_agentdojo_versions.py --version v1.2.2   # one version
    python benchmarks/policies_agentdojo_versions.py --jobs 16 --out DIR
    python benchmarks/policies_agentdojo_versions.py --loso-only --loso-grants frozen   # -> ..._loso_frozen_grants.json

LOSO folds (agentguard.bench.agentdojo.loso_fold): the left-out suite's tool declarations are removed and inferred
from its tools' schemas; ``strict`` (default, -> policies_agentdojo_loso.json) also drops the inference rules only
the left-out suite uses and adds generic tool-word grants; ``design-words`` (-> ..._loso_design_words.json) cuts
the grant lexicon to the design suites' request words; ``frozen`` keeps it whole.

Each (version, suite) replay is independent: ``--jobs`` runs them in parallel processes (the figures do not
depend on it). What the replay is: an upper bound for a perfect agent under a literal hijack
(agentguard.bench.agentdojo).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
SUITES = ("banking", "slack", "travel", "workspace")
ONLY = [s for s in os.environ.get("AGENTDOJO_SUITES", "").split(",") if s]
GRANTS_MODE = [os.environ.get("AGENTDOJO_LOSO_GRANTS", "strict")]   # read by the worker processes


def _job(args: tuple[str, str, bool]) -> tuple[str, str, bool, dict, float]:
    version, suite, loso = args
    from agentguard.bench import agentdojo as ad

    t0 = time.perf_counter()
    prov = (lambda n: ad.loso_guard(n, version, GRANTS_MODE[0])) if loso else None
    r = ad.evaluate([suite], version=version, provenance=prov)
    return version, suite, loso, r["suites"][suite], time.perf_counter() - t0


def main() -> None:
    from agentguard.bench import agentdojo as ad

    ap = argparse.ArgumentParser()
    ap.add_argument("--version", action="append")
    ap.add_argument("--loso-version", default="v1.2.2")
    ap.add_argument("--no-loso", action="store_true")
    ap.add_argument("--loso-only", action="store_true", help="only the leave-one-suite-out replays")
    ap.add_argument("--loso-grants", choices=("strict", "design-words", "frozen"), default="strict",
                    help="LOSO grants: strict (design suites' request words, inference rules only the left-out "
                         "suite uses dropped, generic tool-word grants), design-words, or the whole frozen file")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default=str(RESULTS))
    a = ap.parse_args()
    os.environ["AGENTDOJO_LOSO_GRANTS"] = GRANTS_MODE[0] = a.loso_grants
    versions = a.version or ad.versions()
    suites = [s for s in reversed(SUITES) if not ONLY or s in ONLY]   # longest first
    jobs = [] if a.loso_only else [(v, s, False) for v in versions for s in suites]
    if not a.no_loso:   # right after the first version's jobs
        jobs[len(suites):len(suites)] = [(a.loso_version, s, True) for s in suites]
    head = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
            "cpus": os.cpu_count(), "load_average_1m_before": os.getloadavg()[0]}
    done: dict[tuple[str, bool], dict] = {}
    secs: dict[tuple[str, bool], float] = {}
    want = {k: sum(1 for j in jobs if (j[0], j[2]) == k) for k in {(j[0], j[2]) for j in jobs}}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futures = [pool.submit(_job, j) for j in jobs]
        for fut in as_completed(futures):
            v, s, loso, res, dt = fut.result()
            done.setdefault((v, loso), {})[s] = res
            secs[(v, loso)] = secs.get((v, loso), 0.0) + dt
            p = res["provenance"]
            print(f"{v} {'LOSO ' if loso else ''}{s}: utility {p['utility_rate']:.3f} (none "
                  f"{res['none']['utility_rate']:.3f}), ASR {p['asr']:.4f}, max per injection task "
                  f"{p['max_asr_per_injection_task']:.3f} ({dt:.0f} s)", file=sys.stderr, flush=True)
            if len(done[(v, loso)]) == want[(v, loso)]:
                _write(out, head, v, loso, done[(v, loso)], secs[(v, loso)])


def _write(out: Path, head: dict, v: str, loso: bool, suites: dict, seconds: float) -> None:
    from agentguard.bench import agentdojo as ad

    suites = {s: suites[s] for s in SUITES if s in suites}
    doc = {**head, "load_average_1m_after": os.getloadavg()[0], "agentdojo_version": v,
           "guards": ["none", "provenance"], "suites": suites, "total": ad._summary(suites, ("none", "provenance")),
           "worker_seconds": seconds, "anchors_published_not_ours": ad.ANCHORS, "protocol": ad.PROTOCOL}
    name = f"policies_agentdojo_{v.replace('.', '_')}.json"
    if loso:
        g = GRANTS_MODE[0]
        doc["loso"] = ("each suite scored by the guard of its fold (agentguard.bench.agentdojo.loso_fold): the "
                       "left-out suite's own tool declarations are removed and replaced by declarations inferred "
                       "from the tools' schemas by the frozen hand-written lexicon tool_inference_en.json (sha256 "
                       "in folds)" + (" minus every rule only the left-out suite's tools exercise (folds: "
                                      "inference_rules_dropped)" if g == "strict" else "") + "; the grant lexicon " + (
                           "keeps only words the design suites' requests use, plus generic grants from each "
                           "inferred consequential tool's own verb and object words, the verb matched exactly or "
                           "by WordLlama similarity at a threshold chosen on the design suites only (folds: "
                           "tool_word_grants)" if g == "strict" else
                           "keeps only words the design suites' requests use" if g == "design-words" else
                           "is the whole shipped grants_en.json, written while all four suites were in view (this "
                           "variant isolates the tool declarations' generalisation)"))
        doc["loso_grants"] = g
        doc["folds"] = {s: ad.loso_fold(s, v, g)["report"] for s in suites}
        name = {"strict": "policies_agentdojo_loso.json", "design-words": "policies_agentdojo_loso_design_words.json",
                "frozen": "policies_agentdojo_loso_frozen_grants.json"}[g]
    (out / name).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(f"wrote {out / name}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
