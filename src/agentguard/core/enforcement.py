"""Enforcement strategies: objects that turn a Verdict into what happens to the agent.

A strategy is separate from the guard that produced the verdict, so any guard can use any strategy
(stop, reflect, ask a human, re-plan, halt the tool, fall back). Concrete strategies live next to
the mechanism that introduced them and implement :class:`Enforcement`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, runtime_checkable

from .types import Context, ToolCall, Verdict

__all__ = ["Enforcement", "Outcome"]


@dataclass
class Outcome:
    """What an enforcement strategy did.

    ``execute``: run the (possibly replaced) action; ``action``: the action to run;
    ``stop``: end the run; ``message``: text to show the agent (reflection, rejection reason);
    ``verdict``: the verdict it acted on. Set by :class:`~agentguard.core.pipeline.Pipeline`:
    ``ask`` (a human must answer first: :meth:`~agentguard.core.pipeline.Pipeline.resolve`),
    ``proposal`` (the typed proposal decided on), ``run_id`` and ``key`` (the call's identity).
    """

    execute: bool
    action: Any = None
    stop: bool = False
    message: str = ""
    verdict: Verdict | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    ask: bool = False
    proposal: Any = None
    run_id: str = ""
    key: str = ""

    @property
    def call(self) -> ToolCall | None:
        """The tool call to execute (None when nothing runs): the verdict's replacement call, a MODIFY's
        new arguments applied to the proposed tool, or the proposal itself."""
        if not self.execute:
            return None
        act = self.action
        if isinstance(act, ToolCall):
            return act
        prop = self.proposal
        if isinstance(act, Mapping) and isinstance(prop, ToolCall):
            return ToolCall(prop.name, dict(act), prop.call_id)
        if act is None and isinstance(prop, ToolCall):
            return prop
        return None


@runtime_checkable
class Enforcement(Protocol):
    """``apply(verdict, context, proposal) -> Outcome``."""

    name: str

    def apply(self, verdict: Verdict, context: Context, proposal: Any) -> Outcome: ...
