"""``agentguard demo``: the main job, on embedded defaults (no network, no API key)."""

from __future__ import annotations

import typer


def register(app: typer.Typer, bench: typer.Typer) -> None:
    @app.command()
    def demo(out: str = typer.Option("demo-output", help="folder for the report files")) -> None:
        """Run the end-to-end demo on embedded defaults."""
        typer.echo("agentguard demo: nothing to show yet")
