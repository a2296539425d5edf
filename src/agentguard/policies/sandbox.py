"""Sandboxed loading of policy code: a bounded policy language, no I/O, a per-call, per-thread time limit.

A policy file is Python that Nagini can verify (see :mod:`agentguard.policies.model`). Before any of it
runs, :func:`validate` walks *every* node of its AST (module-level annotations, decorators and defaults
included) and refuses, with a one-line :class:`PolicyError` naming the line, everything outside a small
subset in which every construct is bounded by the size of its input (issue 13):

- imports: only ``from nagini_contracts.contracts import ...`` and ``from typing import List, ...``;
- module level: a docstring, constants (int/bool/str literals and flat lists/tuples of them, at most
  :data:`MAX_SEQ` elements) and functions; annotations are plain type names (``int``, ``List[int]``);
- statements: ``if``, ``return``, assignment, ``for``, ``assert``, ``pass``, expressions; **no** ``while``;
  ``for`` only over a name (a parameter or a constant) or ``range(...)`` whose arguments are int literals,
  names or ``len(name)``; **no recursion** (the call graph of the file's functions must be acyclic);
- expressions: literals, names, arithmetic without ``**``/shifts/bit operators, comparisons, boolean
  operators, conditional expressions, indexing, flat list/tuple displays, calls of the contract functions,
  of ``len/min/max/abs/range/bool/int`` and of functions of the same file; ``*`` needs an int literal
  factor of at most 10**6; ``%`` never has a string literal on its left (no ``'%0500000000d' % x``);
  at most :data:`MAX_EXPR_NODES` nodes per statement and :data:`MAX_NAMES` distinct variable names;
  no item or slice assignment (``a[0:0] = a`` would double a list in one C-level operation);
- contracts (issue 26): only the vocabulary that constrains, each where Nagini checks it; every construct that
  adds a fact without proof (``Assume``, ``Inhale``, ``@Trusted``, ...) is refused wherever it is mentioned
  (:mod:`~.contracts`);
- names and operators (session 10): operators are an allow-list too (no ``is``: Nagini proves ``x is LIMIT``
  as ``x == LIMIT`` while CPython compares identity; no ``/`` but an ``Acc`` fraction; no float literals); no
  reserved name (builtin, contract or type name) is bound, a module-level name is bound once and not shadowed;
- calls (session 19): no recursion and no chain of more than :data:`MAX_CALL_DEPTH` functions (Nagini proves a
  chain of any depth; CPython raises RecursionError past its limit);
- never: attribute access (so no dunder access), names that start with ``_``, ``exec``/``eval``/``open``/
  ``__import__``/``getattr`` and friends, lambdas, comprehensions, f-strings, classes, ``global``, ``try``,
  ``with``, ``del``, ``yield``, ``await``, decorators other than ``@Pure``, default values.

Execution (compiled with ``dont_inherit=True`` from the validated AST, annotations stripped so nothing in
them ever runs, with no builtins but the whitelisted ones): ``+``, ``-``, ``*`` and ``%`` go through
checked helpers that refuse, *before* computing, a value larger than :data:`MAX_SEQ` cells (elements plus
the characters of the strings inside), an int wider than :data:`MAX_INT_BITS` bits and any ``%`` formatting
of a string; a list/tuple display may not contain a list/tuple (flat data only). Where Nagini's model and
CPython disagree (``seq * n``, bools in sequences and ``in``, ``int(True)``: session 18), the helpers and
:func:`~.nagini_semantics.check_semantics` keep a policy to the values on which they agree. So every single operation
costs at most O(MAX_SEQ) and one policy call holds at most :data:`MAX_NAMES` names x MAX_SEQ cells (cap:
:data:`MEMORY_CAP_BYTES`, checked by ``tests/policies/test_policies_hostile.py``). Before every statement,
at every loop iteration and at every function entry a tick raises
:class:`~agentguard.core.errors.GuardTimeout` once *this thread's* deadline has passed (the deadline is
thread-local, so two threads sharing one policy cannot reset each other's); a policy call is therefore
stopped within its time limit plus one statement. Contract calls are rewritten for run time:
``Requires(p)`` becomes a check that raises :class:`PreconditionViolation` (the proof says nothing about
inputs outside the precondition, so the guard fails closed on them), while ``Ensures``/``Invariant``/
``Assert`` are proved by Nagini and dropped from the executed code (they are kept for the generated
tests, see :mod:`agentguard.policies.testing`).
"""

from __future__ import annotations

