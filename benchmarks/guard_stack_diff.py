"""Differential check of the service's tool-guard stack (the shipped rules example) between two source trees: the
same probes decided by both, compared on decision, reason and deciding guard (session 24, issue 32: the stack's
shortcuts must not change an answer).

Probes: the benign corpora of ``rules_benign_paths.py`` / ``network_benign.py`` (AgentDojo's ground-truth calls,
Mind2Web-SC's actions when ``--data`` holds them, the dict literals of ``examples/``, ``tests/policies/
benign_file_calls.json``), every shell corpus of ``tests/policies/shell/*.txt`` (benign commands, the refused and
attack records of sessions 18-22) as ``run_command``, every string literal of the rules, network and argument
tests (``tests/policies/test_rules*.py``, ``test_network*.py``, ``test_arguments*.py``) as a ``run_command``
command, a ``read_file`` path and a ``fetch`` url, and the bodies of ``server_check_ab.request_mix``. Each probe is
also decided under other tool names (``rent_car``: refused by the allow list; but for the test literals also
``exec``: denied, a shell tool; ``search_files``: allowed, reads trees), so the allow-list shortcut meets every
argument shape. Each is decided by
``check`` and by ``adecided`` (the service's path). Each tree runs in its own child process (``PYTHONPATH=<tree>/src``).

    PYTHONPATH=$PWD/src python benchmarks/guard_stack_diff.py --base /tmp/gbase \\
        --out benchmarks/results/guard_stack_diff_s24.json
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
NAMES = ("rent_car", "exec", "search_files")


def _records(path: Path) -> list[str]:
    text = path.read_text()
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    if any(ln.strip() == "%%" for ln in lines):
        recs, cur = [], []
        for ln in lines:
            if ln.strip() == "%%":
                recs.append("\n".join(cur).strip())
                cur = []
            else:
                cur.append(ln)
        recs.append("\n".join(cur).strip())
        return [r for r in recs if r]
    return [ln for ln in lines if ln.strip()]


def _literals(path: Path) -> list[str]:
    return [n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and 0 < len(n.value) <= 2000]


def probes(data: str) -> dict[str, list[tuple[str, dict]]]:
    from agentguard.bench.secret_leak import benign_corpus

    sys.path.insert(0, str(HERE))
    import server_check_ab as ab  # noqa: PLC0415

    out: dict[str, list[tuple[str, dict]]] = {}
    for k, calls in benign_corpus(data, REPO / "examples").items():
        if k.endswith(("_calls", "examples")):
            out[k] = [(c.name, dict(c.arguments)) for c in calls]
    files = REPO / "tests/policies/benign_file_calls.json"
    out["benign_file_calls"] = [(n, a) for n, a in json.loads(files.read_text())["calls"]]
    for f in sorted((REPO / "tests/policies/shell").glob("*.txt")):
        out[f"shell/{f.stem}"] = [("run_command", {"command": c}) for c in _records(f)]
    lits = sorted({s for pat in ("test_rules*.py", "test_network*.py", "test_arguments*.py")
                   for f in (REPO / "tests/policies").glob(pat) for s in _literals(f)})
    out["test_literals"] = [(t, {k: s}) for s in lits for t, k in (("run_command", "command"), ("read_file", "path"),
                                                                   ("fetch", "url"))]
    out["request_mix"] = [(b["tool_call"]["name"], b["tool_call"]["arguments"]) for mix in ("issue", "shell")
                          for b in ab.request_mix(mix, runs=1)]
    return out


def child(data: str) -> dict[str, Any]:
    import asyncio

    from agentguard.config import load_stack
    from agentguard.core.replacement import adecided
    from agentguard.core.types import Context, Decision, ToolCall, Trace

    stack = load_stack(REPO / "src" / "agentguard" / "server" / "examples" / "rules.toml")
    res: dict[str, Any] = {}

    def row(v: Any) -> list[Any]:
        trail = v.details.get("verdicts") or []
        return [v.decision.name, v.reason, v.guard, [t.get("guard") for t in trail],
                list(v.details.get("violations") or [])]

    async def run() -> None:
        for corpus, calls in probes(data).items():
            rows = []
            for name, args in calls:
                for tool in (name, *(NAMES if corpus != "test_literals" else NAMES[:1])):
                    try:
                        call = ToolCall(tool, args)
                    except Exception as exc:  # noqa: BLE001 - a probe no ToolCall holds
                        rows.append(["unreadable", type(exc).__name__])
                        continue
                    ctx = Context(run_id="r", trace=Trace(run_id="r"))
                    rows.append([row(stack.check(ctx, call)),
                                 row(await adecided(stack, ctx, call, timeout_s=None, on_error=Decision.HALT))])
            res[corpus] = rows

    asyncio.run(run())
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="a worktree of the branch point (required but with --child)")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--out")
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.data)))
        return
    if not a.base:
        ap.error("--base is required")
    procs = {kind: subprocess.Popen([sys.executable, __file__, "--child", "--data", a.data], stdout=subprocess.PIPE,
                                    text=True, env={**os.environ, "PYTHONPATH": str(tree / "src")})
             for kind, tree in (("before", Path(a.base).resolve()), ("after", REPO))}  # side by side
    got = {}
    for kind, p in procs.items():
        text, _ = p.communicate()
        if p.returncode:
            raise SystemExit(f"the {kind} tree's child failed ({p.returncode})")
        got[kind] = json.loads(text)
    corpora: dict[str, Any] = {}
    mismatches = []
    for corpus, before in got["before"].items():
        after = got["after"][corpus]
        c = {"decisions": 0, "same_answer": 0, "different_answer": 0, "refused": 0, "trail_shortened": 0,
             "violations_shortened": 0, "sync_async_differ": 0}
        for b, f in zip(before, after, strict=True):
            if b[0] == "unreadable":
                continue
            for path in (0, 1):
                c["decisions"] += 1
                same = b[path][:3] == f[path][:3]
                c["same_answer" if same else "different_answer"] += 1
                c["refused"] += b[path][0] != "ALLOW"
                c["trail_shortened"] += b[path][3] != f[path][3]
                c["violations_shortened"] += b[path][4] != f[path][4]
                if not same and len(mismatches) < 50:
                    mismatches.append({"corpus": corpus, "path": ["check", "adecided"][path], "before": b[path],
                                       "after": f[path]})
            c["sync_async_differ"] += f[0][:3] != f[1][:3]
        corpora[corpus] = c
    total = {k: sum(c[k] for c in corpora.values()) for k in next(iter(corpora.values()))}
    out = {"command": "python " + " ".join(sys.argv), "trees": {"before": str(Path(a.base).resolve()), "after": str(REPO)},
           "compared": "decision, reason, deciding guard (and, counted apart, the trail's guards and the rules "
                       "guard's violations)", "total": total, "corpora": corpora, "mismatches": mismatches}
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({"total": total, "mismatches": mismatches[:5]}, indent=1))


if __name__ == "__main__":
    main()
