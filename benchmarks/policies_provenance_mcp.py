"""The provenance guard on MCP file-system and e-mail tools it was not designed on (issue 27), with declarations
inferred from the tools' schemas only (agentguard.bench.mcp_hijack); writes
benchmarks/results/policies_provenance_mcp.json. The same scenarios are also scored with the tool-word and schema
grants on (``with_tool_words_and_schema_grants``: agentguard.policies.toolgrants, agentguard.policies.schemagrants).

    python benchmarks/policies_provenance_mcp.py
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "policies_provenance_mcp.json"


def main() -> None:
    from agentguard.bench.mcp_hijack import evaluate

    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    res = evaluate()
    extra = evaluate(tool_words=True, schema_grants=True)
    doc = {"command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
           "load_average_1m_before": load0, "load_average_1m_after": os.getloadavg()[0],
           "seconds": time.perf_counter() - t0, **res,
           "with_tool_words_and_schema_grants": {g: extra[g] for g in ("none", "provenance")}}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    for g, r in [(g, res[g]) for g in ("none", "provenance")] + [("provenance, tool-word and schema grants",
                                                                   extra["provenance"])]:
        print(f"{g}: utility {r['utility']}/{r['user_tasks']}, attack success {r['attack_success']}/{r['pairs']}, "
              f"max per injection task {r['max_asr_per_injection_task']:.2f}", file=sys.stderr)
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
