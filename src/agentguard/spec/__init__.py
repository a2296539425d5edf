"""Specifications: what the mechanisms check, independent of how they check it.

* predicates and abstraction (:class:`Abstraction`, :class:`Predicate`, :func:`load_spec`): concrete
  states -> bit-vectors, infeasible states, the ``unsafe`` label, valid transitions;
* the unseen-state policy (:data:`UNSEEN_POLICIES`, :func:`resolve_unseen`, :func:`resolve_state`):
  what a state never seen in training stands for, shared by spec files and the proactive guard;
* PCTL properties and state formulas (:func:`parse_property`, :func:`parse_state_formula`);
* LawBreaker STL traffic laws and their bounded-response rules (:func:`parse_laws`,
  :func:`bounded_response`, :func:`rule_vectors`);
* the safe expression language of spec files (:class:`Expr`, :func:`compile_expr`).

Names are imported on first use (module ``__getattr__`` over the literal table ``_LAZY``).
"""

from __future__ import annotations

from typing import Any

from ..core.lazy import LazyExports

# name -> the module that defines it
_LAZY = {
    "Abstraction": "agentguard.spec.predicates",
    "And": "agentguard.spec.pctl",
    "BinOp": "agentguard.spec.pctl_state",
    "Compare": "agentguard.spec.pctl",
    "Const": "agentguard.spec.pctl",
    "Expr": "agentguard.spec.expr",
    "ExprCompare": "agentguard.spec.pctl",
    "FUNC_ARITY": "agentguard.spec.pctl_state",
    "Func": "agentguard.spec.pctl_state",
    "Implies": "agentguard.spec.pctl",
    "Label": "agentguard.spec.pctl",
    "Node": "agentguard.spec.stl",
    "Not": "agentguard.spec.pctl",
    "Num": "agentguard.spec.pctl_state",
    "Or": "agentguard.spec.pctl",
    "PathFormula": "agentguard.spec.pctl",
    "Predicate": "agentguard.spec.predicates",
    "ProbAtom": "agentguard.spec.pctl",
    "Property": "agentguard.spec.pctl",
    "Resolution": "agentguard.spec.unseen",
    "Rule": "agentguard.spec.stl",
    "StateFormula": "agentguard.spec.pctl",
    "Term": "agentguard.spec.pctl_state",
    "UNSEEN_POLICIES": "agentguard.spec.unseen",
    "Var": "agentguard.spec.pctl_state",
    "attr": "agentguard.spec.predicates",
    "bounded_response": "agentguard.spec.stl",
    "check_unseen_policy": "agentguard.spec.unseen",
    "compile_expr": "agentguard.spec.expr",
    "exists": "agentguard.spec.predicates",
    "fold": "agentguard.spec.pctl_state",
    "forall": "agentguard.spec.predicates",
    "hamming1": "agentguard.spec.predicates",
    "is_law": "agentguard.spec.stl",
    "law_of_rule": "agentguard.spec.stl",
    "load_spec": "agentguard.spec.predicates",
    "nested_atoms": "agentguard.spec.pctl_state",
    "parse_formula": "agentguard.spec.stl",
    "parse_laws": "agentguard.spec.stl",
    "parse_properties": "agentguard.spec.pctl",
    "parse_property": "agentguard.spec.pctl",
    "parse_state_formula": "agentguard.spec.pctl",
    "resolve_state": "agentguard.spec.unseen",
    "resolve_unseen": "agentguard.spec.unseen",
    "rule_vectors": "agentguard.spec.stl",
    "where": "agentguard.spec.predicates",
}

__all__ = [
    "Abstraction",
    "And",
    "BinOp",
    "Compare",
    "Const",
    "Expr",
    "ExprCompare",
    "FUNC_ARITY",
    "Func",
    "Implies",
    "Label",
    "Node",
    "Not",
    "Num",
    "Or",
    "PathFormula",
    "Predicate",
    "ProbAtom",
    "Property",
    "Resolution",
    "Rule",
    "StateFormula",
    "Term",
    "UNSEEN_POLICIES",
    "Var",
    "attr",
    "bounded_response",
    "check_unseen_policy",
    "compile_expr",
    "exists",
    "fold",
    "forall",
    "hamming1",
    "is_law",
    "law_of_rule",
    "load_spec",
    "nested_atoms",
    "parse_formula",
    "parse_laws",
    "parse_properties",
    "parse_property",
    "parse_state_formula",
    "resolve_state",
    "resolve_unseen",
    "rule_vectors",
    "where",
]


_exports = LazyExports(__name__, _LAZY, globals())


def __getattr__(name: str) -> Any:
    return _exports.attr(name)


def __dir__() -> list[str]:
    return _exports.dir()
