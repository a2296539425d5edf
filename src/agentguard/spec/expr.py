"""A small, safe expression language for predicates written in spec files.

Expressions are Python *syntax* (parsed with :mod:`ast`) restricted to a whitelist. Each whitelisted
tree is compiled once into a tree of Python closures, one per node, built from a fixed table of node
kinds (:func:`_compile`); evaluation calls the closures, with no per-node dispatch (issue 14: the
former tree walk cost about 119 us per 6-object state). Nothing is ever compiled to Python
bytecode or executed as code (no ``eval``/``exec``/``compile``), so a spec file cannot call
functions, import modules or reach dunder attributes. The tree-walking reference interpreter stays
as :meth:`Expr.interpret` (module :mod:`agentguard.spec._expr_interp`); a property-based test checks
that the two agree on generated expressions and states.

Allowed:
  * literals (numbers, strings, True/False/None), lists, tuples, sets;
  * names (looked up in the evaluation scope: the concrete state's top-level keys, comprehension
    variables, and inside ``exists(coll, cond)`` the fields of the current item);
  * ``and``, ``or``, ``not``, unary ``-``, ``+ - * / // %``, comparisons ``== != < <= > >=``,
    ``in``, ``not in``, ``is None`` / ``is not None``; ``a if c else b``;
  * ``x.field`` and ``x["field"]`` / ``x[0]`` (mappings are read by key; other objects by attribute,
    never a name starting with ``_``);
  * generator expressions / comprehensions (``exists(o.isToggled for o in objects)``);
  * calls to the named helpers in :data:`HELPERS` only.

Helpers (``coll`` is a list of items, ``cond`` an expression evaluated once per item with the
item's fields as names and the item itself as ``it``):
  ``exists(coll, cond)``, ``forall(coll, cond)``, ``count(coll, cond)`` (also ``exists(genexp)`` ...),
  ``any_of(x, values)`` (x, or any element of list x, is in values), ``all_of(xs, values)``,
  ``has(x, key)``, ``get(x, key, default)``, ``len``, ``abs``, ``min``, ``max``, ``lower``.

Boolean operators also work element-wise on numpy arrays (``and``/``or``/``not`` become
``logical_and``/``logical_or``/``logical_not``), so one formula over label names can be evaluated
for every state of a model at once.

Errors: syntax outside the whitelist raises :class:`ParseError` when the expression is compiled;
an unknown name or missing field raises :class:`InputError` when it is evaluated, naming it. Inside
``exists``/``forall``/``count`` a missing field (or a ``None`` ordered against a number) means the item does not
satisfy the condition; every other error (text compared with a number, arithmetic on text) propagates, so a
predicate whose evaluation fails is never read as False (fail closed).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..core.errors import InputError, ParseError
from ._expr_base import (_BINOPS, _CMPOPS, _MISSING, _QUANTIFIERS, HELPERS, MissingField, _check, _field, _item, _items,
                         reset_budget)

__all__ = [
    "Expr",
    "compile_expr",
]

#: a compiled node: frames (innermost scope first) -> value
Fn = Callable[[tuple[Any, ...]], Any]


class Expr:
    """A whitelisted expression, compiled once; call ``expr.evaluate(scope_mapping)``.

    ``evaluate`` runs the closures compiled from the tree (no per-node dispatch per call);
    ``interpret`` runs the reference tree interpreter (:mod:`agentguard.spec._expr_interp`). Both give
    the same value or raise the same kind of error on every input (tested on generated
    expressions and states).
    """

    __slots__ = ("_fn", "names", "text", "tree")

    def __init__(self, text: str):
        if not isinstance(text, str) or not text.strip():
            raise ParseError("empty expression")
        self.text = text.strip()
        try:
            self.tree = ast.parse(self.text, mode="eval")
        except SyntaxError as exc:
            raise ParseError(f"expression {self.text!r} does not parse: {exc.msg}") from None
        except (ValueError, RecursionError, MemoryError):
            raise ParseError(f"expression {self.text[:60]!r}... is too deeply nested or malformed") from None
        _check(self.tree, self.text)
        self.names = sorted({n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name)}
                            - set(HELPERS) - set(_QUANTIFIERS))
        try:
            self._fn = _compile(self.tree.body)
        except RecursionError:
            raise ParseError(f"expression {self.text[:60]!r}... is too deeply nested") from None

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def __getstate__(self) -> str:  # the closures are rebuilt from the text
        return self.text

    def __setstate__(self, text: str) -> None:
        self.__init__(text)  # type: ignore[misc]

    def evaluate(self, scope: Any, extra: Mapping[str, Any] | None = None) -> Any:
        reset_budget()
        return self._fn((extra, scope) if extra else (scope,))

    __call__ = evaluate

    def interpret(self, scope: Any, extra: Mapping[str, Any] | None = None) -> Any:
        """The same value as :meth:`evaluate`, by walking the tree (the reference semantics)."""
        from ._expr_interp import _eval, _Scope

        reset_budget()
        return _eval(self.tree.body, _Scope([extra, scope] if extra else [scope]))


def compile_expr(text: str) -> Expr:
    """Parse and whitelist-check ``text``; ParseError when it is not in the language."""
    return Expr(text)


# --- the closure compiler -------------------------------------------------------------------------
# Each node becomes one Python closure over its compiled children, built once per expression. The
# semantics are those of the reference interpreter (_expr_interp._eval) node for node; where the
# interpreter does, exists/forall stop at the first decisive item (evaluation has no side effects); inside a
# condition only a MissingField counts as False, every other error propagates.


_ND = np.ndarray
_FAST_CMP = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.Is, ast.IsNot)


def _is_array(v: Any) -> bool:
    return isinstance(v, np.ndarray)


def _compile(node: ast.AST) -> Fn:
    kind = type(node)
    if kind is ast.Constant:
        value = node.value  # type: ignore[attr-defined]
        return lambda fr: value
    if kind is ast.Name:
        return _c_name(node.id)  # type: ignore[attr-defined]
    maker = _MAKERS.get(kind)
    if maker is None:  # pragma: no cover - the whitelist admits nothing else
        raise ParseError(f"unsupported syntax {kind.__name__}")
    return maker(node)


def _c_name(name: str) -> Fn:
    if name in ("true", "false"):  # JSON-style spellings
        value = name == "true"
        return lambda fr: value

    def lookup(fr: tuple[Any, ...]) -> Any:
        f = fr[0]
        if type(f) is dict:  # fast path: the innermost frame (an item, or the state) is a dict
            v = f.get(name, _MISSING)
            if v is not _MISSING:
                return v
        for f in fr:
            v = f.get(name, _MISSING) if type(f) is dict else _field(f, name, _MISSING)
            if v is not _MISSING:
                return v
        raise MissingField(f"unknown name {name!r}")

    return lookup


def _c_boolop(node: ast.BoolOp) -> Fn:
    parts = [_compile(v) for v in node.values]
    is_and = isinstance(node.op, ast.And)

    def arrays(vals: list[Any]) -> Any:
        fn = np.logical_and if is_and else np.logical_or
        out = np.asarray(vals[0], dtype=bool)
        for v in vals[1:]:
            out = fn(out, np.asarray(v, dtype=bool))
        return out

    if len(parts) == 2:  # the common case, without the list
        first, second = parts

        def two(fr: tuple[Any, ...]) -> Any:
            x = first(fr)
            if isinstance(x, _ND):
                return arrays([x, second(fr)])
            if (not x) if is_and else x:
                return not is_and
            y = second(fr)
            if isinstance(y, _ND):
                return arrays([x, y])
            return True if y else False

        return two

    def run(fr: tuple[Any, ...]) -> Any:
        vals: list[Any] = []
        seen_array = False
        for p in parts:
            x = p(fr)
            if _is_array(x):
                seen_array = True
            elif not seen_array:
                if is_and and not x:
                    return False
                if not is_and and x:
                    return True
            vals.append(x)
        if seen_array:
            return arrays(vals)
        return bool(vals[-1]) if vals else is_and

    return run


def _c_unary(node: ast.UnaryOp) -> Fn:
    arg = _compile(node.operand)
    if isinstance(node.op, ast.Not):
        return lambda fr: (np.logical_not(x) if _is_array(x := arg(fr)) else not x)
    neg = isinstance(node.op, ast.USub)

    def sign(fr: tuple[Any, ...]) -> Any:
        x = arg(fr)
        try:
            return -x if neg else +x
        except TypeError:
            raise InputError(f"bad operand for unary {'-' if neg else '+'}: {type(x).__name__}") from None

    return sign


def _c_binop(node: ast.BinOp) -> Fn:
    left, right, op = _compile(node.left), _compile(node.right), _BINOPS[type(node.op)]

    def run(fr: tuple[Any, ...]) -> Any:
        a, b = left(fr), right(fr)
        try:
            return op(a, b)
        except (TypeError, ZeroDivisionError) as exc:
            raise InputError(f"arithmetic failed: {exc}") from None

    return run


def _c_compare(node: ast.Compare) -> Fn:
    first = _compile(node.left)
    chain = [(_CMPOPS[type(op)], _compile(comp)) for op, comp in zip(node.ops, node.comparators)]

    def fail(a: Any, b: Any) -> InputError:
        return InputError(f"cannot compare {type(a).__name__} with {type(b).__name__}")

    if len(chain) == 1:  # the common case: one comparison, no loop
        (op, second), = chain

        right = node.comparators[0]
        if isinstance(right, ast.Constant) and type(node.ops[0]) in _FAST_CMP:
            const = right.value  # `field == "Fork"`, `"Microwave" in x`: no call for the constant

            def one_const(fr: tuple[Any, ...]) -> Any:
                a = first(fr)
                try:
                    r = op(a, const)
                except TypeError:
                    raise fail(a, const) from None
                if isinstance(r, _ND):
                    return np.logical_and(True, r)
                return True if r else False

            return one_const

        def one(fr: tuple[Any, ...]) -> Any:
            a = first(fr)
            b = second(fr)
            try:
                r = op(a, b)
            except TypeError:
                raise fail(a, b) from None
            if isinstance(r, _ND):
                return np.logical_and(True, r)
            return True if r else False

        return one

    def run(fr: tuple[Any, ...]) -> Any:
        left = first(fr)
        result: Any = True
        for op, comp in chain:
            right = comp(fr)
            try:
                r = op(left, right)
            except TypeError:
                raise fail(left, right) from None
            if _is_array(r) or _is_array(result):
                result = np.logical_and(result, r)
            elif not r:
                return False
            left = right
        return result

    return run


def _c_ifexp(node: ast.IfExp) -> Fn:
    test, body, orelse = _compile(node.test), _compile(node.body), _compile(node.orelse)
    return lambda fr: body(fr) if test(fr) else orelse(fr)


def _c_sequence(node: ast.List | ast.Tuple) -> Fn:
    elts = [_compile(e) for e in node.elts]
    return lambda fr: [e(fr) for e in elts]


def _c_set(node: ast.Set) -> Fn:
    elts = [_compile(e) for e in node.elts]

    def run(fr: tuple[Any, ...]) -> Any:
        vals = [e(fr) for e in elts]
        try:
            return set(vals)
        except TypeError:
            raise InputError("a set literal needs hashable items") from None

    return run


def _c_attribute(node: ast.Attribute) -> Fn:
    obj_fn, attr, where = _compile(node.value), node.attr, ast.unparse(node.value)

    def run(fr: tuple[Any, ...]) -> Any:
        obj = obj_fn(fr)
        v = obj.get(attr, _MISSING) if type(obj) is dict else _field(obj, attr)
        if v is _MISSING:
            raise MissingField(f"missing field {attr!r} in {where}")
        return v

    return run


def _c_subscript(node: ast.Subscript) -> Fn:
    obj_fn, key_fn, where = _compile(node.value), _compile(node.slice), ast.unparse(node.value)

    def run(fr: tuple[Any, ...]) -> Any:
        return _item(obj_fn(fr), key_fn(fr), where)

    return run


def _c_comprehension(node: ast.GeneratorExp | ast.ListComp) -> Fn:
    elt = _compile(node.elt)
    gens = [(g.target.id, _compile(g.iter), [_compile(c) for c in g.ifs])  # type: ignore[attr-defined]
            for g in node.generators]

    def rec(i: int, fr: tuple[Any, ...], out: list[Any]) -> None:
        if i == len(gens):
            out.append(elt(fr))
            return
        target, it, ifs = gens[i]
        for item in _items(it(fr)):
            inner = ({target: item}, *fr)
            if all(c(inner) for c in ifs):
                rec(i + 1, inner, out)

    def run(fr: tuple[Any, ...]) -> list[Any]:
        out: list[Any] = []
        rec(0, fr, out)
        return out

    return run


def _c_call(node: ast.Call) -> Fn:
    name = node.func.id  # type: ignore[attr-defined]  # whitelisted: always a Name
    if name in _QUANTIFIERS:
        return _c_quantifier(name, node)
    args = [_compile(a) for a in node.args]
    helper = HELPERS[name]

    def run(fr: tuple[Any, ...]) -> Any:
        vals = [a(fr) for a in args]
        try:
            return helper(*vals)
        except InputError:
            raise
        except (TypeError, ValueError) as exc:
            raise InputError(f"{name}(...) failed: {exc}") from None

    return run


def _c_quantifier(name: str, node: ast.Call) -> Fn:
    if len(node.args) not in (1, 2):
        def bad(fr: tuple[Any, ...]) -> Any:
            raise InputError(f"{name} takes (collection, condition) or (generator)")
        return bad
    coll = _compile(node.args[0])
    if len(node.args) == 1:
        agg = {"exists": any, "forall": all, "count": sum}[name]
        return lambda fr: agg([bool(v) for v in _items(coll(fr))])
    cond = _compile(node.args[1])
    # The frame {"it": item} can only answer the name `it`: when the condition never names `it`,
    # leaving it out changes no lookup.
    uses_it = any(isinstance(n, ast.Name) and n.id == "it" for n in ast.walk(node.args[1]))

    def truth(item: Any, fr: tuple[Any, ...]) -> bool:
        # an item without the field does not satisfy the condition (AI2-THOR objects carry
        # different fields per type); forall treats it as a counterexample.
        if type(item) is dict or isinstance(item, Mapping):
            inner = (item, {"it": item}, *fr) if uses_it else (item, *fr)
        else:
            inner = ({"it": item}, *fr) if uses_it else fr
        try:
            return True if cond(inner) else False
        except MissingField:  # only an absence; any other error is the spec's or the data's: fail closed
            return False

    if name == "count":
        return lambda fr: sum([truth(item, fr) for item in _items(coll(fr))])
    want = name == "exists"  # exists stops at the first True, forall at the first False

    def decide(fr: tuple[Any, ...]) -> bool:
        for item in _items(coll(fr)):
            if truth(item, fr) is want:
                return want
        return not want

    return decide


_MAKERS: dict[type, Callable[[Any], Fn]] = {
    ast.BoolOp: _c_boolop, ast.UnaryOp: _c_unary, ast.BinOp: _c_binop, ast.Compare: _c_compare,
    ast.IfExp: _c_ifexp, ast.List: _c_sequence, ast.Tuple: _c_sequence, ast.Set: _c_set,
    ast.Attribute: _c_attribute, ast.Subscript: _c_subscript, ast.GeneratorExp: _c_comprehension,
    ast.ListComp: _c_comprehension, ast.Call: _c_call,
}
