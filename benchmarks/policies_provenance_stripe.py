"""The provenance guard on Stripe's agent-toolkit MCP tools, a second tool set nobody designed it on (issue 27): a
blind generalisation measurement with the method frozen at the commit the scenario file names
(agentguard.bench.stripe_hijack; declarations inferred from the schemas only). Writes
benchmarks/results/policies_provenance_stripe.json; ``--label`` names the figure (``blind`` for the first and
only run on the frozen method, ``after_fixes (not blind)`` for any later one), and each label is kept.

    python benchmarks/policies_provenance_stripe.py --schema-grants --label blind

The method scored blind is the one frozen at ``c60e9fe`` with grants from each tool's schema
(``--schema-grants``: the configuration this session's work on the GitHub set produced, chosen before this
set was first scored); the ``blind baseline`` labels are the method as it was before that work (c391574).
A ``blind`` run is refused while the scenario file's ``frozen_method_commit`` is still the placeholder.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from policies_provenance_github import REPO, run  # noqa: E402

OUT = REPO / "benchmarks" / "results" / "policies_provenance_stripe.json"


def main() -> None:
    from agentguard.bench.stripe_hijack import evaluate, load

    run(evaluate, OUT, blind_ready=lambda: load()["frozen_method_commit"] != "TO BE SET BY THE LEAD")


if __name__ == "__main__":
    main()
