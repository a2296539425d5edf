"""Enforcement strategies: objects that turn a Verdict into what happens to the agent.

A strategy is separate from the guard that produced the verdict, so any guard can use any strategy
(stop, reflect, ask a human, re-plan, halt the tool, fall back). Concrete strategies live next to
the mechanism that introduced them and implement :class:`Enforcement`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .types import Context, Verdict

__all__ = ["Enforcement", "Outcome"]


@dataclass
class Outcome:
    """What an enforcement strategy did.

    ``execute``: run the (possibly replaced) action; ``action``: the action to run;
    ``stop``: end the run; ``message``: text to show the agent (reflection, rejection reason);
    ``verdict``: the verdict it acted on.
    """

    execute: bool
    action: Any = None
    stop: bool = False
    message: str = ""
    verdict: Verdict | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Enforcement(Protocol):
    """``apply(verdict, context, proposal) -> Outcome``."""

    name: str

    def apply(self, verdict: Verdict, context: Context, proposal: Any) -> Outcome: ...
