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
from .loading import load_attr
from .pipeline import Pipeline, RunState, approval_request, call_key, to_proposal
from .runs import RunEvicted, RunMemory, end_run, inner_guards, walk_guards
from .strategies import (
    Block, Default, Fallback, HaltTool, HumanInTheLoop, PendingApproval, Reflect, Replan, Stop, default_outcome,
    strategy,
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
    "Default",
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
    "Pipeline",
    "PolicyError",
    "Reflect",
    "Replan",
    "RunEvicted",
    "RunMemory",
    "RunState",
    "ShellCommand",
    "Step",
    "Stop",
    "StrictJSONError",
    "ToolCall",
    "Trace",
    "Verdict",
    "approval_request",
    "arun_guard",
    "call_key",
    "canonical_name",
    "canonical_path",
    "default_outcome",
    "end_run",
    "fail_closed",
    "inner_guards",
    "load_attr",
    "loads_strict",
    "read_traces",
    "run_guard",
    "shell_commands",
    "strategy",
    "strip_invisible",
    "to_proposal",
    "walk_guards",
    "write_traces",
]
