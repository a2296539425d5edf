"""Which guards the service runs, behind the common :class:`agentguard.core.Guard` interface.

The service needs three guards, one per endpoint, and accepts any :class:`~agentguard.core.Guard`
for each (a :class:`~agentguard.core.GuardStack` included):

- ``tool``: ``check(context, ToolCall)`` for ``POST /v1/check`` (a verified-policy guard);
- ``step``: ``check(context, Step)`` for ``POST /v1/runs/{id}/steps`` (the proactive guard); the
  context's trace holds the run's previous steps;
- ``signal``: ``check(context, Step(signals=...))`` for ``POST /v1/runs/{id}/signals`` (a calibrated
  monitor).

Numbers a verdict carries (``probability``/``risk``, ``score``/``value``, ``threshold``) are what the
dashboard draws. ``model`` (a DTMC) and ``calibration`` (curves) are optional extras the dashboard
shows when present.

The built-in defaults here are small deterministic guards so the service runs with nothing else
installed; :func:`default_guards` prefers the real mechanisms when they are importable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..core.guard import BaseGuard, Guard, GuardStack
from ..core.types import Context, Step, ToolCall, Verdict

__all__ = ["ServiceGuards", "ToolRulesGuard", "SignalThresholdGuard", "StepToolGuard", "default_guards", "load_guards"]


class ToolRulesGuard(BaseGuard):
    """A deterministic tool-call rule list: denied tool names, an optional allow-list, and argument
    values that must not contain given substrings (case-insensitive). Same input, same verdict."""

    def __init__(self, *, denied_tools: Iterable[str] = (), allowed_tools: Iterable[str] | None = None,
                 denied_substrings: Mapping[str, Iterable[str]] | None = None, name: str = "tool-rules") -> None:
        self.name = name
        self.denied = frozenset(denied_tools)
        self.allowed = frozenset(allowed_tools) if allowed_tools is not None else None
        self.denied_substrings = {k: tuple(s.lower() for s in v) for k, v in (denied_substrings or {}).items()}

    def check(self, context: Context, proposal: Any) -> Verdict:
        if not isinstance(proposal, ToolCall):
            return Verdict.reject(f"expected a tool call, got {type(proposal).__name__}", self.name)
        if proposal.name in self.denied:
            return Verdict.reject(f"tool {proposal.name!r} is denied", self.name)
        if self.allowed is not None and proposal.name not in self.allowed:
            return Verdict.reject(f"tool {proposal.name!r} is not in the allow-list", self.name)
        for arg, bad in self.denied_substrings.items():
            val = proposal.arguments.get(arg)
            if isinstance(val, str):
                low = val.lower()
                for b in bad:
                    if b in low:
                        return Verdict.reject(f"argument {arg!r} contains {b!r}", self.name)
        return Verdict.allow(self.name, f"tool {proposal.name!r} allowed by the rules")


class StepToolGuard(BaseGuard):
    """Step guard that applies a tool-call guard to the step's action when it is a tool call."""

    def __init__(self, tool_guard: Guard, name: str = "step-tool") -> None:
        self.tool_guard = tool_guard
        self.name = name

    def check(self, context: Context, proposal: Any) -> Verdict:
        action = proposal.action if isinstance(proposal, Step) else proposal
        if isinstance(action, ToolCall):
            return self.tool_guard.check(context, action)
        return Verdict.allow(self.name, "no tool call in this step")


class SignalThresholdGuard(BaseGuard):
    """Alarm (HALT) when a streamed signal value falls below a fixed threshold.

    A stand-in for a calibrated threshold monitor (whose threshold comes with a false-alarm
    guarantee); the threshold here is whatever the operator sets.
    """

    def __init__(self, threshold: float = 0.5, signal: str | None = None, name: str = "signal-threshold") -> None:
        self.threshold = float(threshold)
        self.signal = signal
        self.name = name

    def check(self, context: Context, proposal: Any) -> Verdict:
        sig = proposal.signals if isinstance(proposal, Step) else dict(proposal)
        if not sig:
            return Verdict.reject("no signal value given", self.name)
        key = self.signal if self.signal is not None else next(iter(sig))
        if key not in sig:
            return Verdict.reject(f"signal {key!r} missing", self.name)
        v = float(sig[key])
        if v < self.threshold:
            return Verdict.halt(f"signal {key} = {v:.4g} fell below the threshold {self.threshold:.4g}",
                                self.name, value=v, threshold=self.threshold)
        return Verdict.allow(self.name, f"signal {key} = {v:.4g} at or above the threshold", value=v,
                             threshold=self.threshold)


@dataclass
class ServiceGuards:
    """The guards the service runs plus optional things for the dashboard."""

    tool: Guard
    step: Guard
    signal: Guard
    model: Any = None  # a agentguard.predictive.DTMC, shown on the dashboard
    calibration: dict[str, Any] = field(default_factory=dict)  # curves for the dashboard
    description: str = ""

    def __post_init__(self) -> None:
        for name in ("tool", "step", "signal"):
            g = getattr(self, name)
            if not isinstance(g, Guard):
                from ..core.errors import InputError

                raise InputError(f"ServiceGuards.{name} is not a Guard: {g!r}")


def default_guards(settings: Any = None) -> ServiceGuards:
    """The service's default guards: a deterministic rule guard for tool calls (denying shell and
    code execution tools and destructive shell arguments), the same rules applied to steps, and a
    fixed-threshold signal monitor."""
    threshold = float(getattr(settings, "monitor_threshold", 0.5))
    tool = ToolRulesGuard(
        denied_tools=("exec", "eval", "run_shell", "shell"),
        denied_substrings={"command": ("rm -rf", "mkfs", ":(){"), "path": ("/etc/shadow", "../")},
    )
    return ServiceGuards(
        tool=GuardStack([tool], name="tool-stack"),
        step=StepToolGuard(tool),
        signal=SignalThresholdGuard(threshold),
        description="built-in rules (no verified policy configured)",
    )


def load_guards(settings: Any = None) -> ServiceGuards:
    """The guards a service process runs for ``settings`` (every worker builds the same ones)."""
    return default_guards(settings)


_NAME = re.compile(r"^[A-Za-z0-9_.:\-]{1,128}$")


def valid_run_id(run_id: str) -> bool:
    """Run ids are 1..128 characters from ``[A-Za-z0-9_.:-]``."""
    return bool(_NAME.match(run_id))
