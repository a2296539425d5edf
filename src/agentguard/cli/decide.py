"""``agentguard decide``: ask a configured guard stack about one tool call, from the command line.

The same configuration file gives the same guard here as in the library (:func:`agentguard.config.load_stack`)
and in the service (``tool_guards = "..."``): all three go through ``load_stack``.

    agentguard decide agentguard.toml '{"name": "delete_file", "arguments": {"path": "/tmp/x"}}'
    agentguard decide mind2web_sc.toml '{"name": "rent_car"}' --metadata '{"user_info": {"age": 16}}' --json

Exit status: 0 when the call is allowed, 1 when any other verdict is given, 2 on bad input.
"""

from __future__ import annotations

import json
from typing import Any

import typer

from .options import JSON

__all__ = ["register"]


def _object(text: str, what: str) -> dict[str, Any]:
    from ..core.errors import InputError

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{what} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InputError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def register(app: typer.Typer, bench: typer.Typer) -> None:
    @app.command("decide")
    def decide(
        config: str = typer.Argument(..., help="agentguard.toml (or .yaml) describing the guard stack"),
        call: str = typer.Argument(..., help='the tool call as JSON: {"name": ..., "arguments": {...}}'),
        metadata: str = typer.Option("{}", "--metadata", help="per-run facts as a JSON object (Context.metadata)"),
        run_id: str = typer.Option("cli", "--run-id", help="the run id the guards key per-run state by"),
        as_json: bool = JSON,
    ) -> None:
        """Print the stack's verdict on one tool call (exit 0 if allowed, 1 otherwise)."""
        from ..config import load_stack
        from ..core.types import Context, ToolCall

        stack = load_stack(config)
        verdict = stack.check(Context(run_id=run_id, metadata=_object(metadata, "--metadata")),
                              ToolCall.from_dict(_object(call, "the call")))
        typer.echo(json.dumps(verdict.to_dict(), default=str) if as_json else str(verdict))
        raise typer.Exit(0 if verdict.allowed else 1)
