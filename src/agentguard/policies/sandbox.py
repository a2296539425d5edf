"""Sandboxed loading of policy code: a whitelisted AST subset, no I/O, a time limit per call.

A policy file is Python that Nagini can verify (see :mod:`agentguard.policies.model`). Before any of it
runs, :func:`validate` walks its AST and refuses, with a one-line :class:`PolicyError` naming the line,
everything outside a small subset:

- imports: only ``from nagini_contracts.contracts import ...`` and ``from typing import List, ...``;
- module level: a docstring, constants (int/bool/str literals and lists/tuples of them) and functions;
- statements: ``if``, ``return``, assignment, ``for``/``while`` loops, ``assert``, ``pass``, expressions;
- expressions: literals, names, arithmetic without ``**``/shifts, comparisons (``in`` included), boolean
  operators, conditional expressions, indexing, list/tuple literals, calls of the contract functions,
  of ``len/min/max/abs/range`` and of functions defined in the same file;
- arithmetic that cannot blow up inside one C-level operation: ``*`` needs an int literal factor of at most
  10**6 (no ``[0] * 10**9``, no repeated squaring), ``range`` only as a ``for`` iterable (so every
  iteration passes the time check);
- never: attribute access (so no dunder access), names that start with ``_``, ``exec``/``eval``/``open``/
  ``__import__``/``getattr`` and friends, lambdas, comprehensions, classes, ``global``, ``try``, ``with``,
  ``del``, ``yield``, ``await``, decorators other than ``@Pure``.

Execution: the code is compiled from the validated AST with no builtins but the whitelisted ones, so even
a missed construct cannot reach ``open`` or ``__import__``. Every loop iteration and every function entry
calls a tick that raises :class:`~agentguard.core.errors.GuardTimeout` once the call's deadline has passed,
so an infinite loop or runaway recursion is stopped after ``timeout_s`` (no threads, no signals; the
check costs nothing for loop-free policies). Contract calls are rewritten for run time: ``Requires(p)``
becomes a check that raises :class:`PreconditionViolation` (the proof says nothing about inputs outside the
precondition, so the guard fails closed on them), while ``Ensures``/``Invariant``/``Assert`` are proved by
Nagini and dropped from the executed code (they are kept for the generated tests, see
:mod:`agentguard.policies.testing`).
"""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..core.errors import GuardTimeout, PolicyError

__all__ = ["PreconditionViolation", "validate"]  # compile_policy/CompiledPolicyCode: internal to model.py

CONTRACT_NAMES = frozenset({
    "Requires", "Ensures", "Invariant", "Assert", "Assume", "Implies", "Result", "Old", "Pure", "Acc",
    "list_pred", "Forall", "Exists", "Decreases",
})
SAFE_BUILTINS = {"len": len, "min": min, "max": max, "abs": abs, "range": range, "bool": bool, "int": int}
TYPING_NAMES = frozenset({"List", "Tuple", "Optional", "Dict", "Set"})
FORBIDDEN_NAMES = frozenset({
    "exec", "eval", "compile", "open", "input", "print", "getattr", "setattr", "delattr", "globals",
    "locals", "vars", "dir", "type", "object", "breakpoint", "help", "memoryview", "bytearray", "super",
    "classmethod", "staticmethod", "property", "exit", "quit", "id", "hash", "iter", "next",
})
_ALLOWED_NODES = (
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.If, ast.For, ast.While, ast.Assign,
    ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Pass, ast.Assert, ast.Break, ast.Continue,
    ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp, ast.Add, ast.Sub,
    ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt,
    ast.GtE, ast.In, ast.NotIn, ast.Is, ast.IsNot, ast.IfExp, ast.Call, ast.Name, ast.Load, ast.Store,
    ast.Constant, ast.List, ast.Tuple, ast.Subscript, ast.Index if hasattr(ast, "Index") else ast.Constant,
    ast.Slice, ast.ImportFrom, ast.alias, ast.keyword,
)
MAX_SOURCE_CHARS = 200_000


class PreconditionViolation(PolicyError):
    """The arguments fall outside the policy's ``Requires`` (where its proof says nothing): fail closed."""


def _err(node: ast.AST | None, msg: str, filename: str) -> PolicyError:
    line = getattr(node, "lineno", "?")
    return PolicyError(f"policy {filename}:{line} refused: {msg}")


