"""The secret/PII leak guard: false-positive rate on real benign calls, recall on seeded real secret formats,
and its cost per call, side by side with a deny-list ToolRuleGuard in the same run (agentguard.bench.secret_leak).

    python benchmarks/secret_guard.py [--data ../shared/data] [--per-format 20] [--seed 0]

Configurations measured on the same calls:
- ``default``: SecretLeakGuard() as shipped (format-specific detect-secrets plugins, PII: cards and SSNs);
- ``all_pii``: default plugins + every PII kind (cards, SSNs, IBANs, phones, e-mails);
- ``all_plugins``: every detect-secrets plugin (entropy, keyword, IP plugins included) + default PII;
- ``no_decode``: default without reading decodings (what the decoding layer buys in recall, and costs);
- baseline: ToolRuleGuard(deny=["delete_*"]) (the cheapest guard: the cost ratio's denominator).

Latency is reported twice: single pass (``benign_latency_us``: its tail is the scheduler's on a loaded
machine) and ``latency_min_of_repeats_us`` (every guard and the baseline interleaved call by call, 5
repeats, each call's minimum: the guard's own cost).

Every destination is a third party (no user_tools): a finding is a refusal. Writes
benchmarks/results/secret_guard.json with the command that made it and os.getloadavg() (shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def _recall(guard, corpus):  # noqa: ANN001, ANN202
    from agentguard.bench.secret_leak import measure

    by_format: dict[str, dict] = {}
    by_variant: dict[str, dict] = {}
    for key, table in (("format", by_format), ("variant", by_variant)):
        for name in dict.fromkeys(c[key] for c in corpus):
            m = measure(guard, [c["call"] for c in corpus if c[key] == name])
            table[name] = {"n": m["n"], "caught": m["refused"], "recall": m["rate"]}
    pii = set(guard.scanner.pii)  # a PII format is covered when its kind is switched on in this configuration
    covered = [c["call"] for c in corpus if c["covered"] and (c["kind"] == "secret" or c["format"] in pii)]
    total = measure(guard, [c["call"] for c in corpus])
    cov = measure(guard, covered)
    return {"recall_all_formats": total["rate"], "recall_covered_formats": cov["rate"], "n": total["n"],
            "n_covered": cov["n"], "by_format": by_format, "by_variant": by_variant,
            "latency_us": total["latency_us"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--per-format", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/secret_guard.json"))
    a = ap.parse_args()
    from agentguard.bench.secret_leak import benign_corpus, measure, seeded_corpus
    from agentguard.policies import SecretLeakGuard, ToolRuleGuard
    from agentguard.policies.secrets import PII_KINDS

    t0 = time.perf_counter()
    load0 = os.getloadavg()
    guards = {"default": SecretLeakGuard(), "all_pii": SecretLeakGuard(pii=PII_KINDS),
              "all_plugins": SecretLeakGuard(plugins="all"), "no_decode": SecretLeakGuard(decode=False)}
    baseline = ToolRuleGuard(deny=["delete_*"])
    benign = benign_corpus(a.data, REPO / "examples")
    seeded = seeded_corpus(a.per_format, a.seed)
    for g in guards.values():  # warm up: imports and regex compilation are not per-call costs
        measure(g, [seeded[0]["call"], "warm up"])
    res: dict = {"benign_sources": {k: len(v) for k, v in benign.items()}, "configs": {}}
    if not (Path(a.data) / "mind2web_sc").is_dir():
        res["note"] = f"Mind2Web-SC absent under {a.data}: not measured"
    all_benign_calls = [p for v in benign.values() for p in v]
    for name, g in guards.items():
        fp = {src: measure(g, props) for src, props in benign.items()}
        total = measure(g, all_benign_calls)
        res["configs"][name] = {
            "false_positive_rate": total["rate"], "false_positives": total["refused"], "benign_n": total["n"],
            "benign_by_source": fp, "benign_latency_us": total["latency_us"], "seeded": _recall(g, seeded)}
        print(f"{name}: FP {total['refused']}/{total['n']} = {total['rate']:.4f}; recall "
              f"{res['configs'][name]['seeded']['recall_all_formats']:.4f}; median "
              f"{total['latency_us']['median']:.1f} us", file=sys.stderr)
    # composed with provenance: PII the user typed in the task's prompt may go anywhere (ledger of the prompt only)
    from agentguard.bench.secret_leak import agentdojo_tasks
    from agentguard.core.types import Context
    from agentguard.policies.provenance import ProvenanceLedger, SourceDeclaration

    calls, ctxs = [], []
    for prompt, cs in agentdojo_tasks():
        led = ProvenanceLedger(SourceDeclaration())
        led.observe_prompt(prompt)
        calls += cs
        ctxs += [Context(metadata={"provenance": led}) for _ in cs]
    res["all_pii_with_prompt_provenance_agentdojo_calls"] = {
        "note": "SecretLeakGuard(pii=all kinds) with a provenance ledger holding the task's prompt: PII the user "
                "typed may go to a third party; compare all_pii's agentdojo calls",
        **measure(guards["all_pii"], calls, ctxs)}
    from agentguard.bench.secret_leak import latency

    res["latency_min_of_repeats_us"] = latency({"tool_rules_baseline": baseline, **guards}, all_benign_calls)
    lat = res["latency_min_of_repeats_us"]
    res["cost_ratio_min_of_repeats_default_vs_tool_rules_median"] = (lat["default"]["median"]
                                                                     / lat["tool_rules_baseline"]["median"])
    base = measure(baseline, all_benign_calls)
    res["baseline_tool_rules_latency_us"] = base["latency_us"]
    d = res["configs"]["default"]["benign_latency_us"]
    res["cost_ratio_default_vs_tool_rules_median"] = d["median"] / base["latency_us"]["median"]
    res = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
           "cpus": os.cpu_count(), "loadavg_start": load0, "loadavg_end": os.getloadavg(),
           "seconds": time.perf_counter() - t0, "seeded_per_format": a.per_format, "seed": a.seed, **res}
    Path(a.out).write_text(json.dumps(res, indent=1, default=float) + "\n")
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
