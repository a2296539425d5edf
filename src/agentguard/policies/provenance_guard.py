"""ProvenanceGuard: a verified tool-call policy fed by the provenance a deployed guard observes.

Its inputs are exactly three, per run (``run_id``): :meth:`ProvenanceGuard.observe_prompt` (the user's
prompt), :meth:`ProvenanceGuard.observe_result` (each tool call with the result it returned) and
:meth:`ProvenanceGuard.check` (a proposed call). The runtime adapter calls them as the run flows; the
guard keeps one :class:`~agentguard.policies.provenance.ProvenanceLedger` per run in a
:class:`~agentguard.core.runs.RunMemory` (``end_run`` forgets it) and asks its inner
:class:`~agentguard.policies.ToolCallGuard` with a context whose only metadata is that ledger, so no other
knowledge (environment, task, injection slots) can reach the policy's extractor.

A prompt may also arrive with the first check as ``context.metadata["prompt"]`` (for adapters and the
service, which pass the prompt along with the proposal).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.guard import BaseGuard
from ..core.runs import RunMemory
from ..core.types import Context, ToolCall, Verdict
from .guard import PolicyBinding, ToolCallGuard
from .library import extractor as library_extractor
from .library import library_path
from .model import load_policy
from .provenance import ProvenanceLedger, SourceDeclaration

__all__ = ["ProvenanceGuard"]


class ProvenanceGuard(BaseGuard):
    """Gate tool calls with a verified policy over observed provenance labels (see the module docstring)."""

    def __init__(self, inner: ToolCallGuard, declaration: SourceDeclaration, *, name: str = "provenance",
                 max_runs: int = 10_000) -> None:
        self.inner = inner
        self.declaration = declaration
        self.name = name
        self.runs: RunMemory[ProvenanceLedger] = RunMemory(lambda: ProvenanceLedger(declaration), max_runs)

    @classmethod
    def agentdojo(cls, *, intent: Mapping[str, list[str]] | None = None, strategy: str = "AB") -> "ProvenanceGuard":
        """The shipped AgentDojo configuration: ``agentdojo_provenance`` policy, extractor and declaration."""
        from .library.extractors.agentdojo_provenance import AGENTDOJO_SOURCES

        policy = load_policy(library_path("agentdojo_provenance"))
        binding = PolicyBinding(policy, library_extractor("agentdojo_provenance", intent=intent))
        return cls(ToolCallGuard([binding], strategy=strategy), AGENTDOJO_SOURCES)

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> "ProvenanceGuard":
        """``{"sources": {...SourceDeclaration...}, "guard": {...ToolCallGuard.from_config table...}}``;
        without ``guard``/``sources``, the shipped AgentDojo configuration's parts."""
        if "guard" not in params and "sources" not in params:
            return cls.agentdojo()
        from .library.extractors.agentdojo_provenance import AGENTDOJO_SOURCES

        inner = ToolCallGuard.from_config(params.get("guard", {"policy": "agentdojo_provenance",
                                                               "extractor": "agentdojo_provenance"}))
        decl = SourceDeclaration.from_config(params["sources"]) if "sources" in params else AGENTDOJO_SOURCES
        return cls(inner, decl, name=str(params.get("name", "provenance")))

    def observe_prompt(self, run_id: str, prompt: str) -> None:
        """Record the user's prompt of run ``run_id``."""
        self.runs.get(run_id).observe_prompt(str(prompt))

    def observe_result(self, run_id: str, call: ToolCall, result: Any) -> None:
        """Record the result ``call`` returned in run ``run_id`` (labelled by the declaration)."""
        self.runs.get(run_id).observe_result(call.name, result)

    def end_run(self, run_id: str) -> None:
        self.runs.end_run(run_id)

    def ledger(self, run_id: str) -> ProvenanceLedger:
        return self.runs.get(run_id)

    def check(self, context: Context, proposal: Any) -> Verdict:
        led = self.runs.get(context.run_id)
        prompt = context.metadata.get("prompt") if isinstance(context.metadata, Mapping) else None
        if isinstance(prompt, str) and not led.prompt:
            led.observe_prompt(prompt)
        inner_ctx = Context(run_id=context.run_id, trace=context.trace, metadata={"provenance": led})
        return self.inner.check(inner_ctx, proposal)
