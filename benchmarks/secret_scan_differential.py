"""Decisions of the secret scanner, this tree against an older commit, on the same inputs (session 23: the fast paths
must change no decision).

    python benchmarks/secret_scan_differential.py [--old 5f5e282] [--data ../shared/data] [--generated 300]
                                                  [--out benchmarks/results/secret_scan_differential_s23.json]

Inputs: every benign proposal of :func:`agentguard.bench.secret_leak.benign_corpus` and the seeded corpus
(:func:`~agentguard.bench.secret_leak.seeded_corpus`, 3 per format, seed 1), each checked by ``SecretLeakGuard()``
(verdict, reason, leaks); ``--generated`` texts of ``tests/policies/test_secret_windows.py``'s ``benign_text``
(200 to 20 000 characters) with a seeded key embedded at a random place in one of the encodings below (base64/32/85,
Ascii85, hex, reversed, ROT13, cases, groups, dashes, interleaved, code points in four notations, NATO spelling,
percent/HTML/escape/quoted-printable, gzip+base64, zero-width, homoglyphs, base64 of the reversed key or shifted,
chunks reversed, separators swapped), read by ``LeakScanner().scan_text`` or ``.scan`` (split across two arguments),
30% with the key known; and six benign windowed texts. Each tree runs in its own process; every finding (kind, type,
path, value) is compared.
"""

from __future__ import annotations

import argparse
import base64
import codecs
import importlib.util
import json
import os
import pickle
import random
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKER = r"""
import json, pickle, sys, time
sys.path.insert(0, sys.argv[1])
from agentguard.core.types import Context
from agentguard.policies import SecretLeakGuard
from agentguard.policies.secrets import LeakScanner
from agentguard.policies.secret_fragments import KnownSecrets
items = pickle.load(open(sys.argv[2], "rb"))
g, s = SecretLeakGuard(), LeakScanner()
out = []
t0 = time.process_time()
for kind, x, known in items:
    if kind == "guard":
        v = g.check(Context(), x)
        out.append([v.allowed, v.reason, json.dumps(v.details.get("leaks", []), sort_keys=True, default=str)])
        continue
    try:
        ks = KnownSecrets(known) if known else None
    except Exception:
        ks = None
    f = s.scan_text(x, "t", known=ks) if kind == "text" else s.scan(x, known=ks)
    out.append(sorted([a.kind, a.type, a.path, a.value] for a in f))
json.dump({"cpu_s": time.process_time() - t0, "out": out}, open(sys.argv[3], "w"))
"""


def _spell(k: str) -> str:
    from agentguard.policies.secret_spelled import DIGITS, LETTERS

    nato = {v: w for w, v in LETTERS.items()} | {v: w for w, v in DIGITS.items()}
    return " ".join(("capital " + nato[c.lower()]) if c.isupper() else nato.get(c, "underscore" if c == "_" else "dash")
                    for c in k)


ENCODINGS = {
    "plain": lambda k: k, "base64": lambda k: base64.b64encode(k.encode()).decode(),
    "base32": lambda k: base64.b32encode(k.encode()).decode(), "hex": lambda k: k.encode().hex(),
    "base85": lambda k: base64.b85encode(k.encode()).decode(), "ascii85": lambda k: base64.a85encode(k.encode()).decode(),
    "reversed": lambda k: k[::-1], "rot13": lambda k: codecs.encode(k, "rot13"), "upper": str.upper, "lower": str.lower,
    "groups": lambda k: " ".join(k[i:i + 4] for i in range(0, len(k), 4)), "dashes": "-".join,
    "interleaved": lambda k: "".join(c + "x" for c in k), "every 3rd": lambda k: "".join(c + "qz" for c in k),
    "decimal": lambda k: " ".join(str(ord(c)) for c in k), "0x": lambda k: ",".join(hex(ord(c)) for c in k),
    "octal": lambda k: "".join("\\%03o" % ord(c) for c in k), "binary": lambda k: " ".join(f"{ord(c):08b}" for c in k),
    "spelled": _spell, "url": lambda k: urllib.parse.quote(k, safe=""),
    "percent": lambda k: "".join("%%%02X" % ord(c) for c in k), "html": lambda k: "".join("&#%d;" % ord(c) for c in k),
    "escapes": lambda k: "".join("\\u%04x" % ord(c) for c in k),
    "zlib base64": lambda k: base64.b64encode(zlib.compress(k.encode())).decode(), "zero-width": "\u200b".join,
    "homoglyph": lambda k: k.replace("A", "\u0410").replace("o", "\u043e"),
    "base64 reversed": lambda k: base64.b64encode(k[::-1].encode()).decode(),
    "chunks reversed": lambda k: " ".join(reversed([k[i:i + 4] for i in range(0, len(k), 4)])),
    "quoted-printable": lambda k: "".join("=%02X" % ord(c) for c in k),
    "base64 shifted": lambda k: base64.b64encode(("xy" + k).encode()).decode()[2:],
    "separators swapped": lambda k: k.replace("_", "-"),
}


