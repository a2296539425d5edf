"""What every adapter shares besides the core Pipeline: reading the framework's per-run facts and the text
an agent sees when its call is refused. (Deciding, enforcing, auditing and per-run state are the core's
:class:`~agentguard.core.pipeline.Pipeline`; an adapter only translates.)"""

from __future__ import annotations

from typing import Any

from ..core.types import ToolCall, Verdict

__all__ = ["as_facts", "refusal_message"]


def as_facts(obj: Any) -> dict[str, Any]:
    """Per-run facts as a plain dict for ``Context.metadata``: a mapping, a dataclass, a pydantic model
    or any object with public attributes (the framework's run context: LangChain's runtime
    ``context``, the Agents SDK's ``RunContextWrapper.context``); ``None`` and scalars give ``{}``.

    These facts are what policies read with ``{from = "metadata", key = "user_info.age"}``: the
    application sets them (trusted), the model never writes them.
    """
    if obj is None or isinstance(obj, (str, bytes, int, float, bool)):
        return {}
    if isinstance(obj, dict):
        return dict(obj)
    try:
        import dataclasses

        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    except Exception:  # pragma: no cover - defensive
        pass
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            out = dump()
            return dict(out) if isinstance(out, dict) else {}
        except Exception:
            return {}
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        return {k: v for k, v in attrs.items() if not k.startswith("_")}
    return {}


def refusal_message(verdict: Verdict, call: ToolCall | None = None) -> str:
    """The text an agent sees when its call is refused (names the guard, the decision and the reason)."""
    what = f"tool call {call.name}" if call is not None else "action"
    return (
        f"agentguard refused {what} ({verdict.decision.name} by {verdict.guard or 'guard'}): {verdict.reason}"
    )