import ast
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..core.errors import GuardTimeout, PolicyError
from ..core.limits import time_limit
from ._bounded_ops import MAX_INT_BITS, MAX_SEQ, RUNTIME_HELPERS, to_int
from .contracts import (CONTRACT_NAMES, ESCAPE_CONSTRUCTS, RUNTIME_CONTRACTS, PreconditionViolation,
                        check_contract_placement, check_encoding, check_escapes, pre_failed)
from .contracts import err as _err
from .nagini_semantics import (BINOP_HELPERS, MAX_CALL_DEPTH, ExpressionRewriter, check_call_graph,
                               check_semantics)

__all__ = ["MAX_CALL_DEPTH", "PreconditionViolation", "validate"]  # compile_policy/CompiledPolicyCode: internal to model.py

SAFE_BUILTINS = {"len": len, "min": min, "max": max, "abs": abs, "range": range, "bool": bool, "int": to_int}
TYPING_NAMES = frozenset({"List", "Tuple", "Optional", "Dict", "Set"})
TYPE_NAMES = frozenset({"int", "bool", "str", "list", "tuple", "None"}) | TYPING_NAMES
FORBIDDEN_NAMES = frozenset({
    "exec", "eval", "compile", "open", "input", "print", "getattr", "setattr", "delattr", "globals",
    "locals", "vars", "dir", "type", "object", "breakpoint", "help", "memoryview", "bytearray", "super",
    "classmethod", "staticmethod", "property", "exit", "quit", "id", "hash", "iter", "next", "format",
})
#: names a policy may not bind (assign, loop over, take as a parameter, define): rebinding one would make the
#: run time call something other than what Nagini reasoned about (``def Implies(a, b): return True``,
#: ``len = 0``, ``List = ...``)
RESERVED_NAMES = frozenset(SAFE_BUILTINS) | CONTRACT_NAMES | TYPE_NAMES | frozenset(ESCAPE_CONSTRUCTS) | frozenset({
    "True", "False", "None", "float", "dict", "set", "str", "bytes", "Forall", "Exists", "Result", "Old"})
_ALLOWED_NODES = (
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.If, ast.For, ast.Assign,
    ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Pass, ast.Assert, ast.Break, ast.Continue,
    ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp, ast.Add, ast.Sub,
    ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt,
    ast.GtE, ast.In, ast.NotIn, ast.IfExp, ast.Call, ast.Name, ast.Load, ast.Store,
    ast.Constant, ast.List, ast.Tuple, ast.Subscript, ast.Slice, ast.ImportFrom, ast.alias)
MAX_SOURCE_CHARS = 200_000
#: the most AST nodes in one statement's own expressions (bounds the work between two ticks)
MAX_EXPR_NODES = 200
#: the most distinct variable names (locals of all functions and module constants) in one file
MAX_NAMES = 256
#: documented memory cap of one policy call: MAX_NAMES names x MAX_SEQ elements x (8-byte slot + a
#: 60-byte element), rounded up; the hostile suite checks the measured peak stays under it
MEMORY_CAP_BYTES = 192 * 2**20


