"""Guards the service tests load by import path (``type = "python"``, ``factory = "svc_counting:..."``),
also from ``agentguard serve`` subprocesses (this folder is on their PYTHONPATH)."""

from __future__ import annotations

from typing import Any

from agentguard.core import BaseGuard, RunMemory, Verdict


class CountingHalt(BaseGuard):
    """Step guard with per-run memory: counts each run's steps and answers HALT from the ``halt_at``-th
    on (ALLOW before, with ``numbers['seen']`` = the count). A run whose memory was wiped mid-run would
    count from 1 again: ``seen`` must always be the step's index + 1."""

    def __init__(self, halt_at: int = 10, name: str = "counting") -> None:
        self.halt_at = int(halt_at)
        self.name = name
        self.runs: RunMemory[list[int]] = RunMemory(lambda: [0], 100_000)

    def check(self, context: Any, proposal: Any) -> Verdict:
        box = self.runs.get(context.run_id)
        box[0] += 1
        n = box[0]
        if n >= self.halt_at:
            return Verdict.halt(f"step {n} reached {self.halt_at}", self.name, seen=n)
        return Verdict.allow(self.name, f"step {n}", seen=n)

    def end_run(self, run_id: str) -> None:
        self.runs.end_run(run_id)


def counting(halt_at: int = 10, name: str = "counting") -> CountingHalt:
    return CountingHalt(halt_at, name)


class GrantMemo(BaseGuard):
    """Tool guard with per-run memory that reads a grant: the first check of a run carrying ``metadata["grant"]``
    (a tool name) remembers it; a tool call is allowed only when it is the run's remembered grant. It declares the
    key in ``grant_facts``, so the service refuses it from a request (the red-team test of session 21)."""

    grant_facts = frozenset({"grant"})

    def __init__(self, name: str = "grant-memo") -> None:
        self.name = name
        self.runs: RunMemory[list[str]] = RunMemory(list, 100_000)

    def check(self, context: Any, proposal: Any) -> Verdict:
        box = self.runs.get(context.run_id)
        g = context.metadata.get("grant")
        if isinstance(g, str) and not box:
            box.append(g)
        if box and getattr(proposal, "name", None) == box[0]:
            return Verdict.allow(self.name, f"granted: {box[0]}")
        return Verdict.reject(f"{getattr(proposal, 'name', proposal)!r} was not granted", self.name)

    def end_run(self, run_id: str) -> None:
        self.runs.end_run(run_id)


def grant_memo(name: str = "grant-memo") -> GrantMemo:
    return GrantMemo(name)
