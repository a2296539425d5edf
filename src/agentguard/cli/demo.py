"""``agentguard demo``: the main job, on embedded defaults (no network, no API key).

First a guarded agent's tool calls (:mod:`agentguard.demo.tool_calls`: a refused call, a human approval, a
proactive warning one call before a hazard), then the household end-to-end demo (:mod:`agentguard.demo.household`): learn DTMCs from the
recorded runs (or an embedded sample), run held-out episodes unguarded and guarded, print the table
and write ``<out>/report.html`` with a learned DTMC drawn (unsafe states highlighted) and the risk over
time of one episode; then the smaller issue-2 demo writes its files to the same folder.
``--dtmc-example`` runs only the smaller issue-2 demo
(:func:`agentguard.demo.dtmc_example.run_dtmc_demo`: learn a DTMC from the example traces, check
``P=? [F "unsafe"]`` for every state, print the risk table with the PAC report, draw it).
"""

from __future__ import annotations

import typer

from .options import DATA, JSON


def register(app: typer.Typer, bench: typer.Typer) -> None:
    @app.command()
    def demo(
        out: str = typer.Option("demo-output", "--out", help="folder for the report files"),
        as_json: bool = JSON,
        data: str = DATA,
        threshold: float = typer.Option(0.7, min=0.0, max=1.0,
                                       help="household: alarm when P_safe < threshold (in [0, 1])"),
        gemma: bool = typer.Option(False, help="household: also run live episodes with the local gemma-3-270m"),
        dtmc_example: bool = typer.Option(False, "--dtmc-example", help="run the small DTMC example demo instead"),
    ) -> None:
        """Run the end-to-end demo on embedded defaults."""
        import json
        from pathlib import Path

        from ..core.errors import InputError

        if Path(out).exists() and not Path(out).is_dir():  # before the work, not after the first part
            raise InputError(f"--out {out} is a file: give a folder for the report files (created if missing)")

        from ..demo.dtmc_example import run_dtmc_demo

        if dtmc_example:
            summary = run_dtmc_demo(out, quiet=as_json)
        else:
            from ..demo.household import run_household_demo
            from ..demo.tool_calls import run_tool_call_demo

            calls = run_tool_call_demo(quiet=as_json)  # first: a guarded agent's tool calls
            if not as_json:
                typer.echo("")

            live = None
            if gemma:
                from ..llm.local import LocalGemmaClient

                live = LocalGemmaClient()
            house = run_household_demo(out, data or None, live=live, threshold=threshold, quiet=as_json)
            # the small DTMC example (model.json, model.prism, dtmc.png) goes into the same folder
            summary = run_dtmc_demo(out, quiet=as_json)
            summary["household"] = house
            summary["tool_calls"] = calls
        if as_json:
            typer.echo(json.dumps(summary, default=str))