def validate(source: str, filename: str = "<policy>") -> ast.Module:
    """Parse and check ``source`` against the bounded language; return the AST or raise PolicyError (one line)."""
    if not isinstance(source, str):
        raise PolicyError(f"policy {filename}: source must be text")
    if len(source) > MAX_SOURCE_CHARS:
        raise PolicyError(f"policy {filename} refused: longer than {MAX_SOURCE_CHARS} characters")
    check_encoding(source, filename)
    try:
        tree = ast.parse(source, filename=filename)
        compile(source, filename, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        raise PolicyError(f"policy {filename}:{exc.lineno} refused: syntax error: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise PolicyError(f"policy {filename} refused: cannot parse ({type(exc).__name__})") from None
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    check_escapes(tree, filename)  # before anything else names the construct as merely "not allowed"
    for node in tree.body:
        _check_top(node, functions, filename)
    _check_all_nodes(tree, functions, filename)  # every node, annotations/decorators/defaults included
    _check_bindings(tree, filename)
    check_contract_placement(tree, filename)
    check_call_graph(tree, functions, filename)  # no recursion, no chain past MAX_CALL_DEPTH
    check_semantics(tree, filename)  # where Nagini's reading and CPython's differ (session 18)
    return tree


def _check_top(node: ast.stmt, functions: set[str], filename: str) -> None:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return  # docstring / comment string
    if isinstance(node, ast.ImportFrom):
        if node.module == "nagini_contracts.contracts" or (
            node.module == "typing" and all(a.name in TYPING_NAMES for a in node.names)
        ):
            if any(a.asname for a in node.names):
                raise _err(node, "import aliases are not allowed", filename)
            return
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
        return
    if isinstance(node, ast.FunctionDef):
        _check_function(node, filename)
        return
    raise _err(node, f"{type(node).__name__} is not allowed at module level", filename)


def _is_literal(node: ast.AST, depth: int = 0) -> bool:
    if isinstance(node, ast.Constant):
        v = node.value
        return (isinstance(v, (int, bool)) and abs(int(v)).bit_length() <= MAX_INT_BITS) or v is None or (
            isinstance(v, str) and len(v) <= MAX_SEQ)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _is_literal(node.operand, depth) and isinstance(node.operand, ast.Constant)
    if isinstance(node, (ast.List, ast.Tuple)) and depth == 0:  # flat sequences only
        return len(node.elts) <= MAX_SEQ and all(_is_literal(e, 1) for e in node.elts)
    return False


def _small_int(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return (isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool)
            and abs(node.value) <= 10**6)


def _is_type(node: ast.AST | None) -> bool:
    """A plain annotation: a type name or ``Name[Name, ...]`` (nothing that could run code)."""
    if node is None:
        return True
    if isinstance(node, ast.Name):
        return node.id in TYPE_NAMES
    if isinstance(node, ast.Constant):
        return node.value is None
    if isinstance(node, ast.Subscript):
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return isinstance(node.value, ast.Name) and node.value.id in TYPE_NAMES and all(_is_type(e) for e in inner)
    return False


def _check_function(fn: ast.FunctionDef, filename: str) -> None:
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Name) and dec.id == "Pure"):
            raise _err(dec, "only the @Pure decorator is allowed", filename)
    a = fn.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults or a.kw_defaults:
        raise _err(fn, f"function {fn.name}: only plain positional parameters are allowed", filename)
    if fn.name.startswith("_") or fn.name in FORBIDDEN_NAMES:
        raise _err(fn, f"function name {fn.name!r} is not allowed", filename)
    for node in [*(x.annotation for x in a.args), fn.returns]:
        if not _is_type(node):
            raise _err(fn, f"function {fn.name}: annotations must be plain type names", filename)
    for stmt in ast.walk(fn):
        if isinstance(stmt, ast.FunctionDef) and stmt is not fn:
            raise _err(stmt, "nested functions are not allowed", filename)
        if isinstance(stmt, ast.ImportFrom):
            raise _err(stmt, "imports inside functions are not allowed", filename)
        if isinstance(stmt, ast.For):
            _check_for(stmt, filename)
        if isinstance(stmt, ast.stmt) and stmt is not fn:
            own = sum(1 for _ in _own_expr_nodes(stmt))
            if own > MAX_EXPR_NODES:
                raise _err(stmt, f"statement too large ({own} nodes; at most {MAX_EXPR_NODES})", filename)


def _own_expr_nodes(stmt: ast.stmt):
    """The expression nodes of ``stmt`` itself (not of the statements nested in its body)."""
    for field, value in ast.iter_fields(stmt):
        if field in ("body", "orelse"):
            continue
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, ast.AST):
                yield from ast.walk(v)


def _check_for(node: ast.For, filename: str) -> None:
    it = node.iter
    if isinstance(it, ast.Name):
        return
    if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and 1 <= len(it.args) <= 3 and all(_range_arg(a) for a in it.args)):
        return
    raise _err(node, "for loops may only iterate over a name or range(...) of literals, names and len(name)",
               filename)


def _range_arg(a: ast.AST) -> bool:
    if _small_int(a) or isinstance(a, ast.Name):
        return True
    return (isinstance(a, ast.Call) and isinstance(a.func, ast.Name) and a.func.id == "len" and len(a.args) == 1
            and isinstance(a.args[0], ast.Name))


