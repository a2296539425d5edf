"""Core vocabulary: what a user of agentguard imports to write, compose and run guards.

* the types (:class:`Context`, :class:`ToolCall`, :class:`Step`, :class:`Trace`, :class:`Decision`,
  :class:`Verdict`, :func:`read_traces`, :func:`write_traces`);
* the Guard protocol and its composition (:class:`Guard`, :class:`BaseGuard`, :class:`GuardStack`,
  :func:`fail_closed`) and per-run memory (:class:`RunMemory`, :class:`RunEvicted`);
* the one decision path (:class:`Pipeline`, its :class:`Outcome`, :func:`approval_request`, :func:`call_key`)
  and enforcement strategies (:class:`Enforcement`, :func:`strategy` by name, :class:`Fallback`);
* audit records and sinks (:class:`AuditRecord`, :class:`AuditSink`, :class:`JsonlAuditSink`,
  :class:`MemoryAuditSink`) and the exception tree (:class:`AgentGuardError` and its subclasses).

Everything else stays public in its module, not here: the strategy classes
(:mod:`agentguard.core.strategies`), ``run_guard``/``arun_guard`` (:mod:`.guard`), ``walk_guards``/``end_run``
(:mod:`.runs`), ``load_attr`` (:mod:`.loading`), ``loads_strict`` (:mod:`.strict_json`), the canonical
names and commands (:mod:`.canonical`), ``LazyExports`` (:mod:`.lazy`), ``RunState``/``to_proposal``
(:mod:`.pipeline`).
"""

from .audit import AuditRecord, AuditSink, JsonlAuditSink, MemoryAuditSink
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
from .pipeline import Pipeline, approval_request, call_key
from .runs import RunEvicted, RunMemory
from .strategies import Fallback, strategy
from .types import Context, Decision, Step, ToolCall, Trace, Verdict, read_traces, write_traces

__all__ = [
    "AgentGuardError",
    "AuditRecord",
    "AuditSink",
    "BaseGuard",
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
    "InputError",
    "JsonlAuditSink",
    "LifecycleError",
    "MemoryAuditSink",
    "ModelError",
    "Outcome",
    "ParseError",
    "Pipeline",
    "PolicyError",
    "RunEvicted",
    "RunMemory",
    "Step",
    "ToolCall",
    "Trace",
    "Verdict",
    "approval_request",
    "call_key",
    "fail_closed",
    "read_traces",
    "strategy",
    "write_traces",
]
