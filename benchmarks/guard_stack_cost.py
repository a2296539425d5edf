"""CPU per decision of the service's tool-guard stack (the shipped rules example) alone, per request body, before and
after a change, in one run (issue 32).

The stack is ``agentguard.config.load_stack(src/agentguard/server/examples/rules.toml)`` (``tool-rules`` and
``network-rules``). Each body of ``server_check_ab.request_mix("issue")`` and ``request_mix("shell")`` is decided
``--n`` times in a tight loop two ways: ``check`` (the synchronous stack) and ``adecided`` (what the service's
pipeline awaits on ``/v1/check``: :func:`agentguard.core.replacement.adecided` -> ``arun_guard`` -> the stack's
``acheck``), on one event loop. CPU is the thread's (``time.thread_time``), the least of 5 chunks of ``n/5``
decisions, so other jobs on a shared machine cost little. ``sync_cold_us``: ``check`` with the shell reader's kept
readings forgotten before each decision (a command seen for the first time; a tree without them: ``sync_us``). ``--base DIR`` measures the source tree DIR (a worktree of the branch point) too: each tree runs in its own
child process (``PYTHONPATH=<tree>/src``), the trees alternating ``--rounds`` times; the median of the rounds is
reported. Each child also writes what each body was decided (decision, guard, reason), and the run checks that the
trees agree on every body.

    PYTHONPATH=$PWD/src python benchmarks/guard_stack_cost.py --base /tmp/gbase --n 2000 --rounds 3 \\
        --out benchmarks/results/guard_stack_cost_s24.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
MIXES = ("issue", "shell")
CHUNKS = 5  # each figure is the least of 5 chunks of n/5 decisions (a shared machine's stalls only add)


def _bodies() -> dict[str, list[tuple[str, dict, dict]]]:
    sys.path.insert(0, str(HERE))
    import server_check_ab as ab  # noqa: PLC0415

    out = {}
    for mix in MIXES:
        seen: dict[str, tuple[str, dict, dict]] = {}
        for b in ab.request_mix(mix, runs=1):
            call = b["tool_call"]
            key = json.dumps([call["name"], call["arguments"], b["metadata"]], sort_keys=True)
            seen.setdefault(key, (call["name"], call["arguments"], b["metadata"]))
        out[mix] = list(seen.values())
    return out


def child(n: int) -> dict[str, Any]:
    """Measure the tree on sys.path (run as ``--child``)."""
    import asyncio

    from agentguard.config import load_stack
    from agentguard.core.replacement import adecided
    from agentguard.core.types import Context, Decision, ToolCall, Trace

    stack = load_stack(REPO / "src" / "agentguard" / "server" / "examples" / "rules.toml")
    from agentguard.policies.shell import analysis

    kept = getattr(analysis, "_kept", None)  # (a tree without it reads every command anew)
    forget = kept.cache_clear if kept is not None else None
    res: dict[str, Any] = {}
    for mix, bodies in _bodies().items():
        for i, (name, args, meta) in enumerate(bodies):
            ctx = Context(run_id="r", trace=Trace(run_id="r"), metadata={"adapter": "service", **meta})
            call = ToolCall(name, args)
            v = stack.check(ctx, call)
            chunk = max(1, n // CHUNKS)
            sync = []
            for _ in range(CHUNKS):
                t0 = time.thread_time()
                for _ in range(chunk):
                    stack.check(ctx, call)
                sync.append((time.thread_time() - t0) / chunk * 1e6)
            sync_us = min(sync)
            cold = []  # each decision without the shell reader's kept readings (a command not seen before)
            for _ in range(CHUNKS if forget else 0):
                t0 = time.thread_time()
                for _ in range(chunk):
                    forget()
                    stack.check(ctx, call)
                cold.append((time.thread_time() - t0) / chunk * 1e6)

            async def loop() -> tuple[float, Any]:
                va = await adecided(stack, ctx, call, timeout_s=None, on_error=Decision.HALT)
                took = []
                for _ in range(CHUNKS):
                    t1 = time.thread_time()
                    for _ in range(chunk):
                        await adecided(stack, ctx, call, timeout_s=None, on_error=Decision.HALT)
                    took.append((time.thread_time() - t1) / chunk * 1e6)
                return min(took), va

            async_us, va = asyncio.run(loop())
            res[f"{mix}/{i}"] = {"mix": mix, "tool": name, "arguments": args, "sync_us": sync_us, "async_us": async_us,
                                 "sync_cold_us": min(cold) if cold else sync_us,
                                 "decision": v.decision.name, "guard": v.guard, "reason": v.reason,
                                 "async_same": [va.decision.name, va.guard, va.reason] ==
                                               [v.decision.name, v.guard, v.reason]}
    return res


def run_tree(tree: Path, n: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    p = subprocess.run([sys.executable, __file__, "--child", "--n", str(n)], env=env, capture_output=True, text=True,
                       check=True)
    return json.loads(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base", help="a worktree of the branch point, measured in the same rounds")
    ap.add_argument("--out")
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.n)))
        return
    trees = {"after": REPO} | ({"before": Path(a.base).resolve()} if a.base else {})
    rounds: dict[str, list[dict]] = {k: [] for k in trees}
    for r in range(a.rounds):
        for kind in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
            rounds[kind].append(run_tree(trees[kind], a.n))
    bodies: dict[str, Any] = {}
    for key in rounds["after"][0]:
        row: dict[str, Any] = {k: rounds["after"][0][key][k] for k in ("mix", "tool", "arguments")}
        for kind in trees:
            first = rounds[kind][0][key]
            row[kind] = {p: round(statistics.median(x[key][p] for x in rounds[kind]), 1)
                         for p in ("sync_us", "async_us", "sync_cold_us")}
            row[kind] |= {"decision": first["decision"], "guard": first["guard"], "reason": first["reason"],
                          "async_same": all(x[key]["async_same"] for x in rounds[kind])}
        if "before" in trees:
            row["same_decision"] = all(row["after"][f] == row["before"][f] for f in ("decision", "guard", "reason"))
        bodies[key] = row
    summary = {}
    for mix in MIXES:
        for kind in trees:
            for path in ("sync_us", "async_us", "sync_cold_us"):
                rows = [b for b in bodies.values() if b["mix"] == mix]
                ref = [b[kind][path] for b in rows if b["after"]["decision"] != "ALLOW"
                       and "allow list" in b["after"]["reason"]]
                ok = [b[kind][path] for b in rows if b["after"]["decision"] == "ALLOW"]
                summary[f"{mix}/{kind}/{path}"] = {
                    "mean": round(statistics.mean(b[kind][path] for b in rows), 1),
                    "allow_list_refusals_max": max(ref) if ref else None,
                    "allowed_max": max(ok) if ok else None}
    out = {"command": "python " + " ".join(sys.argv), "python": sys.version.split()[0], "n": a.n, "rounds": a.rounds,
           "trees": {k: str(v) for k, v in trees.items()}, "cpu": "time.thread_time per decision, least of 5 chunks, median of rounds",
           "all_same_decision": all(b.get("same_decision", True) and all(b[k]["async_same"] for k in trees)
                                    for b in bodies.values()),
           "summary": summary, "bodies": bodies}
    text = json.dumps(out, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n")
    print(json.dumps({"all_same_decision": out["all_same_decision"], "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
