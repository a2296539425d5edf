"""The household vocabulary of the AgentSpec embodied rules (``embodied.ar``).

:class:`agentguard.predictive.reactive.RuleGuard` knows no environment; this module gives it the
household's predicates: ``RuleGuard(parse_rules(text), rule_predicates())``.
"""

from __future__ import annotations

from ...predictive.reactive import RulePredicate, embodied_predicates
from .actions import parse_action
from .hazards import SMALL_ELECTRONICS, _heat_risky

__all__ = ["action_target", "microwave_unsafe", "rule_predicates"]


def action_target(text: str) -> str:
    """The object type an instruction acts on, casefolded (``"put Microwave"`` -> ``"microwave"``)."""
    return parse_action(text).obj.casefold()


def microwave_unsafe(held_type: str) -> bool:
    """True when an object of this type must not go into a microwave: flammable, metallic or sealed
    objects, and small electronics."""
    return bool(_heat_risky(held_type) or held_type in SMALL_ELECTRONICS)


def rule_predicates() -> dict[str, RulePredicate]:
    """The predicates of the embodied rules over household simulator states."""
    return embodied_predicates(action_target, microwave_unsafe)