def validate(source: str, filename: str = "<policy>") -> ast.Module:
    """Parse and check ``source`` against the whitelist; return the AST or raise PolicyError (one line)."""
    if not isinstance(source, str):
        raise PolicyError(f"policy {filename}: source must be text")
    if len(source) > MAX_SOURCE_CHARS:
        raise PolicyError(f"policy {filename} refused: longer than {MAX_SOURCE_CHARS} characters")
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise PolicyError(f"policy {filename}:{exc.lineno} refused: syntax error: {exc.msg}") from None
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for i, node in enumerate(tree.body):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # docstring / comment string
        if isinstance(node, ast.ImportFrom):
            if node.module == "nagini_contracts.contracts" or (
                node.module == "typing" and all(a.name in TYPING_NAMES for a in node.names)
            ):
                if any(a.asname for a in node.names):
                    raise _err(node, "import aliases are not allowed", filename)
                continue
            raise _err(node, f"import from {node.module!r} is not allowed (only nagini_contracts.contracts, typing)",
                       filename)
        if isinstance(node, ast.Import):
            raise _err(node, f"import {', '.join(a.name for a in node.names)} is not allowed", filename)
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            if value is None or not _is_literal(value):
                raise _err(node, "module-level assignments must be literal constants", filename)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if not isinstance(t, ast.Name):
                    raise _err(node, "module-level assignment target must be a name", filename)
            _check_names(node, filename)
            continue
        if isinstance(node, ast.FunctionDef):
            _check_function(node, functions, filename)
            continue
        raise _err(node, f"{type(node).__name__} is not allowed at module level", filename)
    return tree


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, bool, str)) or node.value is None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_is_literal(e) for e in node.elts)
    return False


def _small_int(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return (isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool)
            and abs(node.value) <= 10**6)


def _check_names(node: ast.AST, filename: str) -> None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            if sub.id.startswith("_"):
                raise _err(sub, f"name {sub.id!r} is not allowed (names may not start with '_')", filename)
            if sub.id in FORBIDDEN_NAMES:
                raise _err(sub, f"{sub.id!r} is not allowed", filename)
        elif isinstance(sub, ast.arg) and sub.arg.startswith("_"):
            raise _err(sub, f"parameter {sub.arg!r} is not allowed (names may not start with '_')", filename)


def _check_function(fn: ast.FunctionDef, functions: set[str], filename: str) -> None:
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Name) and dec.id == "Pure"):
            raise _err(dec, "only the @Pure decorator is allowed", filename)
    a = fn.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults or a.kw_defaults:
        raise _err(fn, f"function {fn.name}: only plain positional parameters are allowed", filename)
    if fn.name.startswith("_"):
        raise _err(fn, f"function name {fn.name!r} may not start with '_'", filename)
    loop_ranges = {id(n.iter) for n in ast.walk(fn) if isinstance(n, ast.For)}
    for node in ast.walk(fn):
        if node is fn:
            continue
        if isinstance(node, ast.Attribute):
            raise _err(node, f"attribute access (.{node.attr}) is not allowed", filename)
        if isinstance(node, ast.FunctionDef):
            raise _err(node, "nested functions are not allowed", filename)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.LShift, ast.RShift, ast.MatMult,
                                                                 ast.BitOr, ast.BitAnd, ast.BitXor)):
            raise _err(node, f"operator {type(node.op).__name__} is not allowed", filename)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and not (
                _small_int(node.left) or _small_int(node.right)):
            raise _err(node, "multiplication needs an int literal factor of at most 10**6 "
                             "(no list/str repetition, no unbounded growth)", filename)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
                and id(node) not in loop_ranges):
            raise _err(node, "range() is allowed only as the iterable of a for loop", filename)
        if isinstance(node, ast.Constant) and isinstance(node.value, (bytes, complex)):
            raise _err(node, "bytes/complex literals are not allowed", filename)
        if isinstance(node, ast.Call):
            f = node.func
            if not isinstance(f, ast.Name):
                raise _err(node, "only calls of plain names are allowed", filename)
            if f.id not in CONTRACT_NAMES and f.id not in SAFE_BUILTINS and f.id not in functions:
                raise _err(node, f"call of {f.id!r} is not allowed", filename)
            if node.keywords:
                raise _err(node, "keyword arguments are not allowed", filename)
        if not isinstance(node, _ALLOWED_NODES) and not isinstance(node, (ast.expr_context, ast.operator,
                                                                          ast.cmpop, ast.boolop, ast.unaryop)):
            raise _err(node, f"{type(node).__name__} is not allowed", filename)
        if isinstance(node, ast.ImportFrom):
            raise _err(node, "imports inside functions are not allowed", filename)
    _check_names(fn, filename)


