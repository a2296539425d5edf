"""The building blocks of the expression language shared by the compiler and the reference interpreter.

Field access, the helper functions, the operator tables and the whitelist check of
:mod:`agentguard.spec.expr` (internal: users import :class:`~agentguard.spec.expr.Expr`).
"""

from __future__ import annotations

import ast
import operator
import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..core.errors import InputError, ParseError

__all__ = ["MAX_ITEMS", "MAX_VALUE", "MissingField", "check_condition", "reset_budget"]

_MISSING = object()


class MissingField(InputError):
    """A name, field or item the value does not have (or a ``None`` where a number is ordered): inside
    ``exists``/``forall``/``count`` it means "this item does not satisfy the condition" (AI2-THOR objects carry
    different fields per type). Every other evaluation error (comparing text with a number, arithmetic on text,
    a helper failing) is not an absence: it propagates, and the predicate fails closed."""


def _field(obj: Any, name: Any, default: Any = _MISSING) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    if isinstance(name, str) and not name.startswith("_") and not isinstance(obj, (str, bytes)):
        return getattr(obj, name, default)
    return default


def _item(obj: Any, key: Any, where: str) -> Any:
    """``obj[key]`` for a mapping, or an int index into a list, tuple or string; else InputError."""
    try:
        if isinstance(obj, Mapping):
            return obj[key]
        if isinstance(obj, (list, tuple, str)) and isinstance(key, int):
            return obj[key]
    except (KeyError, IndexError, TypeError):
        pass
    raise MissingField(f"missing item {key!r} in {where}")


#: the most items one evaluation may visit in all its quantifiers and comprehensions together: nested ones multiply
#: (``[1 for a in objects for b in objects for c in objects]`` over 300 objects is 27 million), so past it the
#: evaluation fails closed (an InputError, never a bit) instead of running for minutes. The cells of every value
#: ``*`` and ``+`` build (counted deep), and the work of ``min``/``max``/``any_of``/``all_of``/``lower``, come from
#: the same budget (session 21: ``len([[1] * 100000 for a in [1] * 3000])`` took 2.3 GB, ``max([[1] * 100000] *
#: 100000)`` 19 s)
MAX_ITEMS = 250_000
#: the largest string, list or int (in digits) an arithmetic operator may build: ``"a" * 1000000000`` is refused
#: before it allocates a gigabyte
MAX_VALUE = 100_000


class _Budget(threading.local):
    left = MAX_ITEMS


_BUDGET = _Budget()


def reset_budget() -> None:
    """Start one evaluation's item budget (:data:`MAX_ITEMS`)."""
    _BUDGET.left = MAX_ITEMS


def _spend(n: int) -> None:
    left = _BUDGET.left - n
    _BUDGET.left = left
    if left < 0:
        raise InputError(f"evaluation visits or builds more than {MAX_ITEMS} items (nested quantifiers or "
                         "comprehensions, values built by * and +, helpers over large lists)")


def _items(coll: Any) -> list[Any]:
    if type(coll) is list:  # the common case (JSON arrays): no copy, nothing mutates it
        _spend(len(coll))
        return coll
    if coll is None:
        return []
    out = _items_of(coll)
    _spend(len(out))
    return out


def _items_of(coll: Any) -> list[Any]:
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
    vals, xs = _as_list(values), _as_list(x)
    _spend(len(vals) * len(xs))  # each element of x against each value: the work, from the evaluation's budget
    return any(v in vals for v in xs)


def _all_of(xs: Any, values: Any) -> bool:
    have, want = _as_list(xs), _as_list(values)
    _spend(len(have) * len(want))
    return all(v in have for v in want)


def _has(x: Any, key: Any) -> bool:
    return _field(x, key) is not _MISSING


def _get(x: Any, key: Any, default: Any = None) -> Any:
    v = _field(x, key)
    return default if v is _MISSING else v


def _lower(s: Any) -> Any:
    if isinstance(s, str):
        _spend(len(s))  # a new string: built cells come from the evaluation's budget
        return s.lower()
    return s


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    """``min``/``max`` that spend the items they compare (``max(objects)`` written ten thousand times over a large
    state is ten thousand scans)."""
    def run(*args: Any) -> Any:
        _spend(len(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple, str, set)) else len(args))
        return pick(*args)
    return run


#: plain helpers (arguments evaluated normally); exists/forall/count are special forms.
HELPERS: dict[str, Callable[..., Any]] = {
    "any_of": _any_of,
    "all_of": _all_of,
    "has": _has,
    "get": _get,
    "len": len,
    "abs": abs,
    "min": _extreme(min),
    "max": _extreme(max),
    "lower": _lower,
}
_QUANTIFIERS = ("exists", "forall", "count")

def _cells(v: Any, limit: int = MAX_VALUE) -> int:
    """The size of ``v`` counted deep: a string's characters; a list's/tuple's elements plus the cells of each
    element (``[[1] * 100000] * 100000`` holds one inner list 100000 times: 10**10 cells, though its length is
    10**5, and comparing two such values costs 10**10 steps). The walk stops once past ``limit`` (so it costs at
    most O(limit)); a mapping, a number or an array counts 1."""
    total, todo = 0, [v]
    while todo and total <= limit:
        x = todo.pop()
        if isinstance(x, (str, bytes)):
            total += len(x)
        elif isinstance(x, (list, tuple)):
            total += len(x)
            todo.extend(y for y in x if isinstance(y, (str, bytes, list, tuple)))
        else:
            total += 1
    return total


