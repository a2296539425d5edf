"""The provenance guard on the Google Calendar MCP server's tools (nspady/google-calendar-mcp), a fifth fresh tool set
nobody designed it on (issue 27): a blind generalisation measurement with the method frozen at the commit the scenario
file names (agentguard.bench.gcal_hijack; declarations inferred from the schemas only). Writes
benchmarks/results/policies_provenance_gcal.json; ``--label`` names the figure (``blind`` for the first and only run on
the frozen method, ``after_fixes (not blind)`` for any later one), and each label is kept.

    python benchmarks/policies_provenance_gcal.py --schema-grants --label blind

The set (bench/mcp_gcal.json) was written and committed before any guard was run on it. A ``blind`` run is refused
while the scenario file's ``frozen_method_commit`` is still the placeholder: whoever runs the one blind score sets it
to the commit whose method is scored, and chooses the options (``--schema-grants``, ``--tool-words``) before the run,
not after.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from policies_provenance_github import REPO, run  # noqa: E402

OUT = REPO / "benchmarks" / "results" / "policies_provenance_gcal.json"


def main() -> None:
    from agentguard.bench.gcal_hijack import evaluate, load

    run(evaluate, OUT, blind_ready=lambda: load()["frozen_method_commit"] != "TO BE SET BY THE LEAD")


if __name__ == "__main__":
    main()
