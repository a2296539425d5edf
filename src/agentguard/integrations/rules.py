"""A deterministic tool-name / argument rule guard.

:class:`ToolRuleGuard` is the simplest honest guard: tool names matched against glob patterns
(``fnmatch``) and argument values matched against regular expressions. It is what the adapters are
tested with (alongside :class:`~agentguard.core.GuardStack` and, when installed, the verified-policy
``ToolCallGuard``), and it is useful on its own as a first line of a stack: deny ``delete_*``,
escalate ``transfer_funds``, require ``send_email.to`` to end in ``@example.com``.

Order of rules (the strictest matching rule wins, as in a stack): ``halt`` patterns give HALT,
``escalate`` patterns ESCALATE, ``deny`` patterns and an ``allow`` list that does not name the tool
give ``decision`` (REJECT by default), then each argument rule gives its own decision. A proposal that
is readable but not a tool call (a text chunk, a Step without a ToolCall action) is ALLOWED: this
guard has nothing to say about it. Anything else (None, an unknown object, a malformed tool-call
dict, a number) cannot be read and gets ``decision`` (fail closed; ``agentguard.testing.check_guard``).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..core.errors import InputError
from ..core.guard import BaseGuard
from ..core.types import Context, Decision, Step, ToolCall, Verdict

__all__ = ["ArgumentRule", "ToolRuleGuard", "as_tool_call"]


def as_tool_call(proposal: Any) -> ToolCall | None:
    """The ToolCall inside a proposal (a ToolCall, a Step whose action is one, or a dict with 'name')."""
    if isinstance(proposal, ToolCall):
        return proposal
    if isinstance(proposal, Step) and isinstance(proposal.action, ToolCall):
        return proposal.action
    if isinstance(proposal, Mapping) and isinstance(proposal.get("name"), str) and proposal.get("name"):
        return ToolCall.from_dict(proposal)
    return None


def _globs(patterns: Iterable[str] | str | None, what: str) -> re.Pattern[str] | None:
    if patterns is None:
        return None
    if isinstance(patterns, str):
        patterns = [patterns]
    pats = list(patterns)
    for p in pats:
        if not isinstance(p, str) or not p:
            raise InputError(f"{what}: tool patterns must be non-empty strings, got {p!r}")
    if not pats:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in pats))


def _regex(pattern: str | None, what: str) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InputError(f"{what}: bad regular expression {pattern!r}: {exc}") from None


@dataclass
class ArgumentRule:
    """A rule on one argument of the tools matching ``tool`` (a glob).

    ``match``: the argument's string value must fully match this regex; ``forbid``: it must not
    contain a match of this regex; ``required``: a missing argument violates the rule (default: a
    missing argument is not checked). ``decision`` is what a violation yields.
    """

    tool: str
    arg: str
    match: str | None = None
    forbid: str | None = None
    required: bool = False
    decision: Decision | str = Decision.REJECT

    def __post_init__(self) -> None:
        what = f"argument rule {self.tool}.{self.arg}"
        if not self.tool or not self.arg:
            raise InputError("an argument rule needs 'tool' and 'arg'")
        if self.match is None and self.forbid is None and not self.required:
            raise InputError(f"{what}: give 'match', 'forbid' or 'required'")
        self.decision = Decision.parse(self.decision)
        self._tool = _globs(self.tool, what)
        self._match = _regex(self.match, what)
        self._forbid = _regex(self.forbid, what)

    def violation(self, call: ToolCall) -> str | None:
        """Why ``call`` violates this rule, or None."""
        if not self._tool.match(call.name):  # type: ignore[union-attr]
            return None
        if self.arg not in call.arguments:
            return f"argument '{self.arg}' of {call.name} is required" if self.required else None
        value = call.arguments[self.arg]
        text = value if isinstance(value, str) else str(value)
        if self._match is not None and not self._match.fullmatch(text):
            return f"argument '{self.arg}' of {call.name} = {text!r} does not match {self.match!r}"
        if self._forbid is not None and self._forbid.search(text):
            return f"argument '{self.arg}' of {call.name} = {text!r} matches forbidden {self.forbid!r}"
        return None


class ToolRuleGuard(BaseGuard):
    """Deterministic rules on tool names (globs) and argument values (regexes). See the module doc."""

    def __init__(
        self,
        *,
        deny: Sequence[str] | str | None = None,
        allow: Sequence[str] | str | None = None,
        escalate: Sequence[str] | str | None = None,
        halt: Sequence[str] | str | None = None,
        arguments: Sequence[ArgumentRule | Mapping[str, Any]] = (),
        decision: Decision | str = Decision.REJECT,
        name: str = "tool-rules",
    ) -> None:
        self.name = name
        self.decision = Decision.parse(decision)
        if self.decision < Decision.REJECT:
            raise InputError(
                f"{name}: decision must block (REJECT, ESCALATE or HALT), not {self.decision.name}"
            )
        self._deny = _globs(deny, f"{name}.deny")
        self._allow = _globs(allow, f"{name}.allow") if allow is not None else None
        self._allow_given = allow is not None
        self._escalate = _globs(escalate, f"{name}.escalate")
        self._halt = _globs(halt, f"{name}.halt")
        rules = []
        for i, r in enumerate(arguments):
            if isinstance(r, ArgumentRule):
                rules.append(r)
            elif isinstance(r, Mapping):
                unknown = set(r) - {"tool", "arg", "match", "forbid", "required", "decision"}
                if unknown:
                    raise InputError(f"{name}.arguments[{i}]: unknown key(s) {', '.join(sorted(unknown))}")
                rules.append(ArgumentRule(**dict(r)))
            else:
                raise InputError(f"{name}.arguments[{i}] must be a table/dict or ArgumentRule")
        self.arguments = rules
        self._allowed = Verdict.allow(self.name)  # verdicts are immutable: one ALLOW serves every call
        self._not_a_call = Verdict.allow(self.name, "not a tool call")

    def check(self, context: Context, proposal: Any) -> Verdict:
        call = as_tool_call(proposal)
        if call is None:
            if isinstance(proposal, (str, Step)):
                return self._not_a_call
            return Verdict(self.decision, f"cannot read a proposal of type {type(proposal).__name__} "
                                          "(not a tool call, a step or text)", self.name)
        found: list[tuple[Decision, str]] = []
        if self._halt is not None and self._halt.match(call.name):
            found.append((Decision.HALT, f"tool {call.name} stops the run"))
        if self._escalate is not None and self._escalate.match(call.name):
            found.append((Decision.ESCALATE, f"tool {call.name} needs human approval"))
        if self._deny is not None and self._deny.match(call.name):
            found.append((self.decision, f"tool {call.name} is denied"))
        if self._allow_given and (self._allow is None or not self._allow.match(call.name)):
            found.append((self.decision, f"tool {call.name} is not in the allow list"))
        for rule in self.arguments:
            why = rule.violation(call)
            if why:
                found.append((rule.decision, why))  # type: ignore[arg-type]
        if not found:
            return self._allowed
        decision, reason = max(found, key=lambda x: x[0])
        return Verdict(decision, reason, self.name, details={"violations": [r for _, r in found]})
