"""Specifications: what the mechanisms check, independent of how they check it.

* predicates and abstraction (:class:`Abstraction`, :class:`Predicate`, :func:`load_spec`): concrete
  states -> bit-vectors, infeasible states, the ``unsafe`` label, valid transitions;
* building predicates: :func:`exists`, :func:`forall`, :func:`where`, :func:`attr`;
* the unseen-state policy (:data:`UNSEEN_POLICIES`, :func:`resolve_unseen`): what a state never seen in
  training stands for, shared by spec files and the proactive guard;
* PCTL properties and state formulas (:func:`parse_property`, :func:`parse_state_formula`; their
  types :class:`Property`, :class:`StateFormula`);
* LawBreaker STL traffic laws and their bounded-response rules (:func:`parse_laws`,
  :func:`bounded_response`, :func:`rule_vectors`);
* the safe expression language of spec files (:class:`Expr`, :func:`compile_expr`).

Names are imported on first use (module ``__getattr__`` over the literal table ``_LAZY``). The syntax
trees (``And``, ``Compare``, ``Term``, ...), ``resolve_state``, ``parse_properties``, ``parse_formula``,
``hamming1`` and the other helpers stay public in their modules (:mod:`.pctl`, :mod:`.pctl_state`,
:mod:`.unseen`, :mod:`.stl`, :mod:`.predicates`, :mod:`.expr`), not here.
"""

from __future__ import annotations

from typing import Any

from ..core.lazy import LazyExports

# name -> the module that defines it
_LAZY = {
    "Abstraction": "agentguard.spec.predicates",
    "Expr": "agentguard.spec.expr",
    "Predicate": "agentguard.spec.predicates",
    "Property": "agentguard.spec.pctl",
    "StateFormula": "agentguard.spec.pctl",
    "UNSEEN_POLICIES": "agentguard.spec.unseen",
    "attr": "agentguard.spec.predicates",
    "bounded_response": "agentguard.spec.stl",
    "compile_expr": "agentguard.spec.expr",
    "exists": "agentguard.spec.predicates",
    "forall": "agentguard.spec.predicates",
    "load_spec": "agentguard.spec.predicates",
    "parse_laws": "agentguard.spec.stl",
    "parse_property": "agentguard.spec.pctl",
    "parse_state_formula": "agentguard.spec.pctl",
    "resolve_unseen": "agentguard.spec.unseen",
    "rule_vectors": "agentguard.spec.stl",
    "where": "agentguard.spec.predicates",
}

__all__ = [
    "Abstraction",
    "Expr",
    "Predicate",
    "Property",
    "StateFormula",
    "UNSEEN_POLICIES",
    "attr",
    "bounded_response",
    "compile_expr",
    "exists",
    "forall",
    "load_spec",
    "parse_laws",
    "parse_property",
    "parse_state_formula",
    "resolve_unseen",
    "rule_vectors",
    "where",
]


_exports = LazyExports(__name__, _LAZY, globals())


def __getattr__(name: str) -> Any:
    return _exports.attr(name)


def __dir__() -> list[str]:
    return _exports.dir()
