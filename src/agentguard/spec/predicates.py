"""Predicate abstraction: concrete agent states -> bit-vectors (Section 3.2 of the Pro2Guard paper).

Given Boolean predicates ``P = {phi_1, ..., phi_n}`` over a concrete state ``v``, the abstract state
is ``s_P(v) = (phi_1 |= v, ..., phi_n |= v)``, written as a bit string such as ``"01001000"``
(bit i is predicate i, in the order given).

A concrete state is anything the predicates understand: a dict (``{"speed": 3.2, "light": "red"}``)
or an AI2-THOR-like object list (``{"objects": [{"objectType": "Microwave", "isToggled": true,
"receptacleObjectIds": [...]}, ...]}``).

Predicates come from Python (any callable ``state -> bool``, or the small combinators below) or
from a spec file (YAML or JSON), where they are text in the safe expression language of
:mod:`agentguard.spec.expr` (``exists(objects, objectType == "Microwave" and isToggled)``).

Around the predicates an :class:`Abstraction` holds the rest of the domain knowledge the learner
needs:

* ``valid_transition(s, s')``: which abstract moves are semantically possible (Eq. 1 smooths only
  over these). Built-ins: ``"any"`` and ``"hamming1"`` (at most one predicate changes per step, which is
  the rule of the Pro2Guard embodied DTMCs); or an expression over ``src``, ``dst`` (predicate
  name -> bool) and ``changed`` (number of differing bits); or a Python callable on bit strings.
* ``infeasible(bits)``: abstract states that cannot exist (pruned; a trace that reaches one is an
  error naming it). Constraints are expressions over predicate names, or a Python callable.
* ``unsafe``: the unsafe condition (an expression over predicate names) that becomes the ``unsafe``
  label of a learned model; ``labels`` adds further named labels the same way.
* ``terminal``: optional name of an absorbing end state appended after every trace (``"finish"`` in
  the Pro2Guard data); transitions into it are always valid, and it only moves to itself.
* ``unseen``: what to do at run time with an abstract state the model never saw in training: one
  of the policies of :mod:`agentguard.spec.unseen` (``"nearest"``, ``"pessimistic"``, ``"alarm"``,
  ``"allow"``, ``"error"``; default :data:`~agentguard.spec.unseen.DEFAULT_UNSEEN`, ``"pessimistic"``),
  the same names :class:`~agentguard.predictive.guard.ProactiveGuard` takes. :meth:`Abstraction.locate` applies the policies that name a stand-in state (``nearest``,
  ``pessimistic``, ``error``).
* ``state`` (``state_fn``): the name of the state function the traces were recorded with
  (``"history"`` or ``"package.module:attr"``, :mod:`agentguard.spec.history`); a learned model
  carries it, so a guard can compute the state when a decision brings none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError, ParseError
from ._expr_base import check_condition, reset_budget
from .expr import Expr
from .spec_file import read_document
from .unseen import DEFAULT_UNSEEN, UNSEEN_POLICIES, resolve_state

__all__ = [
    "Abstraction",
    "Predicate",
    "UNSEEN_POLICIES",
    "attr",
    "exists",
    "forall",
    "hamming1",
    "load_spec",
    "resolve_state",
    "where",
]


# --- Python combinators ------------------------------------------------------------------------
def where(**conditions: Any) -> Callable[[Any], bool]:
    """An item test: every named field equals the value (a callable value is applied to the field).

    ``where(objectType="Microwave", isToggled=True)``;
    ``where(parentReceptacles=lambda v: "Microwave" in (v or []))``.
    """

    def test(item: Any) -> bool:
        for k, want in conditions.items():
            have = item.get(k) if isinstance(item, Mapping) else getattr(item, k, None)
            if callable(want):
                if not want(have):
                    return False
            elif have != want:
                return False
        return True

    return test


def _objects(state: Any, key: str) -> list[Any]:
    coll = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
    if coll is None:
        raise InputError(f"state has no {key!r} list")
    return list(coll)


def exists(test: Callable[[Any], bool], key: str = "objects") -> Callable[[Any], bool]:
    """Predicate: some item of ``state[key]`` passes ``test``."""
    return lambda state: any(test(o) for o in _objects(state, key))


def forall(test: Callable[[Any], bool], key: str = "objects") -> Callable[[Any], bool]:
    """Predicate: every item of ``state[key]`` passes ``test``."""
    return lambda state: all(test(o) for o in _objects(state, key))


def attr(name: str) -> Callable[[Any], Any]:
    """Field reader usable inside tests: ``lambda s: attr("speed")(s) > 0.5``."""
    return lambda obj: obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def hamming1(a: str, b: str) -> bool:
    """Built-in ``valid_transition``: at most one predicate changes value in one step."""
    return sum(x != y for x, y in zip(a, b)) <= 1


# --- predicates and the abstraction --------------------------------------------------------------
@dataclass(frozen=True)
class Predicate:
    """A named Boolean predicate over a concrete state: a callable or an expression text."""

    name: str
    fn: Callable[[Any], Any] | Expr

    @classmethod
    def of(cls, name: str, spec: str | Callable[[Any], Any] | Expr) -> Predicate:
        if not isinstance(name, str) or not name.isidentifier():
            raise ParseError(f"predicate name {name!r} must be an identifier")
        if isinstance(spec, str):
            spec = Expr(spec)
        if not callable(spec) and not isinstance(spec, Expr):
            raise ParseError(f"predicate {name!r} must be an expression text or a callable")
        return cls(name, spec)

    def __call__(self, state: Any) -> bool:
        try:
            v = self.fn.evaluate(state) if isinstance(self.fn, Expr) else self.fn(state)
        except InputError as exc:
            raise InputError(f"predicate {self.name!r}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - a user's callable failed: name it, never crash the caller
            raise InputError(f"predicate {self.name!r} failed: {type(exc).__name__}: {exc}") from None
        return _truth(self.name, v)


def _truth(name: str, v: Any) -> bool:
    """A predicate's value as a bit: a bool (numpy's too) or the int 0 or 1. Anything else (``None`` from a
    ``get`` with no default, a number, a list, a string) is an error naming the predicate, never False: a
    predicate that cannot say whether the state is unsafe must not say it is safe."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v in (0, 1):
        return bool(v)
    raise InputError(f"predicate {name!r} returned {type(v).__name__} {str(v)[:40]!r}, not a Boolean")


