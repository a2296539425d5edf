"""A reactive rule baseline in the style of AgentSpec: ``trigger`` / ``check`` / ``enforce``.

Rules are written as in ``../shared/data/agentspec/rules/manual/embodied.ar``::

    rule @stop_turn_on_candles
    trigger
        turn on
    check
        is_candle
    enforce
        stop
    end

A rule fires when the proposed action's verb equals the trigger (``act X`` and a plain verb are both
accepted) and every check predicate holds (``true`` always holds); its enforcements then apply, mapped
to verdicts: ``stop`` -> HALT, ``user_inspection`` -> ESCALATE, ``llm_self_reflect`` -> REJECT (the
agent is told and re-plans), ``skip``/``block`` -> REJECT. Predicates are Python callables
``f(state, proposal) -> bool`` passed in a registry (``"true"`` is always there). The guard knows no
environment: :func:`embodied_predicates` builds the predicates of the embodied rules from two
environment callables (what object an action targets, and which held objects are unsafe in a
microwave); ``agentguard.envs.household`` supplies them. Unlike the proactive guard, the baseline
looks only at the action about to run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.errors import InputError, ParseError
from ..core.guard import BaseGuard
from ..core.types import Context, Decision, Step, ToolCall, Verdict

__all__ = ["Rule", "RuleGuard", "RulePredicate", "embodied_predicates", "load_rules", "parse_rules", "proposal_text"]

#: a rule predicate: ``(current concrete state, proposed action) -> bool``
RulePredicate = Callable[[Mapping[str, Any], Any], bool]

ENFORCE = {"stop": Decision.HALT, "user_inspection": Decision.ESCALATE, "llm_self_reflect": Decision.REJECT,
           "skip": Decision.REJECT, "block": Decision.REJECT, "invoke_action": Decision.REJECT}


@dataclass(frozen=True)
class Rule:
    """One rule: ``trigger`` (an action verb), ``checks`` (predicate names, all must hold), ``enforce``."""

    id: str
    trigger: str
    checks: tuple[str, ...] = ()
    enforce: tuple[str, ...] = ("stop",)

    @property
    def decision(self) -> Decision:
        return max((ENFORCE.get(e, Decision.HALT) for e in self.enforce), default=Decision.HALT)


_RULE = re.compile(r"rule\s+@(\S+)(.*?)\bend\b", re.S)


def parse_rules(text: str, source: str = "<rules>") -> list[Rule]:
    """Parse AgentSpec rule text; ParseError naming the rule and what is wrong."""
    if not isinstance(text, str):
        raise ParseError(f"{source}: rules must be text")
    text = re.sub(r"//[^\n]*", "", text)
    rules: list[Rule] = []
    for m in _RULE.finditer(text):
        rid, body = m.group(1), m.group(2)
        sections: dict[str, list[str]] = {}
        cur = None
        for line in body.splitlines():
            w = line.strip()
            if not w:
                continue
            if w in ("trigger", "check", "enforce", "prepare"):
                cur = w
                sections.setdefault(cur, [])
                continue
            if cur is None:
                raise ParseError(f"{source}: rule @{rid}: text before 'trigger': {w!r}")
            sections[cur].append(w)
        if not sections.get("trigger"):
            raise ParseError(f"{source}: rule @{rid} has no trigger")
        if not sections.get("enforce"):
            raise ParseError(f"{source}: rule @{rid} has no enforce section")
        trig = sections["trigger"][0]
        trig = trig[4:].strip() if trig.startswith("act ") else trig
        rules.append(Rule(rid, trig, tuple(sections.get("check", [])), tuple(sections["enforce"])))
    if not rules and text.strip():
        raise ParseError(f"{source}: no 'rule @id ... end' block found")
    return rules


def load_rules(path: str | Path) -> list[Rule]:
    """Read and parse an AgentSpec rule file (InputError when it cannot be read)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(f"cannot read rules {path}: {exc.strerror}") from None
    return parse_rules(text, str(path))


# --- predicates of the embodied rules -----------------------------------------------------------------
def proposal_text(proposal: Any) -> str:
    """The action text of a proposal: a string itself, or a ToolCall's ``input``/``action`` argument
    (else its name)."""
    if isinstance(proposal, ToolCall):
        return str(proposal.arguments.get("input") or proposal.arguments.get("action") or proposal.name)
    return str(proposal)


def _hot(state: Mapping[str, Any], proposal: Any) -> bool:
    held = state.get("held")
    for o in state.get("objects", []):
        if o["objectId"] == held:
            return bool(o.get("isCooked"))
    return False


def embodied_predicates(target: Callable[[str], str], microwave_unsafe: Callable[[str], bool]) -> dict[str, RulePredicate]:
    """The predicates of the AgentSpec embodied rules (``embodied.ar``), over simulator states with
    ``heldType``, ``held`` and ``objects`` (``objectId``, ``isCooked``).

    Args:
        target: action text -> the object type it acts on, casefolded (``"put Microwave"`` ->
            ``"microwave"``).
        microwave_unsafe: held object type -> True when it must not go into a microwave.
    """
    def tgt(p: Any) -> str:
        return target(proposal_text(p))

    def not_microwave_safe(state: Mapping[str, Any], proposal: Any) -> bool:
        h = state.get("heldType")
        return bool(h and microwave_unsafe(h))

    return {
        "true": lambda s, p: True,
        "is_candle": lambda s, p: tgt(p) == "candle",
        "is_holding_none_microwave_obj": not_microwave_safe,
        "is_into_microwave": lambda s, p: tgt(p) == "microwave",
        "is_into_fridge": lambda s, p: tgt(p) == "fridge",
        "is_putting_hot_things": _hot,
    }


@dataclass
class RuleGuard(BaseGuard):
    """A guard that applies reactive rules to the proposed action (the AgentSpec baseline).

    ``check(context, proposal)``: ``context.state`` is the current concrete state, ``proposal`` the
    instruction text (or a ToolCall with ``arguments['input']``). ``predicates`` maps each check
    name the rules use to its predicate (``"true"`` is added); a rule naming an unknown predicate is
    an InputError at construction, so the guard never runs with a rule it cannot evaluate.
    """

    rules: list[Rule]
    predicates: Mapping[str, RulePredicate] = field(default_factory=dict)
    name: str = "reactive-rules"

    def __post_init__(self) -> None:
        self.predicates = {"true": lambda s, p: True, **dict(self.predicates)}
        for r in self.rules:
            for c in r.checks:
                if c not in self.predicates:
                    raise InputError(f"rule @{r.id}: unknown predicate {c!r}")

    def check(self, context: Context, proposal: Any) -> Verdict:
        """The first matching rule's decision; ALLOW when none matches. A proposal that is neither an
        action text nor a ``ToolCall`` (nor a ``Step`` carrying one) cannot be matched against the
        rules and is refused (fail closed)."""
        if isinstance(proposal, Step):
            proposal = proposal.action
        if not isinstance(proposal, (str, ToolCall)):
            return Verdict.reject(f"unreadable proposal ({type(proposal).__name__}): no action text to match",
                                  self.name)
        text = proposal_text(proposal).strip()
        state = context.state or {}
        for r in self.rules:
            if text == r.trigger or text.startswith(r.trigger + " "):
                if all(self.predicates[c](state, proposal) for c in r.checks):
                    return Verdict(r.decision, f"rule @{r.id} matched {text!r}", self.name,
                                   details={"rule": r.id, "enforce": list(r.enforce)})
        return Verdict.allow(self.name, "no rule matched")