# ---------------------------------------------------------------- run-time compilation

class _Tick:
    """Per-call deadline shared by every loop iteration and function entry of one policy module."""

    __slots__ = ("deadline", "timeout_s")

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.deadline = float("inf")

    def __call__(self) -> None:
        if time.perf_counter() > self.deadline:
            raise GuardTimeout(f"policy exceeded its time limit of {self.timeout_s * 1000:.0f} ms")


class _RuntimeRewriter(ast.NodeTransformer):
    """Requires(p) -> if not p: raise; drop Ensures/Invariant/Assert/Decreases; tick loops and calls."""

    def _tick(self, node: ast.AST) -> ast.stmt:
        call = ast.Expr(ast.Call(ast.Name("_ag_tick", ast.Load()), [], []))
        return ast.copy_location(call, node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.generic_visit(node)
        node.decorator_list = []
        body = [s for s in node.body if s is not None]
        node.body = [self._tick(node)] + (body or [ast.Pass()])
        return node

    def _loop(self, node: ast.For | ast.While) -> ast.AST:
        self.generic_visit(node)
        node.body = [self._tick(node)] + (node.body or [ast.Pass()])
        return node

    visit_For = _loop
    visit_While = _loop

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        v = node.value
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name):
            if v.func.id == "Requires" and v.args:
                test = ast.UnaryOp(ast.Not(), v.args[0])
                raise_ = ast.Expr(ast.Call(ast.Name("_ag_pre_failed", ast.Load()),
                                           [ast.Constant(ast.unparse(v.args[0]))], []))
                return ast.copy_location(ast.If(test, [raise_], []), node)
            if v.func.id in ("Ensures", "Invariant", "Assert", "Decreases", "Assume"):
                return None
        return node


def _pre_failed(text: str) -> None:
    raise PreconditionViolation(f"arguments violate the policy's precondition {text}")


def _implies(a: Any, b: Any) -> bool:
    return (not a) or bool(b)


def _acc(*args: Any) -> bool:
    return True


def _pure(f: Callable) -> Callable:
    return f


def _forall(*args: Any) -> bool:  # quantifiers are proved by Nagini; not evaluated at run time
    return True


RUNTIME_CONTRACTS: dict[str, Any] = {
    "Implies": _implies, "Acc": _acc, "list_pred": lambda x: x, "Pure": _pure, "Forall": _forall,
    "Exists": _forall, "Old": lambda x: x,
}


@dataclass
class CompiledPolicyCode:
    """The module namespace of a validated policy and the tick that enforces its time limit."""

    namespace: dict[str, Any]
    tick: _Tick

    def function(self, name: str) -> Callable[..., Any]:
        f = self.namespace.get(name)
        if not callable(f):
            raise PolicyError(f"policy defines no function {name!r}")
        return f


def compile_policy(source: str, filename: str = "<policy>", timeout_s: float = 0.05) -> CompiledPolicyCode:
    """Validate, rewrite for run time, and execute the module body in a namespace with no free builtins."""
    tree = validate(source, filename)
    tree.body = [n for n in tree.body if not isinstance(n, ast.ImportFrom)]
    tree = _RuntimeRewriter().visit(tree)
    ast.fix_missing_locations(tree)
    tick = _Tick(timeout_s)
    ns: dict[str, Any] = {"__builtins__": dict(SAFE_BUILTINS), "_ag_tick": tick, "_ag_pre_failed": _pre_failed}
    ns.update(RUNTIME_CONTRACTS)
    for name in TYPING_NAMES:
        ns[name] = list
    code = compile(tree, filename, "exec")
    exec(code, ns)  # noqa: S102 - the AST was validated against the whitelist above
    return CompiledPolicyCode(ns, tick)