BitsFn = Callable[[str], bool]
PairFn = Callable[[str, str], bool]


@dataclass
class Abstraction:
    """Predicates plus the domain knowledge around them (see the module docstring).

    Guarantees: :meth:`abstract` returns a bit string of length ``len(predicates)`` for every state
    the predicates can evaluate, or raises InputError naming the predicate and the problem; it
    raises InputError (naming the bits) for a state that an ``infeasible`` constraint or the
    ``states`` whitelist excludes.
    """

    predicates: list[Predicate]
    valid_transition: str | PairFn | Expr = "any"
    infeasible: list[Expr | BitsFn] = field(default_factory=list)
    unsafe: Expr | BitsFn | None = None
    labels: dict[str, Expr | BitsFn] = field(default_factory=dict)
    terminal: str | None = None
    unseen: str = DEFAULT_UNSEEN
    states: list[str] | None = None  # optional whitelist of abstract states (domain expert's list)
    name: str = ""
    options: dict[str, Any] = field(default_factory=dict)  # learner defaults from a spec file
    state_fn: str | None = None  # the state function traces were recorded with ("history", "module:attr")

    def __post_init__(self) -> None:
        names = [p.name for p in self.predicates]
        if not names:
            raise ParseError("an abstraction needs at least one predicate")
        if len(set(names)) != len(names):
            raise ParseError(f"duplicate predicate names in {names}")
        reserved = {"src", "dst", "changed", "it", "unsafe", "viol"}
        if reserved & set(names):
            raise ParseError(f"predicate names {sorted(reserved & set(names))} are reserved")
        if self.unseen not in UNSEEN_POLICIES:
            raise ParseError(f"unseen policy {self.unseen!r}: expected one of {', '.join(UNSEEN_POLICIES)}")
        if isinstance(self.unsafe, str):
            self.unsafe = Expr(self.unsafe)
        self.infeasible = [Expr(c) if isinstance(c, str) else c for c in self.infeasible]
        self.labels = {k: Expr(v) if isinstance(v, str) else v for k, v in self.labels.items()}
        if isinstance(self.valid_transition, str) and self.valid_transition not in ("any", "hamming1"):
            self.valid_transition = Expr(self.valid_transition)
        for what, e in self._conditions():  # truth values only (a == 'x' is never true), an unsafe names a bit
            check_condition(e.tree, e.text, what)
        for e in self._bit_exprs():
            unknown = [n for n in e.names if n not in names]
            if unknown:
                raise ParseError(f"expression {e.text!r} names unknown predicate(s) {unknown}")
        if isinstance(self.valid_transition, Expr):
            unknown = [n for n in self.valid_transition.names if n not in ("src", "dst", "changed")]
            if unknown:
                raise ParseError(
                    f"valid_transition {self.valid_transition.text!r} may use only src, dst, changed; got {unknown}"
                )
        if self.terminal is not None and (not isinstance(self.terminal, str) or not self.terminal
                                          or set(self.terminal) <= {"0", "1"}):
            raise ParseError(f"terminal state name {self.terminal!r} must be a non-empty, non-bit string")
        self._feasible_cache: dict[str, bool] = {}
        self._state_set = set(self.states) if self.states is not None else None

    def _conditions(self) -> list[tuple[str, Expr]]:
        out = [("infeasible", e) for e in self.infeasible if isinstance(e, Expr)]
        out += [(f"label {k!r}", e) for k, e in self.labels.items() if isinstance(e, Expr)]
        return out + ([("unsafe", self.unsafe)] if isinstance(self.unsafe, Expr) else [])

    def _bit_exprs(self) -> list[Expr]:
        return [e for _, e in self._conditions()]

    # --- the map s_P ------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [p.name for p in self.predicates]

    @property
    def width(self) -> int:
        return len(self.predicates)

    def bits(self, state: Any) -> str:
        """``s_P(v)`` without the feasibility check."""
        return "".join("1" if p(state) else "0" for p in self.predicates)

    def abstract(self, state: Any) -> str:
        """``s_P(v)`` as a bit string; InputError when the state is infeasible or not whitelisted."""
        b = self.bits(state)
        self.check_state(b)
        return b

    def abstractor(self) -> Callable[[Any], str]:
        """A function equal to :meth:`abstract` (same bits, same errors), built for volume.

        Expression predicates call their compiled closures directly (no per-call dispatch through
        :class:`Predicate`); bit strings already checked are remembered, so ``check_state`` runs
        once per distinct abstract state.
        """
        steps = [(p, p.fn._fn if isinstance(p.fn, Expr) else None) for p in self.predicates]
        checked: set[str] = set()

        def run(state: Any) -> str:
            out = []
            for p, fn in steps:
                if fn is None:
                    out.append("1" if p(state) else "0")
                    continue
                try:
                    reset_budget()
                    v = fn((state,))
                except InputError as exc:
                    raise InputError(f"predicate {p.name!r}: {exc}") from None
                except Exception as exc:  # noqa: BLE001 - as Predicate.__call__
                    raise InputError(f"predicate {p.name!r} failed: {type(exc).__name__}: {exc}") from None
                out.append("1" if (v if v is True or v is False else _truth(p.name, v)) else "0")
            b = "".join(out)
            if b not in checked:
                self.check_state(b)
                checked.add(b)
            return b

        return run

    def check_state(self, b: str) -> None:
        """InputError naming ``b`` when it is not a known-feasible abstract state."""
        if self.terminal is not None and b == self.terminal:
            return
        if len(b) != self.width or set(b) - {"0", "1"}:
            raise InputError(f"unknown state {b!r}: expected {self.width} bits (predicates {', '.join(self.names)})")
        if self._state_set is not None and b not in self._state_set:
            raise InputError(f"unknown state {b!r}: not among the spec's {len(self._state_set)} states")
        if not self.feasible(b):
            raise InputError(f"state {b!r} is infeasible by the spec's constraints")

    def locate(self, state: Any, known: Sequence[str], risk: np.ndarray | None = None) -> tuple[int, str]:
        """Model state index for a concrete ``state`` at run time, applying the ``unseen`` policy.

        Returns ``(index, bits)``. A state the model never saw (or an infeasible one) is resolved by
        :func:`resolve_state` with this abstraction's ``unseen`` policy; ``"error"`` raises InputError.
        """
        b = self.bits(state)
        return resolve_state(b, known, self.unseen, risk), b

    def state_space(self, limit: int = 1 << 16) -> list[str]:
        """All feasible abstract states: the 2^n valuations minus the infeasible ones (and, when the
        spec lists ``states``, only those). InputError when 2^n exceeds ``limit``."""
        if self._state_set is not None:
            return [s for s in self.states or [] if self.feasible(s)]
        if 2**self.width > limit:
            raise InputError(f"{2 ** self.width} valuations exceed the limit {limit}")
        return [b for b in (format(i, f"0{self.width}b") for i in range(2**self.width)) if self.feasible(b)]

    def valuation(self, b: str) -> dict[str, bool]:
        """Predicate name -> truth value of abstract state ``b``."""
        return {n: c == "1" for n, c in zip(self.names, b)}

    def feasible(self, b: str) -> bool:
        """False when an ``infeasible`` constraint holds at ``b`` (cached)."""
        hit = self._feasible_cache.get(b)
        if hit is None:
            val = self.valuation(b)
            hit = not any(_bits_eval(c, b, val) for c in self.infeasible)
            self._feasible_cache[b] = hit
        return hit

    def is_valid(self, a: str, b: str) -> bool:
        """``valid_transition(a, b)``, with the terminal-state rules applied first."""
        if self.terminal is not None:
            if a == self.terminal:
                return b == self.terminal
            if b == self.terminal:
                return True
        vt = self.valid_transition
        if vt == "any":
            return True
        if vt == "hamming1":
            return hamming1(a, b)
        if isinstance(vt, Expr):
            changed = sum(x != y for x, y in zip(a, b))
            return _truth(vt.text, vt.evaluate({"src": self.valuation(a), "dst": self.valuation(b), "changed": changed}))
        return _truth("valid_transition", vt(a, b))

    def valid_matrix(self, names: Sequence[str]) -> np.ndarray:
        """Boolean matrix V[i, j] = valid_transition(names[i], names[j]); vectorised for built-ins."""
        n = len(names)
        term = np.array([s == self.terminal for s in names], dtype=bool) if self.terminal else np.zeros(n, bool)
        vt = self.valid_transition
        if vt in ("any", "hamming1"):
            if vt == "any":
                v = np.ones((n, n), dtype=bool)
            else:
                bits = np.array([[c == "1" for c in s] if not t else [False] * self.width
                                 for s, t in zip(names, term)], dtype=np.int8).reshape(n, self.width)
                dist = (bits[:, None, :] != bits[None, :, :]).sum(axis=2)
                v = dist <= 1
            if term.any():
                v[:, term] = True
                v[term, :] = False
                v[np.ix_(term, term)] = np.eye(int(term.sum()), dtype=bool)
            return v
        return np.array([[self.is_valid(a, b) for b in names] for a in names], dtype=bool).reshape(n, n)

    def label_vector(self, names: Sequence[str], label: str) -> np.ndarray:
        """Truth of a predicate name, ``unsafe`` or a spec label at each named abstract state."""
        out = np.zeros(len(names), dtype=bool)
        if label in self.names:
            k = self.names.index(label)
            for i, s in enumerate(names):
                out[i] = s != self.terminal and s[k] == "1"
            return out
        cond = self.unsafe if label == "unsafe" else self.labels.get(label)
        if cond is None:
            if label == "unsafe":
                return out
            raise InputError(f"unknown label {label!r}")
        for i, s in enumerate(names):
            if s != self.terminal:
                out[i] = _bits_eval(cond, s, self.valuation(s))
        return out

    def all_labels(self, names: Sequence[str]) -> dict[str, np.ndarray]:
        """Every predicate as a label, plus ``unsafe``, the spec's labels and the terminal state."""
        d = {p: self.label_vector(names, p) for p in self.names}
        for extra in self.labels:
            d[extra] = self.label_vector(names, extra)
        d["unsafe"] = self.label_vector(names, "unsafe")
        if self.terminal:
            d[self.terminal] = np.array([s == self.terminal for s in names], dtype=bool)
        return d

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary stored in a learned model's meta."""

        def txt(x: Any) -> Any:
            return x.text if isinstance(x, Expr) else (x if isinstance(x, str) or x is None else "<python>")

        return {
            "name": self.name,
            "predicates": [{"name": p.name, "expr": txt(p.fn)} for p in self.predicates],
            "valid_transition": txt(self.valid_transition),
            "infeasible": [txt(c) for c in self.infeasible],
            "unsafe": txt(self.unsafe),
            "labels": {k: txt(v) for k, v in self.labels.items()},
            "terminal": self.terminal,
            "unseen": self.unseen,
            "states": self.states,
            "state": self.state_fn,
        }

    # --- construction from a spec file ------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: Mapping[str, Any], source: str = "spec") -> Abstraction:
        if not isinstance(d, Mapping):
            raise ParseError(f"{source}: a spec must be a mapping (YAML/JSON object)")
        known = {"name", "predicates", "valid_transition", "infeasible", "unsafe", "labels", "terminal",
                 "unseen", "states", "alpha", "epsilon", "delta", "target", "description", "state"}
        extra = set(d) - known
        if extra:
            raise ParseError(f"{source}: unknown key(s) {sorted(extra)} (known: {', '.join(sorted(known))})")
        raw = d.get("predicates")
        if isinstance(raw, Mapping):
            items = list(raw.items())
        elif isinstance(raw, list):
            try:
                items = [(p["name"], p["expr"]) for p in raw]
            except (TypeError, KeyError):
                raise ParseError(f"{source}: each predicate in a list needs 'name' and 'expr'") from None
            extra = sorted({str(k) for p in raw for k in p} - {"name", "expr", "description"})
            if extra:  # an "exprs:" typo must not leave a predicate defined by a stale or empty expression
                raise ParseError(f"{source}: unknown key(s) {extra} in a predicate (known: name, expr, description)")
        else:
            raise ParseError(f"{source}: 'predicates' must be a mapping name -> expression (or a list)")
        try:
            preds = [Predicate.of(str(k), v if isinstance(v, str) else _bad(source, k)) for k, v in items]
            infeasible = d.get("infeasible") or []
            if isinstance(infeasible, str):
                infeasible = [infeasible]
            labels = d.get("labels") or {}
            if not isinstance(labels, Mapping):
                raise ParseError(f"{source}: 'labels' must be a mapping name -> expression")
            _texts(source, "infeasible", infeasible)
            _texts(source, "labels", list(labels.values()))
            _texts(source, "unsafe", [d["unsafe"]] if d.get("unsafe") is not None else [])
            _texts(source, "valid_transition", [d["valid_transition"]] if "valid_transition" in d else [])
            for k in ("name", "unseen", "description"):
                if k in d and not isinstance(d[k], str):
                    raise ParseError(f"{source}: {k!r} must be a string, got {type(d[k]).__name__}")
            states = d.get("states")
            if states is not None and not (isinstance(states, list) and all(isinstance(s, str) for s in states)):
                raise ParseError(f"{source}: 'states' must be a list of bit strings")
            options = {k: d[k] for k in ("alpha", "epsilon", "delta", "target") if k in d}
            state_fn = d.get("state")
            if state_fn is not None and not isinstance(state_fn, str):
                raise ParseError(f"{source}: 'state' must be 'history' or 'package.module:attr'")
            for k in ("alpha", "epsilon", "delta"):
                if k in options and (isinstance(options[k], bool) or not isinstance(options[k], (int, float))):
                    raise ParseError(f"{source}: {k!r} must be a number")
            return cls(
                predicates=preds,
                valid_transition=d.get("valid_transition", "any"),
                infeasible=[Expr(str(c)) for c in infeasible],
                unsafe=Expr(str(d["unsafe"])) if d.get("unsafe") is not None else None,
                labels={str(k): Expr(str(v)) for k, v in labels.items()},
                terminal=d.get("terminal"),
                unseen=str(d.get("unseen", DEFAULT_UNSEEN)),
                states=states,
                name=str(d.get("name", "")),
                options=options,
                state_fn=state_fn or None,
            )
        except ParseError as exc:
            msg = str(exc)
            raise ParseError(msg if msg.startswith(source) else f"{source}: {msg}") from None


