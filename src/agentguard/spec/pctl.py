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
from typing import Any

from ..core.errors import ModelError, ParseError
from .pctl_state import (
    FUNC_ARITY,
    And,
    BinOp,
    Compare,
    Const,
    ExprCompare,
    Func,
    Implies,
    Label,
    Not,
    Num,
    Or,
    PathFormula,
    ProbAtom,
    Property,
    StateFormula,
    Term,
    Var,
    fold,
)

__all__ = [
    "And",
    "Compare",
    "Const",
    "ExprCompare",
    "Implies",
    "Label",
    "Not",
    "Or",
    "PathFormula",
    "ProbAtom",
    "Property",
    "StateFormula",
    "parse_properties",
    "parse_property",
    "parse_state_formula",
]

_CMP_OPS = ("<=", ">=", "!=", "=", "<", ">")
#: deepest nesting of parentheses/operators a formula may have (deeper: ParseError, not a crash)
MAX_DEPTH = 100
#: filter operators (PRISM's ``filter(op, prop, states)``)
FILTER_OPS = ("avg", "count", "exists", "first", "forall", "max", "min", "print", "state", "sum")


# --- tokenizer and recursive-descent parser ---------------------------------------------------
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<label>"[^"]*")
  | (?P<num>\d+\.\d*(?:[eE][-+]?\d+)?|\d*\.\d+(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>=\?|=>|<=|>=|!=|[=<>!&|()\[\]\-+*/,{}:;])
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
    def __init__(self, text: str, constants: Mapping[str, Any] | None = None):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.depth = 0
        self.consts = dict(constants or {})

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
        if self.at(";"):
            self.take()
        if self.peek()[0] != "end":
            raise self.error("unexpected trailing input")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ParseError(f"formula nested more than {MAX_DEPTH} levels deep in {self.text[:60]!r}...")

    # arithmetic terms
    def number(self) -> float:
        kind, val, _ = self.peek()
        if kind != "num":
            raise self.error("expected a number")
        self.take()
        return float(self.literal(val))

    def literal(self, val: str) -> int | float:
        """A number token's value: a ParseError, not a ValueError or inf, for one too long to be a number
        (``x=`` followed by 100000 digits passed int()'s digit limit as a ValueError)."""
        if len(val) > 300:
            raise self.error(f"number {val[:20]}... is too long")
        return int(val) if val.isdigit() else float(val)

    def arith(self) -> Term:
        self.enter()
        t = self.term()
        while self.at("+") or self.at("-"):
            op = self.take()[1]
            t = BinOp(op, t, self.term())
        self.depth -= 1
        return t

    def term(self) -> Term:
        t = self.factor()
        while self.at("*") or self.at("/"):
            op = self.take()[1]
            t = BinOp(op, t, self.factor())
        return t

    def factor(self) -> Term:
        kind, val, _ = self.peek()
        if self.at("-"):
            self.take()
            self.enter()
            f = BinOp("-", Num(0), self.factor())
            self.depth -= 1
            return f
        if kind == "num":
            self.take()
            return Num(self.literal(val))
        if self.at("("):
            self.take()
            t = self.arith()
            self.expect(")")
            return t
        if kind == "ident" and val in FUNC_ARITY and self.peek(1)[1] == "(":
            self.take()
            self.take()
            args = [self.arith()]
            while self.at(","):
                self.take()
                args.append(self.arith())
            self.expect(")")
            if len(args) != FUNC_ARITY[val]:
                raise ParseError(f"{val} takes {FUNC_ARITY[val]} argument(s), got {len(args)} in {self.text!r}")
            return Func(val, tuple(args))
        if kind == "ident" and val not in ("true", "false"):
            self.take()
            if val in self.consts:
                c = self.consts[val]
                return Num(int(c) if isinstance(c, bool) else c)
            return Var(val)
        raise self.error("expected a number, variable or constant")

    def int_expr(self, what: str = "step bound") -> int:
        t = self.arith()
        if t.vars():
            raise ParseError(f"{what} {t} names unknown constant(s) {', '.join(sorted(t.vars()))} in {self.text!r}")
        v = fold(t)
        if not isinstance(v, Num) or float(v.v) != int(v.v):
            raise ParseError(f"{what} {t} is not an integer in {self.text!r}")
        return int(v.v)

    # state formulas
    def state(self) -> StateFormula:
        self.enter()
        left = self.or_()
        if self.at("=>"):
            self.take()
            left = Implies(left, self.state())
        self.depth -= 1
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
            self.enter()
            f = Not(self.not_())
            self.depth -= 1
            return f
        return self.atom()

    def compare(self) -> StateFormula | None:
        """``term CMP term`` if one starts here (else None, position unchanged)."""
        start, depth = self.i, self.depth
        try:
            left = self.arith()
            k, op, _ = self.peek()
            if k != "op" or op not in _CMP_OPS:
                raise ParseError("not a comparison")
        except ParseError as exc:
            if "nested more than" in str(exc):
                raise
            self.i, self.depth = start, depth
            return None
        self.take()  # committed: an error on the right-hand side is reported where it is
        right = self.arith()
        left, right = fold(left), fold(right)
        if isinstance(left, Var) and isinstance(right, Num) and isinstance(right.v, int):
            return Compare(left.name, op, right.v)
        return ExprCompare(left, op, right)

    def atom(self) -> StateFormula:
        kind, val, _ = self.peek()
        if kind == "label":
            self.take()
            name = val[1:-1]
            if not name:
                raise ParseError(f"empty label name \"\" in {self.text!r}")
            return Label(name)
        if kind == "ident" and val in ("P", "R") and self.peek(1)[1] in ("<", "<=", ">", ">=", "{"):
            return ProbAtom(self.prop_body(nested=True))
        if kind == "ident" and val in ("U", "F", "G", "X"):
            raise self.error("expected a state formula")
        if kind != "label" and not (kind == "ident" and val in ("true", "false")):
            cmp = self.compare()
            if cmp is not None:
                return cmp
        if self.at("("):
            self.take()
            f = self.state()
            self.expect(")")
            return f
        if kind == "ident":
            self.take()
            if val in ("true", "false"):
                return Const(val == "true")
            if val in self.consts and isinstance(self.consts[val], bool):
                return Const(bool(self.consts[val]))
            return Label(val, quoted=False)
        raise self.error("expected a state formula")

    # paths and properties
    def bound(self) -> tuple[int | None, int | None]:
        """``(lower, upper)`` of ``<=k``, ``<k`` (``<=k-1``), ``[a,b]``, ``>=a`` or nothing."""
        lo: int | None = None
        if self.at("<="):
            self.take()
            k = self.int_expr()
        elif self.at("<"):
            self.take()
            k = self.int_expr() - 1
        elif self.at(">=") or self.at(">"):
            strict = self.take()[1] == ">"
            lo, k = self.int_expr() + strict, None  # type: ignore[assignment]
        elif self.at("["):
            self.take()
            lo = self.int_expr()
            self.expect(",")
            k = self.int_expr()
            self.expect("]")
            if lo > k:
                raise ParseError(f"empty step interval [{lo},{k}] in {self.text!r}")
        else:
            return None, None
        if (k is not None and k < 0) or (lo is not None and lo < 0):
            raise ParseError(f"step bound must be >= 0 in {self.text!r}")
        return (lo or None), k

    def path(self, kind: str) -> PathFormula:
        k, val, _ = self.peek()
        if kind == "R" and k == "ident" and val == "C":
            self.take()
            lo, hi = self.bound()
            if hi is None or lo:
                raise self.error("cumulative reward needs a bound C<=k")
            return PathFormula("C", None, None, hi)
        if k == "ident" and val in ("F", "G", "X"):
            self.take()
            lo, hi = self.bound() if val != "X" else (None, None)
            if kind == "R" and (val != "F" or hi is not None or lo):
                raise self.error("reward properties support 'F phi' and 'C<=k'")
            return PathFormula(val, self.state(), None, hi, lo)
        left = self.state()
        if not self.at("U") or kind == "R":
            raise self.error("expected 'F', 'G', 'X' or 'U'")
        self.take()
        lo, hi = self.bound()
        return PathFormula("U", self.state(), left, hi, lo)

    def prop_body(self, nested: bool = False) -> Property:
        kind = self.peek()[1] if self.peek()[0] == "ident" else ""
        if kind not in ("P", "R", "S"):
            raise self.error("a property starts with 'P', 'R' or 'S' (e.g. 'P=?' or 'P<=0.1')")
        self.take()
        reward = None
        if kind == "R" and self.at("{"):
            self.take()
            k, v, _ = self.take()
            if k != "label":
                raise self.error('expected a reward structure name in quotes, R{"name"}')
            reward = v[1:-1]
            self.expect("}")
        comparison = threshold = None
        if self.at("=?") and not nested:
            self.take()
        elif self.peek()[1] in ("<", "<=", ">", ">="):
            comparison = self.take()[1]
            threshold = self.number()
            if kind != "R" and not 0.0 <= threshold <= 1.0:
                raise ParseError(f"probability bound {threshold} outside [0, 1] in {self.text!r}")
        else:
            want = "a comparison" if nested else "'=?' or a comparison"
            raise self.error(f"expected {want} after {kind!r}")
        self.expect("[")
        if kind == "S":
            st = self.state()
            self.expect("]")
            return Property(None, comparison, threshold, "S", None, st)
        p = self.path(kind)
        self.expect("]")
        return Property(p, comparison, threshold, kind, reward)

    def prop(self) -> Property:
        name = None
        if self.peek()[0] == "label" and self.peek(1)[1] == ":":
            name = self.take()[1][1:-1]
            self.take()
        if self.peek() == ("ident", "filter", self.peek()[2]):
            self.take()
            self.expect("(")
            op = self.take()[1]
            if op not in FILTER_OPS:
                raise ParseError(f"unknown filter operator {op!r} (use {', '.join(FILTER_OPS)})")
            self.expect(",")
            inner = self.prop_body()
            states = None
            if self.at(","):
                self.take()
                states = self.state()
            self.expect(")")
            p = Property(inner.path, inner.comparison, inner.threshold, inner.kind, inner.reward, inner.state,
                         (op, states), name)
        else:
            b = self.prop_body()
            p = Property(b.path, b.comparison, b.threshold, b.kind, b.reward, b.state, None, name)
        self.done()
        return p


def parse_property(text: str, constants: Mapping[str, Any] | None = None) -> Property:
    """Parse one property: ``P=? [F phi]``, ``P>=0.9 [G phi]``, ``F<=k``/``F[a,b]``, ``U``, ``X``,
    ``R{"r"}=? [F phi]``, ``R=? [C<=k]``, ``S=? [phi]``, ``filter(op, prop, phi)``, an optional
    ``"name":`` prefix and a trailing ``;``. ``constants`` (name -> value) are folded into bounds
    and comparisons (``F<=K``, ``s=N-1``)."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty property")
    try:
        return _Parser(text, constants).prop()
    except RecursionError:
        raise ParseError(f"property nested too deeply: {text[:60]!r}...") from None


def parse_properties(text: str, constants: Mapping[str, Any] | None = None) -> list[Property]:
    """A properties file (PRISM ``.props``/``.pctl``): properties separated by ``;`` or new lines,
    ``//`` comments, ``const`` definitions (used by the later properties), optional ``"name":``."""
    consts = dict(constants or {})
    out: list[Property] = []
    clean = "\n".join(line.split("//", 1)[0] for line in text.splitlines())
    for stmt in (s.strip() for s in re.split(r"[;\n]", clean)):
        if not stmt:
            continue
        m = re.fullmatch(r"const\s+(?:(int|double|bool)\s+)?([A-Za-z_]\w*)\s*=\s*(.+)", stmt)
        if m:
            if m.group(2) in consts:
                raise ParseError(f"duplicate constant {m.group(2)!r} in the properties")
            consts[m.group(2)] = _const_value(m.group(3), m.group(1), consts)
            continue
        out.append(parse_property(stmt, consts))
    if not out:
        raise ParseError("no property found")
    return out


def _const_value(expr: str, typ: str | None, consts: Mapping[str, Any]) -> Any:
    e = expr.strip()
    if e in ("true", "false"):
        return e == "true"
    p = _Parser(e, consts)
    t = p.arith()
    p.done()
    if t.vars():
        raise ParseError(f"constant definition {e!r} names unknown constant(s) {', '.join(sorted(t.vars()))}")
    v = fold(t)
    val = v.v if isinstance(v, Num) else float("nan")
    return int(val) if typ == "int" else val


def parse_state_formula(text: str, constants: Mapping[str, Any] | None = None) -> StateFormula:
    """Parse a state formula such as ``s=3|s=7``, ``"unsafe" & !(s>=2)`` or ``x+y<=N``."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty state formula")
    try:
        p = _Parser(text, constants)
        f = p.state()
        p.done()
    except RecursionError:
        raise ParseError(f"state formula nested too deeply: {text[:60]!r}...") from None
    return f


_ = ModelError  # evaluation errors are ModelError (raised in pctl_state)
