"""PCTL properties and state formulas over a DTMC, and their parser (PRISM syntax).

The fragment is the one the Pro2Guard paper needs (sections 3.1 and 4.1: ``AG !unsafe`` becomes
``P=? [G !"unsafe"]``, reachability of a violation, bounded reachability), written as in PRISM/Storm::

    property   := 'P' ('=?' | CMP number) '[' path ']'
    path       := 'F' [bound] state | 'G' [bound] state | 'X' state | state 'U' [bound] state
    bound      := '<=' INT | '<' INT                   (``<k`` means ``<=k-1``)
    state      := imp ;  imp := or ('=>' imp)? ;  or := and ('|' and)* ;  and := not ('&' not)*
    not        := '!' not | atom
    atom       := 'true' | 'false' | '"label"' | '(' state ')' | IDENT CMP INT | IDENT
    CMP        := '=' | '!=' | '<' | '<=' | '>' | '>='

A bare ``IDENT`` is a Boolean variable (true when non-zero) or, failing that, a label of that name.
Guarantees: :func:`parse_property` / :func:`parse_state_formula` either return a syntax tree or
raise :class:`~agentguard.core.errors.ParseError` naming the position; evaluating a formula on a
model raises :class:`~agentguard.core.errors.ModelError` naming *every* unknown label/variable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import ModelError, ParseError

if TYPE_CHECKING:  # pragma: no cover
    from ..predictive.dtmc import DTMC

__all__ = [
    "And",
    "Compare",
    "Const",
    "Implies",
    "Label",
    "Not",
    "Or",
    "PathFormula",
    "Property",
    "StateFormula",
    "parse_property",
    "parse_state_formula",
]

_CMP_OPS = ("<=", ">=", "!=", "=", "<", ">")


# --- state formulas ---------------------------------------------------------------------------
class StateFormula:
    """A Boolean combination of labels and integer-variable comparisons, evaluated on every state."""

    def evaluate(self, model: DTMC) -> np.ndarray:
        """Boolean vector over the model's states; ModelError names every unknown label/variable."""
        return self.evaluate_env(model.n, model.labels, model.variables)

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


@dataclass(frozen=True)
class And(StateFormula):
    left: StateFormula
    right: StateFormula

    def names(self):
        return self.left.names() | self.right.names()

    def _eval(self, n, labels, variables):
        return self.left._eval(n, labels, variables) & self.right._eval(n, labels, variables)

    def __str__(self) -> str:
        return f"{_paren(self.left)} & {_paren(self.right)}"


@dataclass(frozen=True)
class Or(StateFormula):
    left: StateFormula
    right: StateFormula

    def names(self):
        return self.left.names() | self.right.names()

    def _eval(self, n, labels, variables):
        return self.left._eval(n, labels, variables) | self.right._eval(n, labels, variables)

    def __str__(self) -> str:
        return f"{_paren(self.left)} | {_paren(self.right)}"


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


def _paren(f: StateFormula) -> str:
    return str(f) if isinstance(f, (Const, Label, Compare, Not)) else f"({f})"


# --- path formulas and properties -------------------------------------------------------------
@dataclass(frozen=True)
class PathFormula:
    """``op`` is 'F', 'G', 'X' or 'U'; ``left`` is set only for 'U'; ``bound`` is a step bound or None."""

    op: str
    right: StateFormula
    left: StateFormula | None = None
    bound: int | None = None

    def __str__(self) -> str:
        b = f"<={self.bound}" if self.bound is not None else ""
        if self.op == "U":
            return f"{_paren(self.left)} U{b} {_paren(self.right)}"  # type: ignore[arg-type]
        return f"{self.op}{b} {_paren(self.right)}"


@dataclass(frozen=True)
class Property:
    """``P=? [path]`` (query) or ``P~p [path]`` (threshold: ``comparison`` in <,<=,>,>= and ``threshold``)."""

    path: PathFormula
    comparison: str | None = None
    threshold: float | None = None

    @property
    def is_query(self) -> bool:
        return self.comparison is None

    def __str__(self) -> str:
        head = "P=?" if self.is_query else f"P{self.comparison}{self.threshold:g}"
        return f"{head} [{self.path}]"


