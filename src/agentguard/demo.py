"""``agentguard demo``: the main job, on embedded defaults (no network, no API key).

Runs the household end-to-end demo (:mod:`agentguard.envs.household.demo`): learn DTMCs from the
recorded runs (or an embedded sample), run held-out episodes unguarded and guarded, print the table
and write ``<out>/report.html`` with the learned DTMC and the risk over time of one episode.
"""

from __future__ import annotations

import typer


def register(app: typer.Typer, bench: typer.Typer) -> None:
    @app.command()
    def demo(out: str = typer.Option("demo-output", help="folder for the report files"),
             data: str = typer.Option("", help="data folder (default ../shared/data; embedded sample if absent)"),
             threshold: float = typer.Option(0.7, help="alarm when P_safe < threshold"),
             gemma: bool = typer.Option(False, help="also run live episodes with the local gemma-3-270m")) -> None:
        """Run the end-to-end demo on embedded defaults."""
        from .envs.household.demo import run_household_demo

        live = None
        if gemma:
            from .llm.local import LocalGemmaClient

            live = LocalGemmaClient()
        run_household_demo(out, data or None, live=live, threshold=threshold)
