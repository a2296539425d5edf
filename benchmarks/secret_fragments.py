"""Known-secret windows (agentguard.policies.secret_fragments) and the session-19 readings of the secret scanner:
false alarms on the benign corpora and the cost of a scan of a 100 KB text.

    python benchmarks/secret_fragments.py [--data ../shared/data] [--src src] [--src-commit SHA] [--per-format 4]
                                          [--repeats 5] [--out benchmarks/results/secret_fragments.json]

``--src`` picks the library's source tree, so the same script measures the code before the change
(``--src /path/to/main/src``: configurations that need ``secret_fragments`` are skipped there).

Measured, every destination a third party (a finding is a refusal):

- ``benign``: refusals of ``SecretLeakGuard()`` (no known secret: the effect of the new readings alone) and of
  ``SecretLeakGuard(known_secrets=S)`` for window sizes k in 8, 10, 12 (the default), 16, over the benign corpora of
  :func:`agentguard.bench.secret_leak.benign_corpus` (AgentDojo v1.2 ground-truth calls and prompts, Mind2Web-SC
  calls and outputs, the project's examples). S: the seeded secrets of every format of
  :mod:`agentguard.bench.secret_leak` (``--per-format`` each; random, as keys are) plus human-chosen-looking
  secrets (words and digits: the low-entropy case) and AWS's documented example keys. K = 12 was fixed before this
  measurement, from the entropy argument in the module docstring; the sweep shows the margin, it did not pick K;
- ``latency_100kb``: one scan of a 100 KB text (the benign corpora's text concatenated; and a text of random
  key-like tokens, the views' worst case), minimum and median of ``--repeats`` runs, with and without S known.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import string
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HUMAN = ["Summer2024!Password#1", "correct horse battery staple 42", "MyDogRex&Me-1987-forever",
         "postgres://admin:Tr0ub4dor&3@db.internal:5432/prod"]
AWS_EXAMPLES = ["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"]


def _texts(benign: dict) -> str:
    parts = []
    for items in benign.values():
        for p in items:
            parts.append(json.dumps(p.arguments) if hasattr(p, "arguments") else str(p))
    return "\n".join(parts)


def _time(fn, repeats: int) -> dict:
    secs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        secs.append(time.perf_counter() - t0)
    secs.sort()
    return {"min_ms": secs[0] * 1e3, "median_ms": secs[len(secs) // 2] * 1e3, "repeats": repeats}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--src", default=str(REPO / "src"))
    ap.add_argument("--per-format", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--src-commit", default="", help="the commit --src was exported from, when it is no git tree")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/secret_fragments.json"))
    a = ap.parse_args()
    sys.path.insert(0, str(Path(a.src).resolve()))
    from agentguard.bench.secret_leak import benign_corpus, measure, seeded_secrets
    from agentguard.policies import SecretLeakGuard
    from agentguard.policies.secrets import LeakScanner

    try:
        from agentguard.policies.secret_fragments import KnownSecrets, normalise
    except ImportError:
        KnownSecrets = normalise = None  # type: ignore[assignment,misc]
    t0, load0 = time.perf_counter(), os.getloadavg()
    benign = benign_corpus(a.data, REPO / "examples")
    secrets = [v for _, kind, v, _ in seeded_secrets(a.per_format, 0) if kind == "secret"] + HUMAN + AWS_EXAMPLES
    if normalise is not None:
        secrets = [s for s in secrets if len(normalise(s)) >= 16]
    res: dict = {"benign_sources": {k: len(v) for k, v in benign.items()}, "known_secrets": len(secrets), "benign": {}}
    configs = {"default": lambda: SecretLeakGuard()}
    if KnownSecrets is not None:
        for k in (8, 10, 12, 16):
            configs[f"known_k{k}"] = (lambda k=k: SecretLeakGuard(known_secrets=secrets, window=k))
    everything = [p for v in benign.values() for p in v]
    for name, make in configs.items():
        g = make()
        by_src = {src: measure(g, props) for src, props in benign.items()}
        total = sum(m["refused"] for m in by_src.values())
        known = sum(m["by_type"].get("known secret", 0) for m in by_src.values())
        res["benign"][name] = {"refused": total, "n": len(everything), "rate": total / len(everything),
                               "known_secret_findings": known, "by_source": by_src}
        print(f"{name}: {total}/{len(everything)} refused ({known} known-secret findings)", file=sys.stderr)
    text = (_texts(benign) * 3)[:100_000]
    rng = random.Random(0)
    tokens = " ".join("".join(rng.choices(string.ascii_letters + string.digits, k=rng.randrange(8, 40)))
                      for _ in range(5000))[:100_000]
    plain = LeakScanner()
    lat: dict = {}
    for tname, t in (("benign_corpus_text", text), ("random_tokens", tokens)):
        lat[tname] = {"chars": len(t), "no_known": _time(lambda t=t: plain.scan_text(t), a.repeats),
                      "findings_no_known": sorted({f.type for f in plain.scan_text(t)})}
        if KnownSecrets is not None:
            ks = KnownSecrets(secrets)
            lat[tname]["known"] = _time(lambda t=t, ks=ks: plain.scan_text(t, known=ks), a.repeats)
            lat[tname]["findings_known"] = sorted({f.type for f in plain.scan_text(t, known=ks)})
            lat[tname]["known_find_only"] = _time(lambda t=t, ks=ks: ks.find(t), a.repeats)
        print(tname, lat[tname], file=sys.stderr)
    res["latency_100kb"] = lat
    commit = a.src_commit
    if not commit:
        try:
            commit = subprocess.run(["git", "-C", a.src, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        except OSError:
            commit = ""
    res = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
           "src_commit": commit, "ahocorasick": _has_aho(), "cpus": os.cpu_count(), "loadavg_start": load0,
           "loadavg_end": os.getloadavg(), "seconds": time.perf_counter() - t0, **res}
    Path(a.out).write_text(json.dumps(res, indent=1, default=float) + "\n")
    print(f"wrote {a.out}", file=sys.stderr)


def _has_aho() -> bool:
    try:
        import ahocorasick  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
