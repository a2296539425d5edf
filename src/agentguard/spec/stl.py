"""Traffic laws in LawBreaker's STL, reduced to the bounded-response rules of Pro2Guard (Definition 5).

LawBreaker (Sun et al., ASE 2022) writes traffic laws as STL over the simulator's signals::

    law38_sub1_1 = (trafficLightAhead.color == green) & (stoplineAhead(2) | junctionAhead(2))
                   & ~PriorityNPCAhead & ~PriorityPedsAhead;
    law38_sub1_2 = F[0,2](speed > 0.5);
    law38_sub1 = G (law38_sub1_1 -> law38_sub1_2);

Pro2Guard's fragment STL_LB (Definition 5) is ``psi ::= G(phi_s => F[0,K] phi_t)`` with ``phi`` a
Boolean combination of atoms. :func:`parse_laws` reads a LawBreaker file (``name = formula;``
statements, ``//`` comments; the scenario statements are skipped), resolving references between
definitions. :func:`bounded_response` turns a law into its conjunction of STL_LB rules:

* ``G(phi_s -> F[0,K] phi_t)`` -> ``(phi_s, phi_t, K)``;
* ``G(phi_s -> phi_t)`` -> ``(phi_s, phi_t, 0)`` and ``G phi`` -> ``(true, phi, 0)``;
* ``G(a & b)`` = ``G a & G b`` and ``psi1 & psi2`` split into their rules.

Anything else (``F`` in a trigger, ``F[a,b]`` with ``a > 0``, a response mixing ``F`` with other
conjuncts, nested ``G``) raises :class:`ParseError` naming the law and the construct: such a law is
outside STL_LB and has no monitor of Definition 6.

Atoms are normalised to ``(signal, op, value)``: ``a.b`` -> signal ``ab`` (the release's predicate
names drop the dot: ``trafficLightAheadcolor``), a bare Boolean ``PriorityNPCAhead`` -> ``== 1``, a
distance call ``stoplineAhead(2)`` -> ``<= 2`` (``NPCAhead(d)`` -> ``NPCAheadAhead <= d``, as in the
release), and the named values of Apollo's messages (``red 1, yellow 2, green 3``; ``left 1, right 2``)
become numbers. :func:`rule_vectors` evaluates ``phi_s`` and ``phi_t`` on every state of a driving
DTMC of the Pro2Guard release, whose state names carry one bit per abstraction predicate: an atom is
read from the bit of the same predicate, or the complement of a Boolean signal's opposite predicate
(``~PriorityNPCAhead`` from ``PriorityNPCAhead == 0``); an atom the abstraction does not observe is
resolved by ``unknown`` (``"error"``, or ``"true"``/``"false"``, e.g. ``"true"`` drops
``stoplineAhead(2)`` from a trigger, which is how the paper's Example 2 states law 38 over four
predicates).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import InputError, ParseError

__all__ = [
    "Node",
    "Rule",
    "bounded_response",
    "is_law",
    "law_of_rule",
    "parse_formula",
    "parse_laws",
    "rule_vectors",
]

#: Named values of Apollo's messages as LawBreaker uses them.
CONSTANTS = {"red": 1.0, "yellow": 2.0, "green": 3.0, "black": 4.0, "unknown": 0.0,
             "forward": 0.0, "left": 1.0, "right": 2.0}
#: Distance calls whose release predicate name differs from the call's name.
CALL_ALIASES = {"NPCAhead": "NPCAheadAhead"}
#: Signals that take only the values 0 and 1 (so ``== 0`` is the complement of ``== 1``).
BOOLEAN_SIGNALS = frozenset({"PriorityNPCAhead", "PriorityPedsAhead", "isTrafficJam", "isLaneChanging",
                             "isTurningAround", "isOverTaking", "hornOn", "highBeamOn", "lowBeamOn",
                             "reach_destination", "collision"})

Node = tuple  # ("true",) ("atom", sig, op, val) ("not", a) ("and", a, b) ("or", a, b) ("implies", a, b)
#             ("G", a) ("F", lo, hi, a)


@dataclass(frozen=True)
class Rule:
    """One STL_LB rule ``G(trigger -> F[0,K] response)`` of a law."""

    law: str
    trigger: Node
    response: Node
    K: int

    def __str__(self) -> str:
        return f"G({show(self.trigger)} -> F[0,{self.K}] {show(self.response)})"


#: the deepest nesting of a formula (a law is a few levels; past this the text is refused, not recursed)
MAX_DEPTH = 100

_TOKEN = re.compile(r"""
    (?P<ws>\s+) | (?P<num>\d+(?:\.\d*)?|\.\d+) | (?P<op>->|==|!=|>=|<=|>|<|&|\||~|\(|\)|\[|\]|,|-)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
