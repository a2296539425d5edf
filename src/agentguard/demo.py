"""``agentguard demo``: the main job, on embedded defaults (no network, no API key).

For now it runs the issue-2 demo (:func:`agentguard.predictive.demo.run_dtmc_demo`): learn a DTMC
from the example traces in ``examples/``, check ``P=? [F "unsafe"]`` for every state, print the
per-state risk table with the PAC report, and draw the DTMC (unsafe states highlighted) to a PNG.
"""

from __future__ import annotations

import typer


def register(app: typer.Typer, bench: typer.Typer) -> None:
    @app.command()
    def demo(
        out: str = typer.Option("demo-output", "--out", help="folder for the report files"),
        json_out: bool = typer.Option(False, "--json", help="print the summary as one JSON object"),
    ) -> None:
        """Run the end-to-end demo on embedded defaults (learn a DTMC, check safety, draw it)."""
        import json

        from .predictive.demo import run_dtmc_demo

        summary = run_dtmc_demo(out, quiet=json_out)
        if json_out:
            typer.echo(json.dumps(summary))
