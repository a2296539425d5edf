"""Over-refusal of the MCP proxy's argument readings (session 21) on benign calls: every call of every user task of
the shipped MCP scenarios (``agentguard/bench/mcp_*.json``: file system and mail, Google Calendar, GitHub, HubSpot,
Jira, Stripe; the tools' published ``inputSchema`` each) is checked by the proxy's ``call_refusal``, split into what
refuses it (declared types, a JSON text MCPServer parses or the string 'null', neither), and counted when
``judged_call`` fills in listed defaults. Writes benchmarks/results/mcp_argument_readings.json.

    python benchmarks/mcp_argument_readings.py
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "mcp_argument_readings.json"


def main() -> None:
    from agentguard.core.types import ToolCall
    from agentguard.integrations.declared import judged_call, type_refusal
    from agentguard.integrations.mcp.decide import call_refusal, json_text_refusal

    bench = REPO / "src" / "agentguard" / "bench"
    per: dict[str, dict[str, int]] = {}
    refused: list[dict] = []
    for path in sorted(bench.glob("mcp_*.json")):
        spec = json.loads(path.read_text(encoding="utf-8"))
        schemas = {t["name"]: t["inputSchema"] for t in spec["tools"]}
        counts = {"calls": 0, "refused": 0, "refused_types": 0, "refused_json_text": 0, "defaults_filled": 0}
        tasks = spec["user_tasks"].values() if isinstance(spec["user_tasks"], dict) else spec["user_tasks"]
        for task in tasks:
            for name, args in task["calls"]:
                counts["calls"] += 1
                why = call_refusal(schemas, name, dict(args))
                if why is not None:
                    counts["refused"] += 1
                    kind = "refused_json_text" if json_text_refusal(schemas.get(name) or {}, dict(args)) and \
                        type_refusal(schemas.get(name), dict(args)) is None else "refused_types"
                    counts[kind] += 1
                    refused.append({"scenarios": path.name, "tool": name, "why": why[:200]})
                if judged_call(schemas, ToolCall(name, dict(args))).arguments != dict(args):
                    counts["defaults_filled"] += 1
        per[path.name] = counts
    total = {k: sum(c[k] for c in per.values()) for k in next(iter(per.values()))}
    doc = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
           "total": total, "per_scenarios": per, "refused": refused}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(total), file=sys.stderr)


if __name__ == "__main__":
    main()