def _texts(source: str, key: str, values: Any) -> None:
    """Each expression of ``key`` is written as text: ``unsafe: false`` (a YAML bool), a list or a number is not
    turned into the text of its Python repr (``str(False)`` would be the expression ``False``: never unsafe)."""
    if not isinstance(values, list):
        raise ParseError(f"{source}: {key!r} must be a list of expression strings")
    for v in values:
        if not isinstance(v, str):
            raise ParseError(f"{source}: {key!r} needs expression strings, got {type(v).__name__} {str(v)[:40]!r}")


def _bad(source: str, k: Any) -> str:
    raise ParseError(f"{source}: predicate {k!r} must be an expression string")


def _bits_eval(c: Expr | BitsFn, b: str, val: Mapping[str, bool]) -> bool:
    """An ``unsafe``/label/``infeasible`` condition at abstract state ``b``: a Boolean, or an error naming it
    (``unsafe: "a if b else None"`` is not "safe" where it gives None)."""
    v = c.evaluate(val) if isinstance(c, Expr) else c(b)
    return _truth(c.text if isinstance(c, Expr) else getattr(c, "__name__", "condition"), v)


def load_spec(path: str | Path) -> Abstraction:
    """Read an abstraction spec from a YAML (``.yaml``/``.yml``) or JSON file; ParseError if bad."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read spec {path}: {exc.strerror}") from None
    d = read_document(text, str(path), yaml=p.suffix.lower() in (".yaml", ".yml"))
    return Abstraction.from_dict(d, source=f"spec {p.name}")


def abstract_all(abstraction: Abstraction, states: Iterable[Any]) -> list[str]:
    """Abstract many concrete states (helper for callers holding plain lists)."""
    return [abstraction.abstract(s) for s in states]
