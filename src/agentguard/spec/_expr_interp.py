"""The reference interpreter of the expression language (a walk over the syntax tree per evaluation).

:class:`~agentguard.spec.expr.Expr` evaluates through closures compiled once from the tree; this
interpreter is the executable definition of the semantics they must reproduce
(``Expr.interpret``; ``tests/spec/test_learn_spec.py`` compares the two on generated expressions and
states). Internal module.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core.errors import InputError, ParseError
from ._expr_base import _BINOPS, _CMPOPS, _MISSING, _QUANTIFIERS, HELPERS, MissingField, _field, _item, _items

__all__: list[str] = []


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
        raise MissingField(f"unknown name {name!r}")


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
        try:
            return -x if isinstance(node.op, ast.USub) else +x
        except TypeError:
            raise InputError(f"bad operand for unary {'-' if isinstance(node.op, ast.USub) else '+'}: "
                             f"{type(x).__name__}") from None
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
        try:
            return {_eval(e, sc) for e in node.elts}
        except TypeError:
            raise InputError("a set literal needs hashable items") from None
    if isinstance(node, ast.Attribute):
        obj = _eval(node.value, sc)
        v = _field(obj, node.attr)
        if v is _MISSING:
            raise MissingField(f"missing field {node.attr!r} in {ast.unparse(node.value)}")
        return v
    if isinstance(node, ast.Subscript):
        return _item(_eval(node.value, sc), _eval(node.slice, sc), ast.unparse(node.value))
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
            except MissingField:
                # an item without the field does not satisfy the condition (AI2-THOR objects
                # carry different fields per type); forall treats it as a counterexample.
                vals.append(False)
            if name != "count" and vals[-1] is (name == "exists"):
                break  # the first decisive item decides: later items are not evaluated
    else:
        raise InputError(f"{name} takes (collection, condition) or (generator)")
    if name == "exists":
        return any(vals)
    if name == "forall":
        return all(vals)
    return sum(vals)
