"""State formulas of PCTL (labels, comparisons, Boolean connectives, nested ``P``) and their
arithmetic terms, evaluated on every state of a model at once (numpy Boolean vectors).

A :class:`Term` is an integer/real expression over state variables (``s+1``, ``min(a,b)``, ``N-1``
with constants folded in by the parser); :class:`ExprCompare` compares two terms; the plain
``var CMP int`` case stays a :class:`Compare`. :class:`ProbAtom` is a nested ``P~p [path]`` (or
``R~r [...]``) used as a state formula: the model checker computes its per-state verdict first and
passes it as a hidden label (:attr:`ProbAtom.key`), so this module needs no model checker.
Chains of ``|``/``&`` (a label over 1,000 states) are evaluated, named and printed without
recursion. The parser lives in :mod:`agentguard.spec.pctl`, which re-exports these classes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import ModelError

if TYPE_CHECKING:  # pragma: no cover
    from ..predictive.dtmc import DTMC

__all__ = [
    "And",
    "BinOp",
    "Compare",
    "Const",
    "ExprCompare",
    "FUNC_ARITY",
    "Func",
    "Implies",
    "Label",
    "Not",
    "Num",
    "Or",
    "PathFormula",
    "ProbAtom",
    "Property",
    "StateFormula",
    "Term",
    "Var",
    "fold",
    "nested_atoms",
]

#: the functions PRISM expressions may call in properties, with their number of arguments
FUNC_ARITY = {"abs": 1, "ceil": 1, "floor": 1, "max": 2, "min": 2, "mod": 2, "pow": 2}


# --- arithmetic terms ----------------------------------------------------------------
class Term:
    """An arithmetic expression over state variables; ``value(variables)`` is an array or a scalar."""

    def value(self, variables) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def vars(self) -> set[str]:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class Num(Term):
    v: float | int

    def value(self, variables):
        return self.v

    def vars(self):
        return set()

    def __str__(self) -> str:
        return str(self.v)


@dataclass(frozen=True)
class Var(Term):
    name: str

    def value(self, variables):
        return np.asarray(variables[self.name])

    def vars(self):
        return {self.name}

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class BinOp(Term):
    op: str
    left: Term
    right: Term

    def value(self, variables):
        a, b = self.left.value(variables), self.right.value(variables)
        if self.op == "+":
            return a + b
        if self.op == "-":
            return a - b
        if self.op == "*":
            return a * b
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.true_divide(a, b)

    def vars(self):
        return self.left.vars() | self.right.vars()

    def __str__(self) -> str:
        return f"({self.left}{self.op}{self.right})"


@dataclass(frozen=True)
class Func(Term):
    name: str
    args: tuple[Term, ...]

    def value(self, variables):
        a = [t.value(variables) for t in self.args]
        if self.name == "min":
            return np.minimum(a[0], a[1])
        if self.name == "max":
            return np.maximum(a[0], a[1])
        if self.name == "floor":
            return np.floor(a[0])
        if self.name == "ceil":
            return np.ceil(a[0])
        if self.name == "abs":
            return np.abs(a[0])
        if self.name == "pow":
            return np.power(a[0], a[1])
        if np.any(np.asarray(a[1]) == 0):
            raise ModelError(f"mod by zero in {self}")
        return np.mod(a[0], a[1])

    def vars(self):
        return set().union(*(t.vars() for t in self.args))

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"


def fold(t: Term) -> Term:
    """Constant folding: a term without variables becomes a :class:`Num` (ints stay ints)."""
    if t.vars():
        if isinstance(t, BinOp):
            return BinOp(t.op, fold(t.left), fold(t.right))
        if isinstance(t, Func):
            return Func(t.name, tuple(fold(a) for a in t.args))
        return t
    v = t.value({})
    v = v.item() if isinstance(v, np.generic) else v
    if isinstance(v, float) and not math.isfinite(v):
        raise ModelError(f"{t} is not a finite number")
    if isinstance(v, float) and v.is_integer() and not (isinstance(t, BinOp) and t.op == "/"):
        v = int(v)
    return Num(v)



# --- state formulas ---------------------------------------------------------------------------
class StateFormula:
    """A Boolean combination of labels and integer-variable comparisons, evaluated on every state."""

    def evaluate(self, model: DTMC, extra: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
        """Boolean vector over the model's states; ModelError names every unknown label/variable.
        The built-in labels ``"init"`` and ``"deadlock"`` are available; ``extra`` adds hidden ones
        (the verdicts of nested ``P`` atoms)."""
        builtin = getattr(model, "builtin_labels", None)
        labels = dict(builtin() if builtin is not None else model.labels)
        if extra:
            labels.update(extra)
        return self.evaluate_env(model.n, labels, model.variables)

    def evaluate_env(self, n: int, labels: Mapping[str, np.ndarray],
                     variables: Mapping[str, np.ndarray]) -> np.ndarray:
        """Evaluate against explicit label and variable vectors of length ``n``."""
        unknown = sorted({(kind, name) for kind, name in self.names()
                          if not ((kind != "label" and name in variables) or (kind != "var" and name in labels))})
        if unknown:
            what = {"label": "label", "var": "variable", "ident": "variable or label"}
            names = ", ".join(f'{what[k]} "{n}"' if k == "label" else f"{what[k]} {n}" for k, n in unknown)
            known_l = ", ".join(f'"{k}"' for k in sorted(labels)) or "none"
            known_v = ", ".join(sorted(variables)) or "none"
            raise ModelError(f"unknown {names} (model labels: {known_l}; variables: {known_v})")
        return np.asarray(self._eval(n, labels, variables), dtype=bool)

    def names(self) -> set[tuple[str, str]]:
        """The (kind, name) pairs the formula refers to; kind is 'label', 'var' or 'ident'."""
        raise NotImplementedError

    def _eval(self, n, labels, variables) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class Const(StateFormula):
    value: bool

    def names(self):
        return set()

    def _eval(self, n, labels, variables):
        return np.full(n, self.value, dtype=bool)

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True)
class Label(StateFormula):
    name: str
    quoted: bool = True

    def names(self):
        return {("label" if self.quoted else "ident", self.name)}

    def _eval(self, n, labels, variables):
        if not self.quoted and self.name in variables:
            return np.asarray(variables[self.name]) != 0
        return np.asarray(labels[self.name], dtype=bool)

    def __str__(self) -> str:
        return f'"{self.name}"' if self.quoted else self.name


@dataclass(frozen=True)
class Compare(StateFormula):
    var: str
    op: str
    value: int

    def names(self):
        return {("var", self.var)}

    def _eval(self, n, labels, variables):
        v = np.asarray(variables[self.var])
        return {"=": v == self.value, "!=": v != self.value, "<": v < self.value,
                "<=": v <= self.value, ">": v > self.value, ">=": v >= self.value}[self.op]

    def __str__(self) -> str:
        return f"{self.var}{self.op}{self.value}"


@dataclass(frozen=True)
class Not(StateFormula):
    arg: StateFormula

    def names(self):
        return self.arg.names()

    def _eval(self, n, labels, variables):
        return ~self.arg._eval(n, labels, variables)

    def __str__(self) -> str:
        a = self.arg
        return f"!{a}" if isinstance(a, (Const, Label, Not)) else f"!({a})"


def _chain(f: StateFormula, cls: type) -> list[StateFormula]:
    """The operands of a left-nested chain ``((a op b) op c) op d`` of one class, without recursion."""
    out: list[StateFormula] = []
    while isinstance(f, cls):
        out.append(f.right)  # type: ignore[attr-defined]
        f = f.left  # type: ignore[attr-defined]
    out.append(f)
    out.reverse()
    return out


@dataclass(frozen=True)
class And(StateFormula):
    left: StateFormula
    right: StateFormula

    def names(self):
        return set().union(*(a.names() for a in _chain(self, And)))

    def _eval(self, n, labels, variables):
        parts = _chain(self, And)
        acc = np.array(parts[0]._eval(n, labels, variables), dtype=bool)
        for a in parts[1:]:
            acc &= a._eval(n, labels, variables)
        return acc

    def __str__(self) -> str:
        return " & ".join(_paren(a) for a in _chain(self, And))


@dataclass(frozen=True)
class Or(StateFormula):
    left: StateFormula
    right: StateFormula

    def names(self):
        return set().union(*(a.names() for a in _chain(self, Or)))

    def _eval(self, n, labels, variables):
        parts = _chain(self, Or)
        acc = np.array(parts[0]._eval(n, labels, variables), dtype=bool)
        for a in parts[1:]:
            acc |= a._eval(n, labels, variables)
        return acc

    def __str__(self) -> str:
        return " | ".join(_paren(a) if not isinstance(a, And) else f"({a})" for a in _chain(self, Or))


@dataclass(frozen=True)
class Implies(StateFormula):
    left: StateFormula
    right: StateFormula

    def names(self):
        return self.left.names() | self.right.names()

    def _eval(self, n, labels, variables):
        return ~self.left._eval(n, labels, variables) | self.right._eval(n, labels, variables)

    def __str__(self) -> str:
        return f"{_paren(self.left)} => {_paren(self.right)}"


@dataclass(frozen=True)
class ExprCompare(StateFormula):
    """``term CMP term`` over state variables (``s+1=4``, ``x+y<=N``)."""

    left: Term
    op: str
    right: Term

    def names(self):
        return {("var", v) for v in self.left.vars() | self.right.vars()}

    def _eval(self, n, labels, variables):
        a, b = self.left.value(variables), self.right.value(variables)
        r = {"=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
             ">": np.greater, ">=": np.greater_equal}[self.op](a, b)
        return np.array(np.broadcast_to(np.asarray(r, dtype=bool), (n,)))

    def __str__(self) -> str:
        return f"{self.left}{self.op}{self.right}"


@dataclass(frozen=True)
class ProbAtom(StateFormula):
    """A nested ``P~p [path]`` / ``R~r [...]`` as a state formula (``prop`` is a pctl Property)."""

    prop: Any

    @property
    def key(self) -> str:
        return f"__nested {self.prop}"

    def names(self):
        return set()

    def _eval(self, n, labels, variables):
        if self.key not in labels:
            raise ModelError(f"nested {self.prop} needs the model checker (agentguard.predictive.checker.check)")
        return np.asarray(labels[self.key], dtype=bool)

    def __str__(self) -> str:
        return str(self.prop)


def nested_atoms(f: StateFormula) -> list[ProbAtom]:
    """The nested ``P``/``R`` atoms of ``f`` (outermost level only), in a stable order."""
    out: list[ProbAtom] = []
    stack = [f]
    while stack:
        g = stack.pop()
        if isinstance(g, ProbAtom):
            out.append(g)
        elif isinstance(g, (And, Or, Implies)):
            stack += [g.right, g.left]
        elif isinstance(g, Not):
            stack.append(g.arg)
    return out


def _paren(f: StateFormula | None) -> str:
    if f is None:
        return ""
    return str(f) if isinstance(f, (Const, Label, Compare, Not, ExprCompare, ProbAtom)) else f"({f})"


# --- path formulas and properties -------------------------------------------------------------
@dataclass(frozen=True)
class PathFormula:
    """``op`` is 'F', 'G', 'X', 'U' (probabilities) or 'C' (cumulative reward, ``C<=k``); ``left`` is set
    only for 'U'; ``bound`` is the upper step bound or None, ``lower`` the lower one (``F[a,b]``)."""

    op: str
    right: StateFormula | None
    left: StateFormula | None = None
    bound: int | None = None
    lower: int | None = None

    def _b(self) -> str:
        if self.lower:
            return f"[{self.lower},{self.bound}]" if self.bound is not None else f">={self.lower}"
        return f"<={self.bound}" if self.bound is not None else ""

    def __str__(self) -> str:
        if self.op == "C":
            return f"C{self._b()}"
        if self.op == "U":
            return f"{_paren(self.left)} U{self._b()} {_paren(self.right)}"  # type: ignore[arg-type]
        return f"{self.op}{self._b()} {_paren(self.right)}"  # type: ignore[arg-type]


@dataclass(frozen=True)
class Property:
    """``P=? [path]`` (query) or ``P~p [path]`` (threshold: ``comparison`` in <,<=,>,>= and ``threshold``).

    ``kind`` is ``"P"`` (probability), ``"R"`` (expected reward of structure ``reward``; None = the
    model's only/unnamed one) or ``"S"`` (long-run probability of the state formula ``state``).
    ``filter`` = (op, states) for PRISM's ``filter(op, prop, states)``; ``name`` a property's name
    in a properties file."""

    path: PathFormula | None
    comparison: str | None = None
    threshold: float | None = None
    kind: str = "P"
    reward: str | None = None
    state: StateFormula | None = None
    filter: tuple[str, StateFormula | None] | None = None
    name: str | None = None

    @property
    def is_query(self) -> bool:
        return self.comparison is None

    def inner(self) -> "Property":
        """The property without its filter."""
        return Property(self.path, self.comparison, self.threshold, self.kind, self.reward, self.state)

    def __str__(self) -> str:
        rew = f'{{"{self.reward}"}}' if self.kind == "R" and self.reward is not None else ""
        head = f"{self.kind}{rew}=?" if self.is_query else f"{self.kind}{rew}{self.comparison}{self.threshold:g}"
        body = f"{head} [{self.path if self.kind != 'S' else self.state}]"
        if self.filter is not None:
            op, states = self.filter
            body = f"filter({op}, {body}" + (f", {states})" if states is not None else ")")
        return body