""", re.VERBOSE)


def _tokens(text: str, where: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ParseError(f"{where}: unexpected character {text[pos]!r} at column {pos + 1}")
        if m.lastgroup != "ws":
            out.append((m.lastgroup or "", m.group()))
        pos = m.end()
    out.append(("end", ""))
    return out


class _Parser:
    """Recursive descent: implies (right assoc.) < or < and < unary (~, G, F[a,b]) < primary."""

    def __init__(self, text: str, where: str, defs: Mapping[str, Node]):
        self.t, self.i, self.where, self.defs = _tokens(text, where), 0, where, defs
        self.depth = 0  # nesting of implies/unary: ((((...)))) 100000 deep was a RecursionError, not a ParseError

    def _nested(self, parse: Any) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ParseError(f"{self.where}: formula nested more than {MAX_DEPTH} levels deep")
        try:
            return parse()
        finally:
            self.depth -= 1

    def peek(self) -> tuple[str, str]:
        return self.t[self.i]

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.t[self.i]
        if value is not None and tok[1] != value:
            raise ParseError(f"{self.where}: expected {value!r}, found {tok[1] or 'end of formula'!r}")
        self.i += 1
        return tok

    def parse(self) -> Node:
        node = self.implies()
        if self.peek()[0] != "end":
            raise ParseError(f"{self.where}: unexpected {self.peek()[1]!r} after a complete formula")
        return node

    def implies(self) -> Node:
        return self._nested(self._implies)

    def _implies(self) -> Node:
        left = self.disj()
        if self.peek()[1] == "->":
            self.take()
            return ("implies", left, self.implies())
        return left

    def disj(self) -> Node:
        node = self.conj()
        while self.peek()[1] == "|":
            self.take()
            node = ("or", node, self.conj())
        return node

    def conj(self) -> Node:
        node = self.unary()
        while self.peek()[1] == "&":
            self.take()
            node = ("and", node, self.unary())
        return node

    def unary(self) -> Node:
        return self._nested(self._unary)

    def _unary(self) -> Node:
        kind, val = self.peek()
        if val == "~":
            self.take()
            return ("not", self.unary())
        if kind == "name" and val == "G":
            self.take()
            return ("G", self.unary())
        if kind == "name" and val == "F":
            self.take()
            self.take("[")
            lo = self.number()
            self.take(",")
            hi = self.number()
            self.take("]")
            if hi < lo:
                raise ParseError(f"{self.where}: F[{lo:g},{hi:g}] has its bounds reversed")
            return ("F", lo, hi, self.unary())
        return self.primary()

    def number(self) -> float:
        neg = self.peek()[1] == "-"
        if neg:
            self.take()
        kind, val = self.take()
        if kind != "num":
            raise ParseError(f"{self.where}: expected a number, found {val or 'end of formula'!r}")
        x = float(val)
        if not math.isfinite(x):  # float('9' * 400) is inf: F[0, inf] would be no bound
            raise ParseError(f"{self.where}: number {val[:20]!r}... is too large")
        return -x if neg else x

    def term(self) -> tuple[str, Any]:
        """A signal (``("sig", name)``), a number or named value (``("val", x)``), or a call."""
        kind, val = self.peek()
        if kind == "num" or val == "-":
            return ("val", self.number())
        if kind != "name":
            raise ParseError(f"{self.where}: expected a signal or a value, found {val or 'end of formula'!r}")
        self.take()
        if self.peek()[1] == "(":             # a distance call: stoplineAhead(2)
            self.take()
            d = self.number()
            self.take(")")
            return ("call", (CALL_ALIASES.get(val, val), d))
        if val in CONSTANTS:
            return ("val", CONSTANTS[val])
        return ("sig", val.replace(".", ""))

    def primary(self) -> Node:
        kind, val = self.peek()
        if val == "(":
            self.take()
            node = self.implies()
            self.take(")")
            return node
        if kind == "name" and val in ("true", "True") and self.t[self.i + 1][1] not in ("==", "!=", ">=", "<=", ">", "<"):
            self.take()
            return ("true",)
        if kind == "name" and val in self.defs and self.t[self.i + 1][1] not in ("(", "==", "!=", ">=", "<=", ">", "<"):
            self.take()
            return self.defs[val]
        left = self.term()
        op = self.peek()[1]
        if op in ("==", "!=", ">=", "<=", ">", "<"):
            self.take()
            right = self.term()
            if left[0] != "sig" or right[0] == "call":
                raise ParseError(f"{self.where}: a comparison needs a signal on its left and a value or signal "
                                 f"on its right")
            atom: Node = ("atom", left[1], "==" if op == "!=" else op, right[1])
            return ("not", atom) if op == "!=" else atom
        if left[0] == "call":
            return ("atom", left[1][0], "<=", left[1][1])
        if left[0] == "sig":
            return ("atom", left[1], "==", 1.0)
        raise ParseError(f"{self.where}: a number is not a formula")


def parse_formula(text: str, defs: Mapping[str, Node] | None = None, name: str = "formula") -> Node:
    """Parse one LawBreaker STL formula; names in ``defs`` stand for earlier definitions."""
    return _Parser(text, name, defs or {}).parse()


def parse_laws(text: str, prefix: str = "law") -> dict[str, Node]:
    """Every ``name = formula;`` statement of a LawBreaker file whose name starts with ``prefix``.

    ``//`` comments are dropped; other statements (map, vehicles, scenario, ``trace |= ...``) are
    skipped. A law that does not parse raises :class:`ParseError` naming it.
    """
    body = re.sub(r"//[^\n]*", "", text)
    defs: dict[str, Node] = {}
    for stmt in body.split(";"):
        m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=\s*(.+?)\s*", stmt, re.DOTALL)
        if not m or not m.group(1).startswith(prefix):
            continue
        name, rhs = m.group(1), " ".join(m.group(2).split())
        defs[name] = parse_formula(rhs, defs, name)
    if not defs:
        raise InputError(f"no statement named {prefix}... in the text")
    return defs


def _temporal(n: Node) -> bool:
    return n[0] in ("G", "F") or any(_temporal(c) for c in n[1:] if isinstance(c, tuple))


def is_law(n: Node) -> bool:
    """True when a definition contains ``G`` (a law); False for a building block (a state formula or
    an ``F[a,b]`` response) that only other laws use."""
    return n[0] == "G" or any(is_law(c) for c in n[1:] if isinstance(c, tuple))


def _conjuncts(n: Node) -> list[Node]:
    return _conjuncts(n[1]) + _conjuncts(n[2]) if n[0] == "and" else [n]


def bounded_response(law: Node, name: str = "law") -> list[Rule]:
    """The STL_LB rules whose conjunction is ``law`` (module doc); ParseError outside the fragment."""
    rules: list[Rule] = []
    for part in _conjuncts(law):
        if part[0] != "G":
            raise ParseError(f"{name}: outside STL_LB (Definition 5): a conjunct is not of the form G(...)")
        for body in _conjuncts(part[1]):
            trig, resp = (body[1], body[2]) if body[0] == "implies" else (("true",), body)
            if _temporal(trig):
                raise ParseError(f"{name}: outside STL_LB (Definition 5): a temporal operator inside the trigger "
                                 f"{show(trig)}")
            K = 0
            if resp[0] == "F":
                lo, hi, resp = resp[1], resp[2], resp[3]
                if lo != 0 or hi != int(hi):
                    raise ParseError(f"{name}: outside STL_LB (Definition 5): F[{lo:g},{hi:g}] (needs F[0,K], K integer)")
                K = int(hi)
            if _temporal(resp):
                raise ParseError(f"{name}: outside STL_LB (Definition 5): the response {show(resp)} is not "
                                 f"F[0,K] of a state formula")
            rules.append(Rule(name, trig, resp, K))
    return rules


def show(n: Node) -> str:
    """Text of a node, in LawBreaker's syntax."""
    k = n[0]
    if k == "true":
        return "true"
    if k == "atom":
        v = n[3]
        return f"{n[1]} {n[2]} {v:g}" if isinstance(v, float) else f"{n[1]} {n[2]} {v}"
    if k == "not":
        return f"~({show(n[1])})" if n[1][0] == "atom" else f"~{show(n[1])}"
    if k in ("and", "or", "implies"):
        op = {"and": "&", "or": "|", "implies": "->"}[k]
        return f"({show(n[1])} {op} {show(n[2])})"
    if k == "G":
        return f"G {show(n[1])}"
    return f"F[{n[1]:g},{n[2]:g}] {show(n[3])}"


