"""The one audit record type, used by the library's guards and by the service's audit store.

An :class:`AuditRecord` says who decided what about which input, when and why: the time, the run,
the guard, the decision and its reason, the numbers the decision rests on, and, when a verified
policy decided, the tool call, the extracted policy arguments and the policy's id, version and source
digest. The service fills ``decision_id``, ``kind`` (``check``/``step``/``signal``), ``input_digest``
(SHA-256 of the canonical input) and ``guard_version`` (the version of the guard files in force).

Records go to an :class:`AuditSink`: anything with ``write(record)``. Shipped sinks:
:class:`MemoryAuditSink` (tests, dashboards), :class:`JsonlAuditSink` (one JSON object per line,
appended) and the service's durable store (``agentguard.server.AuditStore``, which also implements
``write``).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol, runtime_checkable

__all__ = ["AuditRecord", "AuditSink", "JsonlAuditSink", "MemoryAuditSink"]


@dataclass(frozen=True)
class AuditRecord:
    """One audited decision (of a library guard or of the service).

    Always set: ``time``, ``run_id``, ``decision`` (a :class:`~agentguard.core.Decision` name) and
    ``reason``; the rest defaults to empty when the writer has nothing to say about it.
    """

    time: float
    run_id: str
    decision: str
    reason: str
    guard: str = ""
    numbers: Mapping[str, float] = field(default_factory=dict)
    # the service's fields
    decision_id: str = ""
    kind: str = ""
    input_digest: str = ""
    guard_version: str | None = None
    # a verified policy's fields
    call: dict[str, Any] = field(default_factory=dict)
    arguments: dict[str, Any] = field(default_factory=dict)
    policy_id: str = ""
    policy_version: str = ""
    policy_digest: str = ""
    code: int | None = None
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["numbers"] = dict(self.numbers)
        return d


_REQUIRED = frozenset({"time", "run_id", "decision", "reason"})  # the fields of AuditRecord without a default


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

    def __repr__(self) -> str:
        return f"MemoryAuditSink(records={len(self.records)}, maxlen={self.records.maxlen})"


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

    def __repr__(self) -> str:
        return f"JsonlAuditSink({str(self.path)!r})"

    @staticmethod
    def read(path: str | Path) -> list[dict[str, Any]]:
        """The records of a log this sink wrote, in order. A line that is not a JSON object holding an audit record's
        required fields (``time``, ``run_id``, ``decision``, ``reason``) is an :class:`~.errors.InputError` naming its
        line: a file that is not an audit log is never read as one with no decisions in it."""
        from .errors import InputError

        out: list[dict[str, Any]] = []
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as exc:
                raise InputError(f"{path}: line {n} is not JSON ({exc})") from None
            if not isinstance(rec, dict) or not _REQUIRED.issubset(rec):
                raise InputError(f"{path}: line {n} is not an audit record (a JSON object with "
                                 f"{', '.join(sorted(_REQUIRED))})")
            out.append(rec)
        return out