# --- tokenizer and recursive-descent parser ---------------------------------------------------
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<label>"[^"]*")
  | (?P<num>\d+\.\d*(?:[eE][-+]?\d+)?|\d*\.\d+(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>=\?|=>|<=|>=|!=|[=<>!&|()\[\]\-])
""", re.VERBOSE)


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    toks, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ParseError(f"unexpected character {text[pos]!r} at column {pos + 1} in {text!r}")
        kind = m.lastgroup or ""
        if kind != "ws":
            toks.append((kind, m.group(), pos))
        pos = m.end()
    toks.append(("end", "", len(text)))
    return toks


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    # helpers
    def peek(self, k: int = 0) -> tuple[str, str, int]:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def take(self) -> tuple[str, str, int]:
        t = self.toks[self.i]
        self.i += 1
        return t

    def error(self, what: str) -> ParseError:
        kind, val, pos = self.peek()
        found = "end of input" if kind == "end" else repr(val)
        return ParseError(f"{what} at column {pos + 1}, found {found}, in {self.text!r}")

    def expect(self, val: str) -> None:
        if self.peek()[1] != val or self.peek()[0] == "label":
            raise self.error(f"expected {val!r}")
        self.take()

    def at(self, val: str) -> bool:
        k, v, _ = self.peek()
        return v == val and k in ("op", "ident")

    def done(self) -> None:
        if self.peek()[0] != "end":
            raise self.error("unexpected trailing input")

    # grammar
    def int_(self) -> int:
        neg = False
        if self.at("-"):
            self.take()
            neg = True
        kind, val, _ = self.peek()
        if kind != "num" or not val.isdigit():
            raise self.error("expected an integer")
        self.take()
        return -int(val) if neg else int(val)

    def number(self) -> float:
        kind, val, _ = self.peek()
        if kind != "num":
            raise self.error("expected a probability")
        self.take()
        return float(val)

    def state(self) -> StateFormula:
        left = self.or_()
        if self.at("=>"):
            self.take()
            return Implies(left, self.state())
        return left

    def or_(self) -> StateFormula:
        f = self.and_()
        while self.at("|"):
            self.take()
            f = Or(f, self.and_())
        return f

    def and_(self) -> StateFormula:
        f = self.not_()
        while self.at("&"):
            self.take()
            f = And(f, self.not_())
        return f

    def not_(self) -> StateFormula:
        if self.at("!"):
            self.take()
            return Not(self.not_())
        return self.atom()

    def atom(self) -> StateFormula:
        kind, val, _ = self.peek()
        if kind == "label":
            self.take()
            name = val[1:-1]
            if not name:
                raise ParseError(f"empty label name \"\" in {self.text!r}")
            return Label(name)
        if self.at("("):
            self.take()
            f = self.state()
            self.expect(")")
            return f
        if kind == "ident":
            if val in ("true", "false"):
                self.take()
                return Const(val == "true")
            if val in ("U", "F", "G", "X"):
                raise self.error("expected a state formula")
            self.take()
            nk, nv, _ = self.peek()
            if nk == "op" and nv in _CMP_OPS:
                self.take()
                return Compare(val, nv, self.int_())
            return Label(val, quoted=False)
        raise self.error("expected a state formula")

    def bound(self) -> int | None:
        if self.at("<="):
            self.take()
            k = self.int_()
        elif self.at("<"):
            self.take()
            k = self.int_() - 1
        else:
            return None
        if k < 0:
            raise ParseError(f"step bound must be >= 0 in {self.text!r}")
        return k

    def path(self) -> PathFormula:
        kind, val, _ = self.peek()
        if kind == "ident" and val in ("F", "G", "X"):
            self.take()
            b = self.bound() if val != "X" else None
            return PathFormula(val, self.state(), None, b)
        left = self.state()
        if not self.at("U"):
            raise self.error("expected 'F', 'G', 'X' or 'U'")
        self.take()
        b = self.bound()
        return PathFormula("U", self.state(), left, b)

    def prop(self) -> Property:
        if not self.at("P"):
            raise self.error("a property starts with 'P=?' or 'P<=p'")
        self.take()
        comparison = threshold = None
        if self.at("=?"):
            self.take()
        elif self.peek()[1] in ("<", "<=", ">", ">="):
            comparison = self.take()[1]
            threshold = self.number()
            if not 0.0 <= threshold <= 1.0:
                raise ParseError(f"probability bound {threshold} outside [0, 1] in {self.text!r}")
        else:
            raise self.error("expected '=?' or a comparison after 'P'")
        self.expect("[")
        p = self.path()
        self.expect("]")
        self.done()
        return Property(p, comparison, threshold)


def parse_property(text: str) -> Property:
    """Parse ``P=? [F phi]``, ``P=? [G phi]``, ``P=? [F<=k phi]``, ``P=? [phi1 U phi2]``, ``U<=k``, ``X``."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty property")
    return _Parser(text).prop()


def parse_state_formula(text: str) -> StateFormula:
    """Parse a state formula such as ``s=3|s=7`` or ``"unsafe" & !(s>=2)``."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty state formula")
    p = _Parser(text)
    f = p.state()
    p.done()
    return f