def law_of_rule(rule: str) -> str:
    """The LawBreaker name of a release rule id: ``rule38_1`` -> ``law38_sub1``, ``rule53`` -> ``law53``."""
    m = re.fullmatch(r"rule(\d+)(?:_(\d+))?", rule.strip())
    if not m:
        raise InputError(f"unrecognised rule id {rule!r} (expected rule<law>[_<sub>])")
    return f"law{m.group(1)}" + (f"_sub{m.group(2)}" if m.group(2) else "")


def _atom_bits(sig: str, op: str, val: Any, predicates: Sequence[Sequence[str]]) -> tuple[int, bool] | None:
    """``(bit, negate)`` reading the atom from the abstraction predicates, or None."""
    if not isinstance(val, float):
        return None
    for j, (psig, pop, pval) in enumerate(predicates):
        if psig == sig and pop == op and float(pval) == val:
            return j, False
    if sig in BOOLEAN_SIGNALS and op == "==" and val in (0.0, 1.0):
        for j, (psig, pop, pval) in enumerate(predicates):
            if psig == sig and pop == "==" and float(pval) == 1.0 - val:
                return j, True
    return None


def rule_vectors(rule: Rule, state_names: Sequence[str], predicates: Sequence[Sequence[str]], *,
                 n_flags: int = 3, unknown: str = "error") -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(trigger, response, unobserved)``: the truth of ``phi_s`` and ``phi_t`` at every state.

    ``state_names`` are bit strings whose first ``n_flags`` bits are flags (collision, reach, law)
    and the rest one bit per ``predicates`` entry, as in the release's driving DTMCs. ``unknown``:
    what an atom the abstraction does not observe is taken to be (``"error"``: raise InputError).
    ``unobserved`` lists those atoms.
    """
    if unknown not in ("error", "true", "false"):
        raise InputError("unknown must be 'error', 'true' or 'false'")
    bits = np.array([[c == "1" for c in s[n_flags:n_flags + len(predicates)]] for s in state_names], dtype=bool)
    if bits.shape[1] != len(predicates):
        raise InputError(f"state names carry {bits.shape[1]} predicate bits, the abstraction has {len(predicates)}")
    missing: list[str] = []

    def ev(n: Node) -> np.ndarray:
        k = n[0]
        if k == "true":
            return np.ones(len(state_names), bool)
        if k == "atom":
            hit = _atom_bits(n[1], n[2], n[3], predicates)
            if hit is None:
                missing.append(show(n))
                if unknown == "error":
                    raise InputError(f"{rule.law}: the abstraction does not observe {show(n)} "
                                     f"(predicates: {[' '.join(p) for p in predicates]}); pass unknown='true' "
                                     f"or 'false' (command line: --unknown true|false) to assume it")
                return np.full(len(state_names), unknown == "true")
            j, neg = hit
            return ~bits[:, j] if neg else bits[:, j].copy()
        if k == "not":
            return ~ev(n[1])
        if k == "and":
            return ev(n[1]) & ev(n[2])
        if k == "or":
            return ev(n[1]) | ev(n[2])
        if k == "implies":
            return ~ev(n[1]) | ev(n[2])
        raise InputError(f"{rule.law}: {show(n)} is not a state formula")

    return ev(rule.trigger), ev(rule.response), sorted(set(missing))
