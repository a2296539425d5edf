"""Cost of the secret scanner against the length of a benign text, this tree side by side with an older commit.

    python benchmarks/secret_scan_scaling.py [--old 8d42933] [--data ../shared/data] [--cap 60]
                                              [--new-only] [--out benchmarks/results/secret_scan_scaling.json]

Texts (benign; any finding is a false refusal and is recorded):

- ``corpus``: the benign corpora's texts concatenated and repeated (AgentDojo v1.2 ground-truth calls and prompts,
  Mind2Web-SC calls and outputs, the project's examples: :func:`agentguard.bench.secret_leak.benign_corpus`), as in
  ``benchmarks/secret_fragments.py``;
- ``ids``: the synthetic tool output of ``tests/policies/test_secret_windows.py`` (``benign_text``: JSON records with
  UUIDs and URLs, log lines with 128-bit hex request ids, prose): random runs are the costliest benign content.

Sizes 1 KB to 1 MB. For each (tree, text, size), in a fresh subprocess: CPU seconds (``time.process_time``, the
figure that load on this shared machine disturbs least) and wall seconds of ``LeakScanner().scan_text(text)`` and of
``SecretLeakGuard().check(...)`` with the text as a ``write_file`` argument, and the finding types. The older tree
(``git archive <old> src``) is measured up to the first size whose run passes ``--cap`` seconds (wall); larger sizes
are recorded as not run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SIZES = [1_000, 4_000, 16_000, 64_000, 256_000, 1_000_000]
WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from agentguard.core.types import Context, ToolCall
from agentguard.policies import SecretLeakGuard
from agentguard.policies.secrets import LeakScanner
text = open(sys.argv[2], encoding="utf-8").read()
s, g = LeakScanner(), SecretLeakGuard()
s.scan_text("warm \u00e9\u200b AKIA" * 3)
g.check(Context(), ToolCall("w", {"c": "warm \u00e9"}))
t0, w0 = time.process_time(), time.perf_counter()
found = s.scan_text(text)
scan = {"cpu_s": time.process_time() - t0, "wall_s": time.perf_counter() - w0, "findings": sorted({f.type for f in found})}
t0, w0 = time.process_time(), time.perf_counter()
v = g.check(Context(), ToolCall("write_file", {"path": "out.txt", "content": text}))
guard = {"cpu_s": time.process_time() - t0, "wall_s": time.perf_counter() - w0, "allowed": v.allowed, "reason": v.reason[:200]}
print(json.dumps({"scan_text": scan, "guard": guard}))
"""


def _texts(data: str) -> dict[str, str]:
    sys.path.insert(0, str(REPO / "src"))
    from agentguard.bench.secret_leak import benign_corpus

    parts = []
    for items in benign_corpus(data, REPO / "examples").values():
        parts += [json.dumps(p.arguments) if hasattr(p, "arguments") else str(p) for p in items]
    corpus = "\n".join(parts)
    spec = importlib.util.spec_from_file_location("tsw", REPO / "tests/policies/test_secret_windows.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    n = max(SIZES)
    return {"corpus": (corpus * (n // len(corpus) + 1))[:n], "ids": mod.benign_text(n)}


def _run(src: Path, text: str, cap: float) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write(text)
    try:
        p = subprocess.run([sys.executable, "-c", WORKER, str(src), f.name], capture_output=True, text=True,
                           timeout=cap * 3)
        if p.returncode != 0:
            return {"error": p.stderr[-500:]}
        return json.loads(p.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {cap * 3:.0f} s"}
    finally:
        os.unlink(f.name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", default="8d42933")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--cap", type=float, default=60.0)
    ap.add_argument("--new-only", action="store_true", help="measure this tree only (not --old)")
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/secret_scan_scaling.json"))
    a = ap.parse_args()
    t_start, load0 = time.perf_counter(), os.getloadavg()
    texts = _texts(a.data)
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "src"], capture_output=True,
                                text=True).stdout.strip())
    res: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        arch = Path(tmp) / "old.tar"
        subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(arch), a.old, "src"], check=True)
        with tarfile.open(arch) as tf:
            tf.extractall(tmp)
        trees = {"new": REPO / "src"} if a.new_only else {"new": REPO / "src", "old": Path(tmp) / "src"}
        for tree, src in trees.items():
            res[tree] = {}
            for tname, full in texts.items():
                rows, stopped = [], False
                for n in SIZES:
                    if stopped:
                        rows.append({"chars": n, "not_run": f"a smaller size passed --cap {a.cap} s"})
                        continue
                    r = {"chars": n, **_run(src, full[:n], a.cap)}
                    rows.append(r)
                    print(tree, tname, json.dumps(r)[:300], file=sys.stderr)
                    wall = r.get("scan_text", {}).get("wall_s", 0) + r.get("guard", {}).get("wall_s", 0)
                    stopped = "error" in r or wall > a.cap
                res[tree][tname] = rows
    out = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
           "new_commit": head + ("+uncommitted src" if dirty else ""), "old_commit": a.old, "cpus": os.cpu_count(),
           "loadavg_start": load0, "loadavg_end": os.getloadavg(), "seconds": time.perf_counter() - t_start,
           "note": "cpu_s is the process's CPU time; the machine is shared (see loadavg), wall_s is inflated by load",
           "results": res}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
