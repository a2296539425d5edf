"""The provenance guard on a HubSpot CRM MCP server's tools (shinzo-labs/hubspot-mcp), a third fresh tool set nobody
designed it on (issue 27): a blind generalisation measurement with the method frozen at the commit the scenario file
names (agentguard.bench.hubspot_hijack; declarations inferred from the schemas only). Writes
benchmarks/results/policies_provenance_hubspot.json; ``--label`` names the figure (``blind`` for the first and
only run on the frozen method, ``after_fixes (not blind)`` for any later one), and each label is kept.

    python benchmarks/policies_provenance_hubspot.py --schema-grants --label blind

The set (bench/mcp_hubspot.json) was written and committed before any guard was run on it. A ``blind`` run is
refused while the scenario file's ``frozen_method_commit`` is still the placeholder: whoever runs the one blind
score sets it to the commit whose method is scored, and chooses the options (``--schema-grants``,
``--tool-words``) before the run, not after.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from policies_provenance_github import REPO, run  # noqa: E402

OUT = REPO / "benchmarks" / "results" / "policies_provenance_hubspot.json"


def main() -> None:
    from agentguard.bench.hubspot_hijack import evaluate, load

    run(evaluate, OUT, blind_ready=lambda: load()["frozen_method_commit"] != "TO BE SET BY THE LEAD")


if __name__ == "__main__":
    main()
