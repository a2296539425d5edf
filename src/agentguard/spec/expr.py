"""A small, safe expression language for predicates written in spec files.

Expressions are Python *syntax* (parsed with :mod:`ast`) restricted to a whitelist and evaluated by
an interpreter over the syntax tree: nothing is ever compiled or executed as code, so a spec file
cannot call functions, import modules or reach dunder attributes.

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
an unknown name or missing field raises :class:`InputError` when it is evaluated, naming it.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..core.errors import InputError, ParseError

__all__ = [
    "Expr",
    "compile_expr",
]

_MISSING = object()


class _Scope:
    """Name lookup chain: innermost mapping first."""

    __slots__ = ("frames",)

    def __init__(self, frames: list[Any]):
        self.frames = frames

    def push(self, frame: Any) -> _Scope:
        return _Scope([frame, *self.frames])

    def lookup(self, name: str) -> Any:
        for f in self.frames:
            v = _field(f, name, _MISSING)
            if v is not _MISSING:
                return v
        raise InputError(f"unknown name {name!r}")


def _field(obj: Any, name: Any, default: Any = _MISSING) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    if isinstance(name, str) and not name.startswith("_") and not isinstance(obj, (str, bytes)):
        return getattr(obj, name, default)
    return default


def _items(coll: Any) -> list[Any]:
    if coll is None:
        return []
    if isinstance(coll, Mapping):
        return list(coll.values())
    if isinstance(coll, (str, bytes)):
        raise InputError("exists/forall/count need a list of items, got a string")
    try:
        return list(coll)
    except TypeError:
        raise InputError(f"exists/forall/count need a list of items, got {type(coll).__name__}") from None


def _as_list(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple, set, frozenset)):
        return list(x)
    return [x]


def _any_of(x: Any, values: Any) -> bool:
    vals = _as_list(values)
    return any(v in vals for v in _as_list(x))


def _all_of(xs: Any, values: Any) -> bool:
    have = _as_list(xs)
    return all(v in have for v in _as_list(values))


def _has(x: Any, key: Any) -> bool:
    return _field(x, key) is not _MISSING


def _get(x: Any, key: Any, default: Any = None) -> Any:
    v = _field(x, key)
    return default if v is _MISSING else v


def _lower(s: Any) -> Any:
    return s.lower() if isinstance(s, str) else s


#: plain helpers (arguments evaluated normally); exists/forall/count are special forms.
HELPERS: dict[str, Callable[..., Any]] = {
    "any_of": _any_of,
    "all_of": _all_of,
    "has": _has,
    "get": _get,
    "len": len,
    "abs": abs,
    "min": min,
    "max": max,
    "lower": _lower,
}
_QUANTIFIERS = ("exists", "forall", "count")

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}
_CMPOPS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.In: lambda a, b: _contains(b, a), ast.NotIn: lambda a, b: not _contains(b, a),
    ast.Is: operator.is_, ast.IsNot: operator.is_not,
}


def _contains(container: Any, item: Any) -> bool:
    if container is None:
        return False
    try:
        return item in container
    except TypeError:
        raise InputError(f"'in' needs a list or string on its right, got {type(container).__name__}") from None


def _check(node: ast.AST, text: str) -> None:
    """Reject any syntax outside the whitelist (ParseError naming the construct)."""
    allowed = (
        ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
        ast.BinOp, ast.Compare, ast.Name, ast.Load, ast.Store, ast.Constant, ast.List, ast.Tuple, ast.Set,
        ast.Attribute, ast.Subscript, ast.Call, ast.GeneratorExp, ast.ListComp, ast.comprehension,
        ast.IfExp, *(_BINOPS), *(_CMPOPS),
    )
    for sub in ast.walk(node):
        if not isinstance(sub, allowed):
            raise ParseError(f"expression {text!r}: {type(sub).__name__} is not allowed")
        if isinstance(sub, ast.Attribute) and sub.attr.startswith("_"):
            raise ParseError(f"expression {text!r}: attribute {sub.attr!r} is not allowed")
        if isinstance(sub, ast.Name) and sub.id.startswith("__"):
            raise ParseError(f"expression {text!r}: name {sub.id!r} is not allowed")
        if isinstance(sub, ast.Call):
            if not isinstance(sub.func, ast.Name) or sub.func.id not in (*HELPERS, *_QUANTIFIERS):
                fn = ast.unparse(sub.func)
                raise ParseError(
                    f"expression {text!r}: call of {fn!r} is not allowed "
                    f"(helpers: {', '.join(sorted((*HELPERS, *_QUANTIFIERS)))})"
                )
            if sub.keywords:
                raise ParseError(f"expression {text!r}: keyword arguments are not allowed")
        if isinstance(sub, ast.comprehension) and (sub.is_async or not isinstance(sub.target, ast.Name)):
            raise ParseError(f"expression {text!r}: only 'for NAME in ...' comprehensions are allowed")


class Expr:
    """A compiled, whitelisted expression; call ``expr.evaluate(scope_mapping)``."""

    __slots__ = ("names", "text", "tree")

    def __init__(self, text: str):
        if not isinstance(text, str) or not text.strip():
            raise ParseError("empty expression")
        self.text = text.strip()
        try:
            self.tree = ast.parse(self.text, mode="eval")
        except SyntaxError as exc:
            raise ParseError(f"expression {self.text!r} does not parse: {exc.msg}") from None
        _check(self.tree, self.text)
        self.names = sorted({n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name)}
                            - set(HELPERS) - set(_QUANTIFIERS))

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def evaluate(self, scope: Any, extra: Mapping[str, Any] | None = None) -> Any:
        frames = [extra, scope] if extra else [scope]
        return _eval(self.tree.body, _Scope(frames))

    __call__ = evaluate


def compile_expr(text: str) -> Expr:
    """Parse and whitelist-check ``text``; ParseError when it is not in the language."""
    return Expr(text)


def _is_array(v: Any) -> bool:
    return isinstance(v, np.ndarray)


def _eval(node: ast.AST, sc: _Scope) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in ("true", "false"):  # JSON-style spellings
            return node.id == "true"
        return sc.lookup(node.id)
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        vals: list[Any] = []
        for v in node.values:
            x = _eval(v, sc)
            if not _is_array(x) and not any(_is_array(y) for y in vals):
                if is_and and not x:
                    return False
                if not is_and and x:
                    return True
            vals.append(x)
        if any(_is_array(v) for v in vals):
            fn = np.logical_and if is_and else np.logical_or
            out = np.asarray(vals[0], dtype=bool)
            for v in vals[1:]:
                out = fn(out, np.asarray(v, dtype=bool))
            return out
        return bool(vals[-1]) if vals else is_and
    if isinstance(node, ast.UnaryOp):
        x = _eval(node.operand, sc)
        if isinstance(node.op, ast.Not):
            return np.logical_not(x) if _is_array(x) else not x
        if isinstance(node.op, ast.USub):
            return -x
        return +x
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, sc), _eval(node.right, sc)
        try:
            return _BINOPS[type(node.op)](a, b)
        except (TypeError, ZeroDivisionError) as exc:
            raise InputError(f"arithmetic failed: {exc}") from None
    if isinstance(node, ast.Compare):
        left = _eval(node.left, sc)
        result: Any = True
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, sc)
            try:
                r = _CMPOPS[type(op)](left, right)
            except TypeError:
                raise InputError(
                    f"cannot compare {type(left).__name__} with {type(right).__name__}"
                ) from None
            if _is_array(r) or _is_array(result):
                result = np.logical_and(result, r)
            elif not r:
                return False
            left = right
        return result
    if isinstance(node, ast.IfExp):
        return _eval(node.body, sc) if _eval(node.test, sc) else _eval(node.orelse, sc)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_eval(e, sc) for e in node.elts]
    if isinstance(node, ast.Set):
        return {_eval(e, sc) for e in node.elts}
    if isinstance(node, ast.Attribute):
        obj = _eval(node.value, sc)
        v = _field(obj, node.attr)
        if v is _MISSING:
            raise InputError(f"missing field {node.attr!r} in {ast.unparse(node.value)}")
        return v
    if isinstance(node, ast.Subscript):
        obj = _eval(node.value, sc)
        key = _eval(node.slice, sc)
        try:
            if isinstance(obj, Mapping):
                return obj[key]
            if isinstance(obj, (list, tuple, str)) and isinstance(key, int):
                return obj[key]
        except (KeyError, IndexError):
            pass
        raise InputError(f"missing item {key!r} in {ast.unparse(node.value)}")
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
        return list(_comprehend(node, sc))
    if isinstance(node, ast.Call):
        name = node.func.id  # type: ignore[attr-defined]  # whitelisted: always a Name
        if name in _QUANTIFIERS:
            return _quantifier(name, node, sc)
        args = [_eval(a, sc) for a in node.args]
        try:
            return HELPERS[name](*args)
        except InputError:
            raise
        except (TypeError, ValueError) as exc:
            raise InputError(f"{name}(...) failed: {exc}") from None
    raise ParseError(f"unsupported syntax {type(node).__name__}")  # pragma: no cover - whitelisted



def _comprehend(node: ast.GeneratorExp | ast.ListComp, sc: _Scope):
    def rec(i: int, scope: _Scope):
        if i == len(node.generators):
            yield _eval(node.elt, scope)
            return
        gen = node.generators[i]
        for item in _items(_eval(gen.iter, scope)):
            inner = scope.push({gen.target.id: item})  # type: ignore[attr-defined]
            if all(_eval(cond, inner) for cond in gen.ifs):
                yield from rec(i + 1, inner)

    return rec(0, sc)


def _quantifier(name: str, node: ast.Call, sc: _Scope) -> Any:
    args = node.args
    if len(args) == 1:
        vals = [bool(v) for v in _items(_eval(args[0], sc))]
    elif len(args) == 2:
        vals = []
        for item in _items(_eval(args[0], sc)):
            frame = {"it": item}
            inner = sc.push(frame).push(item) if isinstance(item, Mapping) else sc.push(frame)
            try:
                vals.append(bool(_eval(args[1], inner)))
            except InputError:
                # an item without the field does not satisfy the condition (AI2-THOR objects
                # carry different fields per type); forall treats it as a counterexample.
                vals.append(False)
    else:
        raise InputError(f"{name} takes (collection, condition) or (generator)")
    if name == "exists":
        return any(vals)
    if name == "forall":
        return all(vals)
    return sum(vals)
