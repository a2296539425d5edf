"""Argument extractor of ``library/agentdojo_provenance.py``: facts from the user's grants and data-flow labels.

The context needs ``metadata["provenance"]``, the run's :class:`~agentguard.policies.dataflow.FlowLedger`
(kept by :class:`~agentguard.policies.provenance_guard.ProvenanceGuard` from the prompt, the calls and their
results). Nothing else is read: no environment, no injection slots, no task. The facts are
:meth:`FlowLedger.facts <agentguard.policies.dataflow.FlowLedger.facts>`:

- ``kind``: the tool's declared kind (``policies/library/agentdojo_tools.json``; an undeclared tool gets the
  tool set's generic fail-closed declaration);
- ``target_trust``: the lowest level over the call's targets (2 named in the request or resolved from a
  record it names, 1 a trusted source of the same role and, for identifiers, nowhere in third-party
  content, 0 otherwise);
- ``requested``: one of the tool's declared actions was granted by the request (``grants_en.json``);
- ``value_trust``: the lowest level over the amounts, days and times, account values and outgoing content;
- ``grant`` and ``why`` (not policy parameters; kept in the audit record): the words that granted the
  action and the first value that failed with its sources.

:data:`AGENTDOJO_TOOLS` and :data:`GRANTS` are the shipped declarations; :data:`AGENTDOJO_SOURCES` is the
same declaration as a :class:`~agentguard.policies.provenance.SourceDeclaration` (per tool, its declared
fields; no field trusted by name in every tool) for the call-history predicates of
:mod:`agentguard.bench.agentdojo_proactive`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ....core.types import Context, ToolCall
from ...capabilities import GrantLexicon
from ...dataflow import FlowLedger
from ...extract import MappingExtractor
from ...provenance import SourceDeclaration
from ...toolinfer import InferenceLexicon
from ...toolset import ToolSet

__all__ = ["AGENTDOJO_SOURCES", "AGENTDOJO_TOOLS", "GRANTS", "GRANTS_FILE", "INFERENCE", "INFERENCE_FILE",
           "TOOLS_FILE", "extractor", "new_ledger"]

_LIB = Path(__file__).resolve().parents[1]
GRANTS_FILE = _LIB / "grants_en.json"
TOOLS_FILE = _LIB / "agentdojo_tools.json"
GRANTS = GrantLexicon.load(GRANTS_FILE)
AGENTDOJO_TOOLS = ToolSet.load(TOOLS_FILE, GRANTS)
INFERENCE_FILE = _LIB / "tool_inference_en.json"
INFERENCE = InferenceLexicon.load(INFERENCE_FILE)
AGENTDOJO_SOURCES = SourceDeclaration(
    trusted_tools=frozenset(n for n, d in AGENTDOJO_TOOLS.tools.items() if d.whole),
    tool_fields={n: frozenset(d.results) for n, d in AGENTDOJO_TOOLS.tools.items() if d.results})


def new_ledger(toolset: ToolSet | None = None, lexicon: GrantLexicon | None = None) -> FlowLedger:
    """An empty run ledger over ``toolset`` (default: AgentDojo's) and ``lexicon`` (default: ``grants_en``)."""
    return FlowLedger(toolset or AGENTDOJO_TOOLS, lexicon or (toolset.lexicon if toolset and toolset.lexicon
                                                               else GRANTS))


def _ledger(ctx: Context) -> FlowLedger:
    led = ctx.metadata.get("provenance")
    if not isinstance(led, FlowLedger):
        raise KeyError("context metadata 'provenance' (a FlowLedger) is required")
    return led


def _fact(name: str) -> Callable[[ToolCall, Context], Any]:
    def get(call: ToolCall, ctx: Context) -> Any:
        led = _ledger(ctx)
        key = (call.name, repr(sorted(call.arguments.items(), key=lambda kv: kv[0])), len(led.calls))
        cached = led._cache.get("facts")
        if cached is None or cached[0] != key:
            cached = (key, led.facts(call.name, call.arguments).as_args())
            led._cache["facts"] = cached
        return cached[1][name]
    return get


def extractor() -> MappingExtractor:
    """Deterministic extractor; the context needs metadata ``provenance`` (a FlowLedger)."""
    return MappingExtractor({k: _fact(k) for k in ("kind", "target_trust", "requested", "value_trust", "grant",
                                                   "why")})
