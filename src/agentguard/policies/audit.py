"""Audit records: every policy decision, written through a small :class:`AuditSink` protocol.

A record holds the time, the run, the tool call, the extracted policy arguments, the policy id, version
and source digest, the verdict and its reason. Sinks here: :class:`MemoryAuditSink` (tests, dashboards)
and :class:`JsonlAuditSink` (one JSON object per line, appended). A database sink (the service's audit
store) only has to implement ``write(record)``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["AuditRecord", "AuditSink", "JsonlAuditSink", "MemoryAuditSink"]


@dataclass(frozen=True)
class AuditRecord:
    """One decision of a :class:`~agentguard.policies.guard.ToolCallGuard`."""

    time: float
    run_id: str
    call: dict[str, Any]
    arguments: dict[str, Any]
    policy_id: str
    policy_version: str
    policy_digest: str
    decision: str
    reason: str
    code: int | None = None
    seconds: float = 0.0
    guard: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class AuditSink(Protocol):
    """Anything with ``write(record)``; it must not raise on a well-formed record."""

    def write(self, record: AuditRecord) -> None: ...


class MemoryAuditSink:
    """Keeps the last ``maxlen`` records in memory (all of them when ``maxlen`` is None)."""

    def __init__(self, maxlen: int | None = None) -> None:
        self.records: deque[AuditRecord] = deque(maxlen=maxlen)

    def write(self, record: AuditRecord) -> None:
        self.records.append(record)

    def __len__(self) -> int:
        return len(self.records)


class JsonlAuditSink:
    """Appends each record as one JSON line to ``path`` (thread-safe, flushed per record)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._lock = threading.Lock()

    def write(self, record: AuditRecord) -> None:
        line = json.dumps(record.to_dict(), default=str)
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    @staticmethod
    def read(path: str | Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def now() -> float:
    return time.time()