def _check_all_nodes(tree: ast.Module, functions: set[str], filename: str) -> None:
    loop_ranges = {id(n.iter) for n in ast.walk(tree) if isinstance(n, ast.For)}
    # ``/`` only as a permission fraction of two int literals, ``Acc(list_pred(xs), 1/2)`` (Nagini reads it as a
    # rational); anywhere else it makes a float, which the proof does not model the way Python computes it
    fractions = {id(n.args[1]) for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id == "Acc" and len(n.args) == 2 and isinstance(n.args[1], ast.BinOp)
                 and isinstance(n.args[1].op, ast.Div) and _small_int(n.args[1].left) and _small_int(n.args[1].right)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and not _is_type(node.annotation):
            raise _err(node, "annotations must be plain type names", filename)
        if isinstance(node, ast.Attribute):
            raise _err(node, f"attribute access (.{node.attr}) is not allowed", filename)
        if isinstance(node, ast.Name):
            if node.id.startswith("_"):
                raise _err(node, f"name {node.id!r} is not allowed (names may not start with '_')", filename)
            if node.id in FORBIDDEN_NAMES:
                raise _err(node, f"{node.id!r} is not allowed", filename)
            if isinstance(node.ctx, ast.Store):
                names.add(node.id)
        elif isinstance(node, ast.arg):
            if node.arg.startswith("_"):
                raise _err(node, f"parameter {node.arg!r} is not allowed (names may not start with '_')", filename)
            names.add(node.arg)
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
            raise _err(node, "item/slice assignment is not allowed (data is immutable: a[0:0] = a doubles a list "
                             "in one C-level operation)", filename)
        if isinstance(node, ast.BinOp):
            _check_binop(node, filename)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
                and id(node) not in loop_ranges):
            raise _err(node, "range() is allowed only as the iterable of a for loop", filename)
        if isinstance(node, ast.Constant) and isinstance(node.value, (bytes, complex, float, type(...))):
            raise _err(node, "float/bytes/complex/Ellipsis literals are not allowed (the language is integer-only)",
                       filename)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > MAX_SEQ:
            raise _err(node, f"string literal longer than {MAX_SEQ} characters", filename)
        if isinstance(node, ast.Call):
            f = node.func
            if not isinstance(f, ast.Name):
                raise _err(node, "only calls of plain names are allowed", filename)
            if f.id not in CONTRACT_NAMES and f.id not in SAFE_BUILTINS and f.id not in functions:
                raise _err(node, f"call of {f.id!r} is not allowed", filename)
            if node.keywords:
                raise _err(node, "keyword arguments are not allowed", filename)
        if isinstance(node, ast.AugAssign):  # x op= y is x = x op y: the same operator rules
            _check_binop(ast.copy_location(ast.BinOp(node.target, node.op, node.value), node), filename)
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.Div) and id(node) not in fractions:
            raise _err(node, "Div is not allowed (/ makes a float; only Acc(..., 1/2) permission fractions)", filename)
        if not isinstance(node, _ALLOWED_NODES):  # operators too: an allow-list (no is, ~, **, <<, |, @)
            raise _err(node, f"{type(node).__name__} is not allowed", filename)
    if len(names) > MAX_NAMES:
        raise _err(None, f"{len(names)} variable names (at most {MAX_NAMES})", filename)


def _check_bindings(tree: ast.Module, filename: str) -> None:
    """Each name means one thing, the same to Nagini and to the run time: no reserved name (a builtin, a contract
    or type name) is bound; a module-level name is bound once; parameters and locals do not shadow one."""
    top: dict[str, int] = {}
    reserved = "is a reserved name (a builtin, contract or type name) and may not be bound"
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign)
                   else [])
        names = [node.name] if isinstance(node, ast.FunctionDef) else [t.id for t in targets if isinstance(t, ast.Name)]
        for name in names:
            if name in RESERVED_NAMES or name in top:
                raise _err(node, f"{name!r} " + (reserved if name in RESERVED_NAMES else
                                                 f"is already defined at line {top[name]} (bound once)"), filename)
            top[name] = node.lineno
    for node in (n for fn in tree.body if isinstance(fn, ast.FunctionDef) for n in ast.walk(fn)):
        name = node.arg if isinstance(node, ast.arg) else node.id if isinstance(node, ast.Name) and isinstance(
            node.ctx, ast.Store) else None
        if name is not None and (name in RESERVED_NAMES or name in top):
            raise _err(node, f"{name!r} " + (reserved if name in RESERVED_NAMES else
                                             f"shadows the module-level name defined at line {top[name]}"), filename)


def _check_binop(node: ast.BinOp, filename: str) -> None:
    if isinstance(node.op, (ast.Pow, ast.LShift, ast.RShift, ast.MatMult, ast.BitOr, ast.BitAnd, ast.BitXor)):
        raise _err(node, f"operator {type(node.op).__name__} is not allowed", filename)
    if isinstance(node.op, ast.Mult) and not (_small_int(node.left) or _small_int(node.right)):
        raise _err(node, "multiplication needs an int literal factor of at most 10**6 "
                         "(no list/str repetition, no unbounded growth)", filename)
    if isinstance(node.op, ast.Mod) and isinstance(node.left, (ast.Constant, ast.JoinedStr)) and isinstance(
            getattr(node.left, "value", ""), str):
        raise _err(node, "string formatting with % is not allowed", filename)


