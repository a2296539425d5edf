"""Per-call cost of the shell command analysis (issue 25), side by side with the old splitter, plus the
shipped allow-list's false-refusal rate on the benign corpus and (with ``--diff-n``) a long differential run.

    python benchmarks/shell_analysis.py                      # timings + false-refusal rate
    python benchmarks/shell_analysis.py --diff-n 50000       # ... and a 50,000-command differential run

Corpus: the benign commands of ``tests/policies/shell/benign_commands.txt``, the attack variants of
``tests/policies/test_rules_shell_example.py`` and 1,000 seeded generated commands of the differential
harness's ``mixed`` family. For every command, in one process and interleaved, the old lexical splitter
(``agentguard.core.canonical.shell_commands``), the new analysis (``agentguard.policies.shell.analyse``)
and the whole shipped rule guard (``rules.toml``'s ``check``) each run ``--reps`` times; a command's cost
is the median of its repetitions, and the JSON reports the median and p99 of those over each corpus.
Writes ``benchmarks/results/shell_analysis.json`` (a previous long differential run is kept when
``--diff-n`` is not given).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHELL_TESTS = REPO / "tests" / "policies" / "shell"
OUT = REPO / "benchmarks" / "results" / "shell_analysis.json"


def _module(path: Path, name: str):
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _stats(values: list[float]) -> dict:
    v = sorted(values)
    return {"n": len(v), "median_us": round(v[len(v) // 2] * 1e6, 1),
            "p99_us": round(v[min(len(v) - 1, int(len(v) * 0.99))] * 1e6, 1), "max_us": round(v[-1] * 1e6, 1)}


def _time(fn, arg, reps: int) -> float:
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(arg)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--generated", type=int, default=1000)
    ap.add_argument("--diff-n", type=int, default=0, help="also run the differential harness on N commands")
    args = ap.parse_args()

    from agentguard.config import load_stack
    from agentguard.core import Context, Decision, ToolCall
    from agentguard.core.canonical import shell_commands
    from agentguard.policies.shell import analyse

    benign_mod = _module(REPO / "tests" / "policies" / "test_rules_shell_benign.py", "shell_benign")
    example = _module(REPO / "tests" / "policies" / "test_rules_shell_example.py", "shell_example")
    diff = _module(SHELL_TESTS / "test_analysis_differential.py", "shell_differential")
    rules = load_stack(REPO / "src" / "agentguard" / "server" / "examples" / "rules.toml")
    ctx = Context()
    corpora = {"benign": benign_mod.corpus(),
               "attack_families": [c for cmds in example.FAMILIES.values() for c in cmds],
               "generated_mixed": diff.generate("mixed", args.generated, 7)}
    check = lambda c: rules.check(ctx, ToolCall("run_command", {"command": c}))  # noqa: E731
    for c in corpora["benign"][:50]:  # warm up (parser load, caches)
        analyse(c), shell_commands(c), check(c)
    timings: dict = {}
    for name, cmds in corpora.items():
        old, new, guard = [], [], []
        for c in cmds:
            old.append(_time(shell_commands, c, args.reps))
            new.append(_time(analyse, c, args.reps))
            guard.append(_time(check, c, args.reps))
        timings[name] = {"old_splitter_shell_commands": _stats(old), "analyse": _stats(new),
                         "rules_toml_check": _stats(guard),
                         "median_ratio_analyse_over_old": round(statistics.median(
                             n / o for n, o in zip(new, old) if o > 0), 1)}
    allc = [c for cmds in corpora.values() for c in cmds]
    refused = {}
    for c in corpora["benign"]:
        v = check(c)
        if v.decision != Decision.ALLOW:
            refused[c] = (v.details or {}).get("violations", [v.reason])
    result = {
        "benchmark": "shell_analysis: per-call cost of agentguard.policies.shell.analyse vs the old splitter "
                     "agentguard.core.canonical.shell_commands (same process, interleaved), the whole "
                     "rules.toml check, the shipped allow-list's false-refusal rate on the benign corpus",
        "command": "python benchmarks/shell_analysis.py" + (f" --reps {args.reps}" if args.reps != 21 else "")
                   + (f" --diff-n {args.diff_n}" if args.diff_n else ""),
        "machine": {"python": platform.python_version(), "cpu": platform.processor() or platform.machine(),
                    "cores": os.cpu_count()},
        "reps_per_command": args.reps,
        "corpus_sizes": {k: len(v) for k, v in corpora.items()} | {"all": len(allc)},
        "timings": timings,
        "target": "under 200 us median for a typical command (benign corpus median of analyse)",
        "typical_command_median_us": timings["benign"]["analyse"]["median_us"],
        "false_refusals": {"corpus": "tests/policies/shell/benign_commands.txt", "commands": len(corpora["benign"]),
                           "refused": len(refused), "rate": round(len(refused) / len(corpora["benign"]), 4),
                           "each": [{"command": c, "why": why, "rule": benign_mod.EXPECTED_REFUSALS.get(c, "UNEXPECTED")}
                                    for c, why in refused.items()]},
    }
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    if args.diff_n:
        run = diff.run_many(args.diff_n)
        run["command"] = f"python benchmarks/shell_analysis.py --diff-n {args.diff_n}"
        result["differential_long_run"] = run
    elif "differential_long_run" in previous:
        result["differential_long_run"] = previous["differential_long_run"]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("typical_command_median_us", "corpus_sizes")}, indent=1))
    print(json.dumps(timings, indent=1))
    print("false refusals:", result["false_refusals"]["refused"], "/", result["false_refusals"]["commands"])
    if "differential_long_run" in result:
        print(json.dumps({k: v for k, v in result["differential_long_run"].items() if k != "examples"}))


if __name__ == "__main__":
    main()