def _inputs(data: str, generated: int) -> tuple[list, dict]:
    sys.path.insert(0, str(REPO / "src"))
    from agentguard.bench.secret_leak import benign_corpus, seeded_corpus, seeded_secrets

    spec = importlib.util.spec_from_file_location("tsw", REPO / "tests/policies/test_secret_windows.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    items: list = [("guard", p, None) for props in benign_corpus(data, REPO / "examples").values() for p in props]
    counts = {"benign": len(items)}
    items += [("guard", d["call"], None) for d in seeded_corpus(3, 1)]
    counts["seeded"] = len(items) - counts["benign"]
    rng = random.Random(23)
    keys = [v for _, _, v, _ in seeded_secrets(2, 5)]
    for _ in range(generated):
        k, enc = rng.choice(keys), rng.choice(sorted(ENCODINGS))
        text = mod.benign_text(rng.choice([200, 3000, 9000, 20000]), seed=rng.randrange(50), ids=rng.random() < 0.7)
        cut = rng.randrange(len(text) + 1)
        t = (text[:cut] + rng.choice([" ", "\n", "=", ": ", ""]) + ENCODINGS[enc](k) + rng.choice([" ", "\n", "", "."])
             + text[cut:])
        known = [k] if rng.random() < 0.3 else None
        items.append(("scan", {"body": t[:len(t) // 2], "more": t[len(t) // 2:]}, known) if rng.random() < 0.25
                     else ("text", t, known))
    counts["generated"] = generated
    for size in (9000, 30000):
        items += [("text", mod.benign_text(size, seed=100 + sd, ids=sd != 1), None) for sd in range(3)]
    counts["benign_windowed"] = 6
    return items, counts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", default="5f5e282")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--generated", type=int, default=300)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/secret_scan_differential_s23.json"))
    a = ap.parse_args()
    items, counts = _inputs(a.data, a.generated)
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        arch = Path(tmp) / "old.tar"
        subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(arch), a.old, "src"], check=True)
        with tarfile.open(arch) as tf:
            tf.extractall(Path(tmp) / "old")
        pkl = Path(tmp) / "items.pkl"
        pkl.write_bytes(pickle.dumps(items))
        for tree, src in (("new", REPO / "src"), ("old", Path(tmp) / "old" / "src")):
            out = Path(tmp) / f"{tree}.json"
            subprocess.run([sys.executable, "-c", WORKER, str(src), str(pkl), str(out)], check=True)
            res[tree] = json.loads(out.read_text())
    differ = [i for i, (x, y) in enumerate(zip(res["old"]["out"], res["new"]["out"])) if x != y]
    nb = counts["benign"]
    result = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
              "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "new_commit": head, "old_commit": a.old,
              "inputs": counts, "n": len(items), "differences": len(differ), "differing_inputs": differ[:50],
              "benign_refused": {t: sum(1 for v in res[t]["out"][:nb] if not v[0]) for t in ("old", "new")},
              "seeded_refused": {t: sum(1 for v in res[t]["out"][nb:nb + counts["seeded"]] if not v[0])
                                 for t in ("old", "new")},
              "generated_with_findings": {t: sum(1 for v in res[t]["out"][nb + counts["seeded"]:] if v)
                                          for t in ("old", "new")},
              "cpu_s": {t: res[t]["cpu_s"] for t in ("old", "new")}, "loadavg_end": os.getloadavg(),
              "note": "cpu_s: the whole input set in one process per tree, sequentially, on a shared loaded machine"}
    Path(a.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "differing_inputs"}), file=sys.stderr)


if __name__ == "__main__":
    main()