# ---------------------------------------------------------------- run-time compilation

class _Deadline(threading.local):
    deadline = float("inf")  # per thread: no call in progress


class _Tick:
    """Per-call, per-thread deadline checked before every statement, loop iteration and function entry.

    ``check`` is the function the compiled policy calls (a plain closure: the cheapest check there is)."""

    __slots__ = ("_local", "timeout_s", "check")

    def __init__(self, timeout_s: float) -> None:
        # a finite positive limit: with nan or inf the deadline t0 + timeout_s is never passed (no tick fires)
        self.timeout_s = timeout_s = time_limit(timeout_s, "policy timeout_s")
        local = self._local = _Deadline()
        clock = time.perf_counter
        message = f"policy exceeded its time limit of {timeout_s * 1000:.0f} ms"

        def check() -> None:
            if clock() > local.deadline:
                raise GuardTimeout(message)

        self.check = check

    @property
    def deadline(self) -> float:
        return self._local.deadline

    @deadline.setter
    def deadline(self, value: float) -> None:
        self._local.deadline = value

    def __call__(self) -> None:
        self.check()


class _RuntimeRewriter(ExpressionRewriter):
    """Requires(p) -> if not p: raise; drop Ensures/Invariant/Assert/Decreases and annotations; operators,
    ``in`` and displays through the checked helpers (:class:`~.nagini_semantics.ExpressionRewriter`); a tick
    before every statement of a function, at every loop iteration and at every function entry."""

    def _tick(self, node: ast.AST) -> ast.stmt:
        call = ast.Expr(ast.Call(ast.Name("_ag_tick", ast.Load()), [], []))
        return ast.copy_location(call, node)

    def _ticked(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            if stmt is None:
                continue
            out += [self._tick(stmt), stmt]
        return out or [ast.Pass()]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.generic_visit(node)
        node.decorator_list = []
        node.returns = None
        for a in node.args.args:
            a.annotation = None
        end = ast.Expr(ast.Call(ast.Name("_ag_no_return", ast.Load()), [ast.Constant(node.name)], []))
        node.body = self._ticked(node.body) + [ast.copy_location(end, node)]  # falling off the end fails closed
        return node

    def visit_If(self, node: ast.If) -> ast.AST:
        self.generic_visit(node)
        node.body = self._ticked(node.body)
        node.orelse = self._ticked(node.orelse) if node.orelse else []
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        node.body = self._ticked(node.body)
        node.orelse = self._ticked(node.orelse) if node.orelse else []
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        self.generic_visit(node)
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        return ast.copy_location(ast.Assign([node.target], node.value), node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        helper = BINOP_HELPERS.get(type(node.op))
        if helper is None or not isinstance(node.target, ast.Name):
            return node
        load = ast.Name(node.target.id, ast.Load())
        call = ast.Call(ast.Name(helper, ast.Load()), [load, node.value], [])
        return ast.copy_location(ast.Assign([ast.Name(node.target.id, ast.Store())], call), node)

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        v = node.value
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name):
            if v.func.id == "Requires" and v.args:
                test = ast.UnaryOp(ast.Not(), self.visit(v.args[0]))
                raise_ = ast.Expr(ast.Call(ast.Name("_ag_pre_failed", ast.Load()),
                                           [ast.Constant(ast.unparse(v.args[0]))], []))
                return ast.copy_location(ast.If(test, [raise_], []), node)
            if v.func.id in ("Ensures", "Invariant", "Assert", "Decreases"):
                return None
        self.generic_visit(node)
        return node


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
    ns: dict[str, Any] = {"__builtins__": dict(SAFE_BUILTINS), "_ag_tick": tick.check, "_ag_pre_failed": pre_failed,
                          **RUNTIME_HELPERS}  # + - * % // and flat displays through size- and sign-checked helpers
    ns.update(RUNTIME_CONTRACTS)
    for name in TYPING_NAMES:
        ns[name] = list
    code = compile(tree, filename, "exec", dont_inherit=True)
    exec(code, ns)  # noqa: S102 - the AST was validated against the bounded language above
    return CompiledPolicyCode(ns, tick)
