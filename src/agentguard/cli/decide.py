"""``agentguard decide``: ask a configured guard stack about one tool call, from the command line.

The same configuration file gives the same guard here as in the library (:func:`agentguard.config.load_stack`)
and in the service (``tool_guards = "..."``): all three go through ``load_stack``, and the decision goes
through the one decision path, :class:`agentguard.core.pipeline.Pipeline` (fail-closed, and enforced
by ``--strategy`` or the deciding policy's own ``strategy``).

    agentguard decide agentguard.toml '{"name": "delete_file", "arguments": {"path": "/tmp/x"}}'
    agentguard decide mind2web_sc.toml '{"name": "rent_car"}' --metadata '{"user_info": {"age": 16}}' --json

Prints the decision (what would happen: ALLOW, MODIFY/RECOVER with the call to run instead, REJECT,
ESCALATE = a human must approve, HALT) and every guard's verdict with ``--json``.
Exit status: 0 when the call is allowed, 1 when any other decision is given, 2 on bad input.
"""

from __future__ import annotations

import json
from typing import Any, Optional

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


def outcome_json(out: Any) -> dict[str, Any]:
    """The outcome as printed by ``--json``: the answered decision (as the service answers it), the
    deciding guard's verdict fields, and what happens (``execute``, ``stop``, ``ask``, ``message``)."""
    from ..server.outcomes import answered

    decision, reason = answered(out)
    v = out.verdict
    d: dict[str, Any] = v.to_dict() if v is not None else {}
    d.update({"decision": decision.name, "reason": reason, "guard_decision": v.decision.name if v else None,
              "execute": out.execute, "stop": out.stop, "ask": out.ask, "message": out.message,
              "verdicts": list((v.details or {}).get("verdicts") or [v.to_dict()]) if v is not None else []})
    d.pop("details", None)
    call = out.call
    if out.execute and call is not None and call != out.proposal:
        d["action"] = call.to_dict()
    return d


def register(app: typer.Typer, bench: typer.Typer) -> None:
    @app.command("decide")
    def decide(
        config: str = typer.Argument(..., help="agentguard.toml (or .yaml) describing the guard stack"),
        call: str = typer.Argument(..., help='the tool call as JSON: {"name": ..., "arguments": {...}}'),
        metadata: str = typer.Option("{}", "--metadata", help="per-run facts as a JSON object (Context.metadata)"),
        run_id: str = typer.Option("cli", "--run-id", help="the run id the guards key per-run state by"),
        strategy: Optional[str] = typer.Option(None, "--strategy",
                                               help="enforcement strategy (TT, AB, TEH, CRP, CRP+TEH, ...); "
                                                    "default: the deciding policy's own"),
        as_json: bool = JSON,
    ) -> None:
        """Print the decision on one tool call (exit 0 if allowed, 1 otherwise)."""
        from ..config import load_stack
        from ..core.pipeline import Pipeline
        from ..core.types import Decision, ToolCall

        stack = load_stack(config)
        facts = _object(metadata, "--metadata")
        proposal = ToolCall.from_dict(_object(call, "the call"))
        pipe = Pipeline(stack, strategy=strategy, adapter="cli")
        out = pipe.decide(run_id, proposal, **facts)
        d = outcome_json(out)
        if as_json:
            typer.echo(json.dumps(d, default=str))
        else:
            nums = ", ".join(f"{k}={float(x):.4g}" for k, x in (d.get("numbers") or {}).items())
            typer.echo(f"{d['decision']} by {d.get('guard') or '?'}: {d['reason']}" + (f" ({nums})" if nums else ""))
        raise typer.Exit(0 if d["decision"] == Decision.ALLOW.name else 1)
