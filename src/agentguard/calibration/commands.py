"""Command-line commands of agentguard.calibration (registered by agentguard.cli)."""

from __future__ import annotations

import typer


def register(app: typer.Typer, bench: typer.Typer) -> None:
    """Add this mechanism's commands to the main app and to the `bench` group."""
    return None
