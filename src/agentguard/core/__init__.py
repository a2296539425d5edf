"""Core vocabulary: types, the Guard protocol and composition, enforcement, errors."""

from .enforcement import Enforcement, Outcome
from .errors import (
    AgentGuardError,
    DependencyError,
    GuaranteeError,
    GuardError,
    GuardTimeout,
    InputError,
    LifecycleError,
    ModelError,
    ParseError,
    PolicyError,
)
from .guard import BaseGuard, Guard, GuardStack, fail_closed
from .strategies import (
    Block, Fallback, HaltTool, HumanInTheLoop, PendingApproval, Reflect, Replan, Stop, default_outcome,
)
from .types import Context, Decision, Step, ToolCall, Trace, Verdict, read_traces, write_traces

__all__ = [
    "AgentGuardError",
    "BaseGuard",
    "Block",
    "Context",
    "Decision",
    "DependencyError",
    "Enforcement",
    "Fallback",
    "GuaranteeError",
    "Guard",
    "GuardError",
    "GuardStack",
    "GuardTimeout",
    "HaltTool",
    "HumanInTheLoop",
    "InputError",
    "LifecycleError",
    "ModelError",
    "Outcome",
    "ParseError",
    "PendingApproval",
    "PolicyError",
    "Reflect",
    "Replan",
    "Step",
    "Stop",
    "ToolCall",
    "Trace",
    "Verdict",
    "default_outcome",
    "fail_closed",
    "read_traces",
    "write_traces",
]