def _built(cells: int) -> None:
    """A value of ``cells`` cells is about to be built: refuse past :data:`MAX_VALUE`, and spend it from the
    evaluation's budget (so all the values one evaluation builds hold at most MAX_ITEMS cells together: a
    comprehension building ``[1] * 100000`` per item no longer takes gigabytes)."""
    if cells > MAX_VALUE:
        raise InputError(f"a value larger than {MAX_VALUE} items would be built")
    _spend(cells)


def _mul(a: Any, b: Any) -> Any:
    """``a * b`` that refuses, before computing, a sequence past :data:`MAX_VALUE` cells (counted deep) or an int
    past MAX_VALUE bits."""
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, (str, bytes, list, tuple)) and isinstance(n, int):
            _built(_cells(seq) * max(n, 0))
    if isinstance(a, int) and isinstance(b, int) and (a.bit_length() + b.bit_length()) > MAX_VALUE:
        raise InputError(f"an int wider than {MAX_VALUE} bits would be built")
    return a * b


def _add(a: Any, b: Any) -> Any:
    """``a + b``: two strings or two lists/tuples make a value of their cells together (counted deep, spent)."""
    seqs = (str, bytes, list, tuple)
    if isinstance(a, seqs) and isinstance(b, seqs):
        _built(_cells(a) + _cells(b))
    return a + b


def _mod(a: Any, b: Any) -> Any:
    """``a % b`` as arithmetic only: ``"%0999999999d" % 1`` (string formatting) is refused."""
    if isinstance(a, (str, bytes)):
        raise InputError("% is arithmetic only (no string formatting)")
    return a % b


_BINOPS = {
    ast.Add: _add, ast.Sub: operator.sub, ast.Mult: _mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: _mod,
}
def _is_nan(x: Any) -> bool:
    if isinstance(x, float):
        return x != x
    if isinstance(x, np.ndarray) and x.dtype.kind in "fc":
        return bool(np.isnan(x).any())
    return False


def _ordered(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """An order comparison (< <= > >=) that refuses NaN: ``nan > 5`` and ``nan <= 5`` are both False,
    so the bit a NaN field gets would depend on how the predicate is written (``x > 5`` vs
    ``not (x <= 5)``); like ``None > 5``, it is an error naming the problem."""
    def cmp(a: Any, b: Any) -> Any:
        if _is_nan(a) or _is_nan(b):
            raise MissingField("cannot order-compare NaN (a missing or undefined number)")
        if a is None or b is None:
            raise MissingField("cannot order-compare None (a missing value)")
        return op(a, b)
    return cmp


_CMPOPS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: _ordered(operator.lt), ast.LtE: _ordered(operator.le),
    ast.Gt: _ordered(operator.gt), ast.GtE: _ordered(operator.ge),
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




_CONDITION_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.Name, ast.Load, ast.IfExp,
                    ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Constant)


def check_condition(tree: ast.AST, text: str, what: str) -> None:
    """A spec's ``unsafe``, ``labels`` and ``infeasible`` are conditions over predicate *truth values*: names,
    ``and``/``or``/``not``, comparisons of truth values, ``if``-``else`` and the constants True/False/None/0/1.
    Anything else reads a bit as something it is not, and the answer is silent: ``unsafe: "a == 'x'"`` compares a
    bool with a string and is False in every state (nothing is ever unsafe, so the guard allows everything); ``a *
    2`` or ``'yes'`` failed only at decision time. Refused at load (ParseError naming ``what``). An ``unsafe`` must
    also name a predicate: ``unsafe: "False"`` (or ``0``) calls no state unsafe."""
    for sub in ast.walk(tree):
        bad = not isinstance(sub, _CONDITION_NODES) or (
            isinstance(sub, ast.Constant) and not (sub.value is None or sub.value in (0, 1)
                                                   and isinstance(sub.value, (bool, int))))
        if bad:
            shown = ast.unparse(sub) if isinstance(sub, ast.expr) else type(sub).__name__
            raise ParseError(f"{what} {text!r}: {shown!r} is not a condition over predicate names (use and, or, not, "
                             "==, !=, if-else, True/False)")
    bits = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in ("true", "false")})
    if what == "unsafe" and not bits:
        raise ParseError(f"unsafe {text!r} names no predicate: it calls no state (or every state) unsafe")
    if what == "unsafe" and len(bits) <= 12 and not any(  # a contradiction (a and not a) calls no state unsafe
            _condition_value(tree, dict(zip(bits, (bool(k >> i & 1) for i in range(len(bits)))))) is True
            for k in range(1 << len(bits))):
        raise ParseError(f"unsafe {text!r} is true in no state (whatever the predicates): it calls nothing unsafe")


def _condition_value(node: ast.AST, val: Mapping[str, bool]) -> Any:
    """A condition of :func:`check_condition`'s grammar at one valuation (None where it is not a bool)."""
    if isinstance(node, ast.Expression):
        return _condition_value(node.body, val)
    if isinstance(node, ast.Name):
        return node.id == "true" if node.id in ("true", "false") else val[node.id]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp):
        return not _condition_value(node.operand, val)
    if isinstance(node, ast.BoolOp):
        vals = (_condition_value(v, val) for v in node.values)
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.IfExp):
        return _condition_value(node.body if _condition_value(node.test, val) else node.orelse, val)
    if isinstance(node, ast.Compare):
        items = [_condition_value(x, val) for x in (node.left, *node.comparators)]
        try:
            return all(_CMPOPS[type(op)](a, b) for op, a, b in zip(node.ops, items, items[1:]))
        except InputError:  # None ordered: not a bool here
            return None
    return None
