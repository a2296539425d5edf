"""How often benign text holds short pieces of a known secret by chance: the price of tracking pieces shorter than
:data:`agentguard.policies.secret_fragments.PIECE` (7) over a run (session 22, gap 2 of session 21).

    python benchmarks/secret_short_pieces.py [--data ../shared/data] [--out benchmarks/results/secret_short_pieces.json]

Secrets S as in ``benchmarks/secret_fragments.py`` (the seeded secrets of every format, 4 each, plus human-chosen-
looking ones and AWS's documented examples; normalised as the guard normalises them). For each piece length p in
4..7 and each piece rule (``letter+digit``: the rule PIECE=7 uses; ``any``), over the benign corpora of
:func:`agentguard.bench.secret_leak.benign_corpus` (885 items):

- ``items_with_a_piece``: benign items whose normalised text holds a p-character piece of some secret (forwards,
  reversed, ROT13, as the guard indexes them);
- ``runs_covering_12``: sources read as one run each (every item of a source sent in one run: the worst case for a
  run-wide rule) in which the pieces found cover 12 or more positions of one secret (the guard's leak threshold), and
  the most positions covered by chance in any source.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

_ROT13 = str.maketrans("abcdefghijklmnopqrstuvwxyz0123456789", "nopqrstuvwxyzabcdefghijklm0123456789")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/secret_short_pieces.json"))
    a = ap.parse_args()
    from agentguard.bench.secret_leak import benign_corpus, seeded_secrets
    from agentguard.policies.secret_fragments import normalise
    from secret_fragments import AWS_EXAMPLES, HUMAN

    t0 = time.perf_counter()
    benign = benign_corpus(a.data, REPO / "examples")
    secrets = [v for _, kind, v, _ in seeded_secrets(4, 0) if kind == "secret"] + HUMAN + AWS_EXAMPLES
    norms = [n for n in (normalise(s) for s in secrets) if len(n) >= 16]
    texts = {src: [normalise(json.dumps(p.arguments) if hasattr(p, "arguments") else str(p)) for p in items]
             for src, items in benign.items()}
    n_items = sum(map(len, texts.values()))
    res: dict = {}
    for p in (4, 5, 6, 7):
        for rule in ("letter+digit", "any"):
            # piece -> [(secret index, start position)] over every variant the guard indexes
            index: dict[str, list[tuple[int, int]]] = {}
            for si, s in enumerate(norms):
                L = len(s)
                for variant, rev in ((s, False), (s[::-1], True), (s.translate(_ROT13), False),
                                     (s[::-1].translate(_ROT13), True)):
                    for i in range(L - p + 1):
                        g = variant[i:i + p]
                        if rule == "letter+digit" and not (any(c.isalpha() for c in g) and any(c.isdigit() for c in g)):
                            continue
                        index.setdefault(g, []).append((si, L - p - i if rev else i))
            hit_items = 0
            by_src = {}
            for src, items in texts.items():
                covered: dict[int, set[int]] = {}
                for t in items:
                    hit = False
                    for i in range(len(t) - p + 1):
                        for si, pos in index.get(t[i:i + p], ()):
                            hit = True
                            covered.setdefault(si, set()).update(range(pos, pos + p))
                    hit_items += hit
                most = max((len(v) for v in covered.values()), default=0)
                by_src[src] = {"most_positions_covered": most, "covers_12": most >= 12}
            res[f"p{p}_{rule}"] = {"items_with_a_piece": hit_items, "n_items": n_items,
                                   "rate": hit_items / n_items,
                                   "runs_covering_12": sum(v["covers_12"] for v in by_src.values()),
                                   "n_runs": len(by_src), "by_source": by_src}
            print(p, rule, hit_items, n_items, by_src, file=sys.stderr)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "src_commit": commit,
           "known_secrets": len(norms), "seconds": time.perf_counter() - t0, "results": res}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
