"""shell_worst_case: the time agentguard.policies.shell decides on adversarial inputs (session 11 red team).

The guard must answer within a bounded time and fail closed. Each input family is built near the text limit
(``--chars``, default 99,000 characters): unmatched braces and brackets, long globs, many commands, pipes,
``cd``s, tildes, nested substitutions... For each, the time of :func:`analyse` and of the whole shipped
``rules.toml`` check (one run each: the worst case, not a median), the decision and the reason. Before this
round 20,000 ``[`` took 260 s and 800 ``cd a;`` 170 s; the JSON records the load average, since the machine is
shared. Run: ``python benchmarks/shell_worst_case.py [--chars N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "shell_worst_case.json"


def families(n: int) -> dict[str, str]:
    return {
        "open_braces": "echo " + "{" * n, "open_brackets": "echo " + "[" * n,
        "brace_commas": "echo {" + "a," * (n // 2) + "}", "bracket_word": "echo " + "[a" * (n // 2),
        "stars": "cat /" + "*/" * (n // 2), "stars_noslash": "cat " + "a*" * (n // 2),
        "qmarks": "cat /etc/" + "?" * n, "dollar_paren": "echo " + "$(" * (n // 4) + ")" * (n // 4),
        "subshell": "(" * (n // 2) + ")" * (n // 2), "semicolons": "ls;" * (n // 3), "pipes": "ls|" * (n // 3) + "ls",
        "words": "ls " + "a " * (n // 2), "tildes": "ls " + "~a " * (n // 3), "assign_tildes": "ls a=" + "~:" * (n // 2),
        "heredoc": "cat <<E\n" + "x\n" * (n // 2) + "E", "backslashes": "echo " + "\\x" * (n // 2),
        "backquotes": "echo " + "`" * n, "dquote_dollar": "echo \"" + "$x" * (n // 2) + "\"",
        "arith": "echo $((" + "1+" * (n // 2) + "1))", "ansi_c": "echo $'" + "\\x41" * (n // 4) + "'",
        "dotdot": "cat " + "../" * (n // 3), "sed_script": "sed '" + "s/a/b/;" * (n // 7) + "' x",
        "expansions": "echo ${x" + ":-${x" * (n // 6) + "}" * (n // 6) + "}", "case": "case x in " + "a) ;; " * (n // 6) + "esac",
        "globs_vs_rules": "cat " + "/*a" * (n // 3), "bracket_sets": "cat " + "/[a-z]" * (n // 6),
        "redirects": "ls" + " >a" * (n // 3), "cd_many": "cd a;" * (n // 5) + "ls", "quotes": "echo " + "''" * (n // 2),
        "concatenation": "echo " + "a\"b\"" * (n // 4), "option_paths": "ls " + "-o=/" * (n // 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chars", type=int, default=99_000)
    args = ap.parse_args()
    from agentguard.config import load_stack
    from agentguard.core import Context, ToolCall
    from agentguard.policies.shell import analyse

    rules = load_stack(REPO / "src" / "agentguard" / "server" / "examples" / "rules.toml")
    analyse("ls -la")  # load the parser
    load_before = os.getloadavg()
    rows = {}
    for name, cmd in families(args.chars).items():
        t0 = time.perf_counter()
        a = analyse(cmd)
        t1 = time.perf_counter()
        v = rules.check(Context(), ToolCall("run_command", {"command": cmd}))
        t2 = time.perf_counter()
        rows[name] = {"chars": len(cmd), "analyse_s": round(t1 - t0, 3), "rules_check_s": round(t2 - t1, 3),
                      "decision": v.decision.name, "unresolvable": a.unresolvable[:1]}
    worst = max(rows, key=lambda k: rows[k]["analyse_s"] + rows[k]["rules_check_s"])
    result = {"benchmark": "shell_worst_case: time to decide on adversarial inputs near the text limit (one run "
                           "each, analyse then the whole rules.toml check)",
              "command": "python benchmarks/shell_worst_case.py" + (f" --chars {args.chars}"
                                                                   if args.chars != 99_000 else ""),
              "machine": {"python": platform.python_version(), "cpu": platform.processor() or platform.machine(),
                          "cores": os.cpu_count(), "loadavg_before": load_before, "loadavg_after": os.getloadavg()},
              "worst": {"family": worst, **rows[worst]}, "families": rows}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["worst"]), "load", result["machine"]["loadavg_after"])


if __name__ == "__main__":
    main()
