"""Audit records of policy decisions: the one :class:`~agentguard.core.audit.AuditRecord` type.

The record type and its sinks live in :mod:`agentguard.core.audit` (the service's audit store uses
the same type); this module re-exports them where a policy user looks for them.
"""

from __future__ import annotations

from ..core.audit import AuditRecord, AuditSink, JsonlAuditSink, MemoryAuditSink

__all__ = ["AuditRecord", "AuditSink", "JsonlAuditSink", "MemoryAuditSink"]
