"""Core vocabulary: types, the Guard protocol and composition, enforcement, errors, audit records,
per-run memory, canonical names, commands and paths."""

from .audit import AuditRecord, AuditSink, JsonlAuditSink, MemoryAuditSink
from .canonical import ShellCommand, canonical_name, canonical_path, shell_commands, strip_invisible
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
from .guard import BaseGuard, Guard, GuardStack, arun_guard, fail_closed, run_guard
from .lazy import LazyExports
from .runs import RunMemory, end_run, inner_guards
from .strategies import (
    Block, Fallback, HaltTool, HumanInTheLoop, PendingApproval, Reflect, Replan, Stop, default_outcome,
)
from .strict_json import StrictJSONError, loads_strict
from .types import Context, Decision, Step, ToolCall, Trace, Verdict, read_traces, write_traces

__all__ = [
    "AgentGuardError",
    "AuditRecord",
    "AuditSink",
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
    "JsonlAuditSink",
    "LazyExports",
    "LifecycleError",
    "MemoryAuditSink",
    "ModelError",
    "Outcome",
    "ParseError",
    "PendingApproval",
    "PolicyError",
    "Reflect",
    "Replan",
    "RunMemory",
    "ShellCommand",
    "Step",
    "Stop",
    "StrictJSONError",
    "ToolCall",
    "Trace",
    "Verdict",
    "arun_guard",
    "canonical_name",
    "canonical_path",
    "default_outcome",
    "end_run",
    "fail_closed",
    "inner_guards",
    "loads_strict",
    "read_traces",
    "run_guard",
    "shell_commands",
    "strip_invisible",
    "write_traces",
]
