"""ProvenanceGuard: a verified tool-call policy fed by the user's grants and data-flow labels (issue 27).

Its inputs are exactly three, per run (``run_id``): :meth:`ProvenanceGuard.observe_prompt` (the user's
prompt, from which the grants are minted), :meth:`ProvenanceGuard.observe_result` (each tool call with the
result it returned) and :meth:`ProvenanceGuard.check` (a proposed call). The runtime adapter calls them as
the run flows; the guard keeps one :class:`~agentguard.policies.dataflow.FlowLedger` per run in a
:class:`~agentguard.core.runs.RunMemory` (``end_run`` forgets it) and asks its inner
:class:`~agentguard.policies.ToolCallGuard` with a context whose only metadata is that ledger, so no other
knowledge (environment, task, injection slots) can reach the policy's extractor.

A call the policy does not allow is **escalated** to a human (``Decision.ESCALATE``: never allowed without
one), with the reason naming the value that failed and its sources; every verdict names the grant (the
words of the request) it relied on, and the inner guard's audit record keeps both (``grant``, ``why``).

:meth:`ProvenanceGuard.destination` is the small stable interface other guards (a secret-leak guard) may
compose with: how a destination value of a call is classified, ``"user"`` (named by the user or resolved
from a record the user named), ``"trusted"`` (a trusted source of that role) or ``"third_party"``.

A prompt may also arrive with the first check as ``context.metadata["prompt"]`` (for adapters and the
service, which pass the prompt along with the proposal). Results arrive the same way without a call to
:meth:`~ProvenanceGuard.observe_result`: every adapter records what an executed call returned in the run's trace
(:meth:`agentguard.core.pipeline.Pipeline.record`), and :meth:`~ProvenanceGuard.check` first observes the trace's
steps it has not seen (:func:`trace_results`): each allowed tool call with its observation, in order; a refused
step (its observation is the refusal text, not a result) is never observed, and an observation that is wholly a
JSON text (an MCP text content, a tool message) is read as the JSON the agent reads, never a JSON text inside one
of its fields.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.errors import InputError
from ..core.guard import BaseGuard
from ..core.runs import RunMemory
from ..core.types import Context, Decision, Step, ToolCall, Trace, Verdict
from .answer_forms import tail
from .answers import answer_findings, withheld
from .capabilities import GrantLexicon
from .dataflow import FlowLedger
from .guard import PolicyBinding, ToolCallGuard
from .library import extractor as library_extractor
from .library import policy as library_policy
from .toolset import ToolSet
from .vocabulary import utc_now

__all__ = ["ProvenanceGuard", "answer_text", "trace_results"]
_TAIL = 200   # letters of the text already said that the next piece of a streamed answer is read with


@dataclasses.dataclass
class _Seen:
    steps: int = 0   # trace steps already observed
    said: str = ""   # the end of the text already released to the user (a name split across two pieces)


def answer_text(proposal: Any) -> str | None:
    """The text of a proposal that is something said to the user: a string, or a :class:`Step` without a tool
    call whose output is text (a streamed piece: :mod:`agentguard.integrations.streaming`); else ``None``."""
    if isinstance(proposal, str):
        return proposal
    if isinstance(proposal, Step) and proposal.action is None and isinstance(proposal.output, str):
        return proposal.output
    return None


def trace_results(trace: Trace, start: int = 0) -> list[tuple[ToolCall, Any]]:
    """The tool calls the run executed from step ``start`` on, each with what it returned: steps whose action is a
    :class:`ToolCall` and whose recorded decision is ALLOW (a refused, escalated or modified call's observation is
    the adapter's refusal text, or the result of another call; none is observed). An observation that is a JSON
    object or array as a whole text is parsed (what the agent reads); anything else is kept as it is."""
    out = []
    for step in trace.steps[start:]:
        if isinstance(step.action, ToolCall) and step.signals.get("decision") == float(Decision.ALLOW):
            out.append((step.action, _as_read(step.observation)))
    return out


def _tool_list(path: Any) -> list[Mapping[str, Any]]:
    """The tools of an MCP tool list file: a ``tools/list`` result (``{"tools": [...]}``) or the array itself."""
    from ..core.loading import read_json_file  # strict: a duplicate key or NaN is refused

    try:
        data = read_json_file(path, "tool list")
    except InputError as exc:
        raise InputError(f"provenance: schemas {str(path)!r}: {exc}") from None
    tools = data.get("tools") if isinstance(data, Mapping) else data
    if not isinstance(tools, list) or not tools or not all(
            isinstance(t, Mapping) and isinstance(t.get("name"), str) for t in tools):
        raise InputError(f"provenance: schemas {str(path)!r}: not an MCP tool list (tools with a name each)")
    return tools


def _as_read(observation: Any) -> Any:
    if isinstance(observation, str) and observation.strip()[:1] in ("{", "["):
        try:
            return json.loads(observation)
        except ValueError:
            return observation
    return observation


class ProvenanceGuard(BaseGuard):
    """Gate tool calls with a verified policy over grants and data-flow labels (see the module docstring)."""

    #: the run facts read as a grant: the user's prompt mints the grants (a service takes it from the request
    #: only where its operator says the agent is trusted to report it: :mod:`agentguard.server.facts`)
    grant_facts = frozenset({"prompt"})

    def __init__(self, inner: ToolCallGuard, toolset: ToolSet, lexicon: GrantLexicon, *, name: str = "provenance",
                 max_runs: int = 10_000) -> None:
        self.inner = inner
        self.toolset = toolset
        self.lexicon = lexicon
        self.name = name
        self.clock: Callable[[], datetime.datetime] = utc_now   # each run's clock (a deployment: the machine's)
        self.runs: RunMemory[FlowLedger] = RunMemory(lambda: FlowLedger(toolset, lexicon, clock=self.clock), max_runs)
        self._synced: RunMemory[_Seen] = RunMemory(_Seen, max_runs)   # trace steps observed, text said, per run

    @classmethod
    def agentdojo(cls, *, toolset: ToolSet | None = None, lexicon: GrantLexicon | None = None,
                  strategy: str = "AB") -> "ProvenanceGuard":
        """The shipped AgentDojo configuration (``agentdojo_provenance`` policy, ``agentdojo_tools.json``,
        ``grants_en.json``); ``toolset``/``lexicon`` replace the declarations (leave-one-suite-out)."""
        from .library.extractors.agentdojo_provenance import AGENTDOJO_TOOLS, GRANTS

        policy = library_policy("agentdojo_provenance")  # pinned: it loads under require_verified
        binding = PolicyBinding(policy, library_extractor("agentdojo_provenance"))
        return cls(ToolCallGuard([binding], strategy=strategy), toolset or AGENTDOJO_TOOLS,
                   lexicon or GRANTS)

    @classmethod
    def from_schemas(cls, tools: list[Mapping[str, Any]], *, schema_grants: bool = True, tool_words: bool = False,
                     name: str = "mcp") -> "ProvenanceGuard":
        """The guard over a tool set it was not given declarations for: each tool's declaration inferred from its
        MCP schema (``{"name", "description", "inputSchema"}``, :func:`.toolinfer.with_inferred`); with
        ``schema_grants`` every consequential tool takes the grant its own schema words give
        (:func:`.schemagrants.with_schema_grants`), with ``tool_words`` a tool the grant lexicon gives no action
        the tool-word grant (:func:`.toolgrants.with_tool_word_grants`). Nothing trusts a result by field name."""
        from .library.extractors.agentdojo_provenance import AGENTDOJO_TOOLS, GRANTS, INFERENCE
        from .schemagrants import with_schema_grants
        from .toolgrants import with_tool_word_grants
        from .toolinfer import ToolSchema, with_inferred

        schemas = [ToolSchema.from_mcp(t) for t in tools]
        toolset = with_inferred(ToolSet(name, {}, AGENTDOJO_TOOLS.roles, GRANTS), schemas, INFERENCE)
        if tool_words:
            toolset = with_tool_word_grants(toolset, schemas, INFERENCE)
        if schema_grants:
            toolset = with_schema_grants(toolset, schemas, INFERENCE)
        return cls.agentdojo(toolset=toolset, lexicon=toolset.lexicon or GRANTS)

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> "ProvenanceGuard":
        """``{"schemas": path to an MCP tool list (a ``tools/list`` result or its ``tools`` array): declarations
        inferred (:meth:`from_schemas`, with ``schema_grants``, default true, and ``tool_words``), or "tools": path
        to a declared tool-set JSON, "grants": path to a grant lexicon JSON, "name": ...}``; without ``schemas`` each
        defaults to the shipped AgentDojo file."""
        known = {"schemas", "schema_grants", "tool_words", "tools", "grants", "name"}
        unknown = set(params) - known
        if unknown:
            raise InputError(f"provenance: unknown parameter(s) {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(known))})")
        if "schemas" in params:
            if "tools" in params:
                raise InputError("provenance: give 'schemas' (inferred) or 'tools' (declared), not both")
            g = cls.from_schemas(_tool_list(params["schemas"]), schema_grants=bool(params.get("schema_grants", True)),
                                 tool_words=bool(params.get("tool_words", False)))
        else:
            lex = GrantLexicon.load(params["grants"]) if "grants" in params else None
            tools = ToolSet.load(params["tools"], lex) if "tools" in params else None
            g = cls.agentdojo(toolset=tools, lexicon=lex)
        g.name = str(params.get("name", "provenance"))
        return g

    def observe_prompt(self, run_id: str, prompt: str) -> None:
        """Record the user's prompt of run ``run_id`` (its grants are minted here)."""
        self.runs.get(run_id).observe_prompt(str(prompt))

    def observe_result(self, run_id: str, call: ToolCall, result: Any) -> None:
        """Record the result ``call`` returned in run ``run_id`` (labelled by the tool set's declarations)."""
        self.runs.get(run_id).observe_result(call.name, result, call.arguments)

    def end_run(self, run_id: str) -> None:
        self.runs.end_run(run_id)
        self._synced.end_run(run_id)

    def _sync(self, context: Context) -> None:
        """Observe the results the run's trace holds that this guard has not seen (see :func:`trace_results`)."""
        seen = self._synced.get(context.run_id)
        steps = len(context.trace.steps)
        for call, result in trace_results(context.trace, seen.steps):
            self.observe_result(context.run_id, call, result)
        seen.steps = max(seen.steps, steps)

    def ledger(self, run_id: str) -> FlowLedger:
        return self.runs.get(run_id)

    def destination(self, run_id: str, value: str, role: str) -> str:
        """``"user"``, ``"trusted"`` or ``"third_party"``: how destination ``value`` (a recipient, account,
        URL, channel... of ``role``) is classified in run ``run_id`` (see the module docstring)."""
        level, _ = self.runs.get(run_id).target(str(value), role)
        return ("third_party", "trusted", "user")[level]

    def check(self, context: Context, proposal: Any) -> Verdict:
        led = self.runs.get(context.run_id)
        prompt = context.metadata.get("prompt") if isinstance(context.metadata, Mapping) else None
        if isinstance(prompt, str) and not led.prompt:
            led.observe_prompt(prompt)
        self._sync(context)
        text = answer_text(proposal)
        if text is not None:
            return self._check_answer(context.run_id, led, text)
        inner_ctx = Context(run_id=context.run_id, trace=context.trace, metadata={"provenance": led})
        v = self.inner.check(inner_ctx, proposal)
        facts = (v.details or {}).get("arguments", {}) if isinstance(v.details, Mapping) else {}
        grant = facts.get("grant") or "none"
        if v.allowed:   # a consequential call allowed here: the id its answer is assigned may be a target later
            if isinstance(proposal, ToolCall) and led.toolset.decl(proposal.name).kind != "read":
                led.sys_ids.allowed(proposal.name, proposal.arguments)
            return dataclasses.replace(v, reason=f"{v.reason}; grant: {grant}")
        why = facts.get("why", "")
        return dataclasses.replace(v, decision=Decision.ESCALATE,
                                   reason=f"{v.reason}" + (f": {why}" if why else "") + f"; grant: {grant}")

    def _check_answer(self, run_id: str, led: FlowLedger, text: str) -> Verdict:
        """An answer to the user (or a piece of one): escalated when it states a value only third-party content of
        the run supplies (:mod:`agentguard.policies.answers`), with ``details["redacted"]``: the text with each
        sentence carrying one withheld (checked again: else the whole piece), what an application may show instead,
        never naming the value. A piece is read with the end of
        the text already released, so a name split across two pieces is still one name."""
        seen = self._synced.get(run_id)
        joined = seen.said + text
        before = answer_findings(led, seen.said) if seen.said else []   # a whole answer: nothing released yet
        found = [f for f in answer_findings(led, joined) if f not in before]
        if not found:
            seen.said = tail(joined, _TAIL)
            return Verdict.allow(self.name, "answer: every value it states comes from the request or a trusted source")
        what, shown = ", ".join(f.describe() for f in found), withheld(led, seen.said, text, found)
        return Verdict(Decision.ESCALATE, f"the answer states {what}, which only third-party content supplied (not "
                       f"the request or a trusted source)", self.name,
                       details={"findings": [f.describe() for f in found], "redacted": shown})
