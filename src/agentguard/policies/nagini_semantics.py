"""Where Nagini's model of Python and CPython disagree, and how a policy is kept on the side where they agree.

A policy is "verified" when Nagini proves its contract of *Nagini's* reading of the code; the guard runs
*CPython's*. Wherever the two readings of one construct differ, a policy can be proved to deny what it allows
at run time. Session 18 measured the policy language against Nagini 1.2.0 (``tests/policies/test_nagini.py``
keeps each attack: Nagini verifies it, the run time refuses it) and found, besides ``//``/``%`` with a
negative divisor (session 13, :func:`~._bounded_ops.floordiv`):

1. **sequence repetition**: Nagini's ``list___mul__`` axiom makes element ``i`` of ``seq * n`` the element
   ``seq[i // n]``; CPython's is ``seq[i % len(seq)]`` (``([3, 0] * 2)[1]`` is 3 to the proof, 0 to CPython);
2. **bools among ints in sequences**: Nagini reads ``in``, ``max(list)`` and ``min(list)`` over the boxed
   references of the elements, and the bool box ``True`` is never the int box ``1`` (``True in [1, 2]``,
   ``1 in (True, 2)`` are False to the proof and True to CPython; ``max([True, 0])`` is 0 to the proof);
3. **``int()`` of a bool**: ``int___int__`` returns its argument, so ``int(True) in [1]`` is False to the proof
   (``int(True)`` is the int 1 to CPython);
4. **unpacking assignment**: Nagini assigns ``a, b = b, a`` one target after the other (it proves ``a == b``
   after the swap; CPython swaps);
5. **a @Pure function falling off its end**: Nagini reads ``if c: return 1`` with no other return as returning
   1 whatever ``c`` (CPython returns None);
6. **contracts read by Python elsewhere**: an ``Ensures`` never runs in the guard, but the generated tests
   (:mod:`.testing`) and the specification check (:mod:`.conformance`) evaluate contracts with Python, and a
   reviewer reads them as Python: ``Implies(x % -2 == -1, Result() != 0)`` says "deny every odd x" to them and
   nothing to Nagini (``x mod -2`` is 0 or 1 in Euclidean division), which proves it of a policy allowing all;
7. **recursion limit** (session 19): Nagini proves a chain of calls of any depth; CPython raises RecursionError
   past its limit (a chain of 1,100 one-line functions; the loader's own call-graph walk hit it too).

How each is closed, structurally (the run time computes only values on which both readings agree, or refuses):

- a function that ends without ``return`` raises at run time (the rewriter appends ``_ag_no_return``), so a
  fall-through fails closed whatever Nagini assumed of it;
- the operators go through checked helpers (:class:`ExpressionRewriter`, used by the run time *and* by every
  place that evaluates a contract with Python; ``Implies`` there is lazy, as Viper's ``==>``): ``seq * n`` refuses a sequence of two or more elements repeated
  more than once; a list/tuple display refuses a bool element; ``in``/``not in`` refuse a bool on either side of
  a list/tuple membership; the policy's ``int`` returns a bool unchanged, as Nagini's does (:mod:`._bounded_ops`);
- :func:`check_semantics` (run by :func:`~.sandbox.validate`) refuses at load what can be seen in the source: a
  bool (literal, comparison, ``not``, a bool parameter or constant, ``Result()`` of a bool function, ``int``,
  ``max`` or ``min`` of one) as an element of a display or on the left of ``in``; a chained comparison holding ``in``; a
  display of two or more elements repeated by a literal factor above 1; and, inside a contract, ``//`` or ``%``
  whose divisor is not a positive int literal (a contract is never checked at run time, so the divisor must be
  one on which Euclidean and floor division agree by construction).

- :func:`check_call_graph` refuses recursion and any chain of more than :data:`MAX_CALL_DEPTH` calls.

Everything else the session compared (int ``+ - * // %`` with a positive divisor, bool arithmetic, ``abs``,
``max``/``min`` of two ints, non-bool ``and``/``or``, conditional expressions, indexing with negative indices,
string equality and ``len`` of non-ASCII literals, parameters reassigned before an ``Ensures`` reads them) agrees,
or Nagini refuses the program (chained comparisons, ``range`` with a step, ``in`` on strings, ``bool == int``):
the regression list in ``tests/policies/test_nagini_semantics.py``.
"""

from __future__ import annotations

import ast

from ..core.errors import PolicyError
from .contracts import CONTRACT_STATEMENTS, err

__all__ = ["BINOP_HELPERS", "ExpressionRewriter", "MAX_CALL_DEPTH", "check_call_graph", "check_semantics",
           "rewrite_expression"]

#: operator -> the checked helper the run time (and any Python evaluation of a contract) calls instead
#: the longest chain of calls between a policy's functions (the entry point counts as one)
MAX_CALL_DEPTH = 32

BINOP_HELPERS = {ast.Add: "_ag_add", ast.Sub: "_ag_sub", ast.Mult: "_ag_mul", ast.Mod: "_ag_mod",
                 ast.FloorDiv: "_ag_fdiv"}


class ExpressionRewriter(ast.NodeTransformer):
    """Route ``+ - * % //``, ``in``/``not in`` and non-constant list/tuple displays through the checked helpers
    of :data:`~._bounded_ops.RUNTIME_HELPERS` (which must be in the namespace the result runs in)."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        helper = BINOP_HELPERS.get(type(node.op))
        if helper is None:
            return node
        return ast.copy_location(ast.Call(ast.Name(helper, ast.Load()), [node.left, node.right], []), node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        """``Implies(a, b)`` as Viper's ``a ==> b``: ``b`` is read only where ``a`` holds (an eager call raised on
        ``Requires(Implies(len(xs) > 0, xs[0] > 0))`` with ``xs == []``, refusing an input the proof covers)."""
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "Implies" and len(node.args) == 2 and not node.keywords:
            lazy = ast.BoolOp(ast.Or(), [ast.UnaryOp(ast.Not(), node.args[0]), node.args[1]])
            return ast.copy_location(ast.Call(ast.Name("bool", ast.Load()), [lazy], []), node)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.In, ast.NotIn)):
            return node  # a chain holding ``in`` is refused at load (check_semantics)
        call: ast.expr = ast.Call(ast.Name("_ag_in", ast.Load()), [node.left, node.comparators[0]], [])
        if isinstance(node.ops[0], ast.NotIn):
            call = ast.UnaryOp(ast.Not(), call)
        return ast.copy_location(call, node)

    def _display(self, node: ast.List | ast.Tuple) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load) or all(isinstance(e, ast.Constant) for e in node.elts):
            return node
        return ast.copy_location(ast.Call(ast.Name("_ag_flat", ast.Load()), [node], []), node)

    visit_List = _display
    visit_Tuple = _display


def rewrite_expression(expr: ast.expr) -> ast.expr:
    """``expr`` with its operators routed through the checked helpers (for a contract evaluated by Python)."""
    out = ExpressionRewriter().visit(expr)
    assert isinstance(out, ast.expr)
    return out


def _positive_literal(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and type(node.value) is int and node.value > 0)


class _Types:
    """What the source says is a bool: bool module constants, a function's bool parameters, bool functions."""

    def __init__(self, tree: ast.Module) -> None:
        self.constants = {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                          for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                          if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)
                          and type(n.value.value) is bool}
        self.bool_functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                               and isinstance(n.returns, ast.Name) and n.returns.id == "bool"}

    def maybe_bool(self, node: ast.AST, params: set[str], returns_bool: bool) -> bool:
        """Whether ``node`` may be a bool at run time, as far as the source shows (conservative: True when in doubt
        only for the forms listed; the run-time helpers catch the rest in code)."""
        def rec(n: ast.AST) -> bool:
            return self.maybe_bool(n, params, returns_bool)
        if isinstance(node, ast.Constant):
            return type(node.value) is bool
        if isinstance(node, (ast.Compare,)) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            return True
        if isinstance(node, ast.BoolOp):
            return any(rec(v) for v in node.values)
        if isinstance(node, ast.IfExp):
            return rec(node.body) or rec(node.orelse)
        if isinstance(node, ast.Name):
            return node.id in params or node.id in self.constants
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            return (name == "bool" or name in self.bool_functions or (name == "Result" and returns_bool)
                    or (name in ("Old", "int", "max", "min") and any(rec(a) for a in node.args)))
        return False


def _contract_nodes(fn: ast.FunctionDef) -> set[int]:
    """The ids of every node inside a contract statement of ``fn`` (Requires/Ensures/Invariant/Assert/Decreases)."""
    out: set[int] = set()
    for st in ast.walk(fn):
        if (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name)
                and st.value.func.id in CONTRACT_STATEMENTS):
            out |= {id(n) for n in ast.walk(st.value)}
    return out


def check_semantics(tree: ast.Module, filename: str) -> None:
    """Refuse, at load, the constructs on which Nagini's reading and CPython's visibly differ (module docstring)."""
    types = _Types(tree)
    scopes: list[tuple[ast.AST, set[str], bool, set[int]]] = [
        (fn, {a.arg for a in fn.args.args if isinstance(a.annotation, ast.Name) and a.annotation.id == "bool"},
         isinstance(fn.returns, ast.Name) and fn.returns.id == "bool", _contract_nodes(fn))
        for fn in tree.body if isinstance(fn, ast.FunctionDef)]
    scopes += [(n, set(), False, set()) for n in tree.body if not isinstance(n, ast.FunctionDef)]
    for scope, params, returns_bool, contract in scopes:
        for node in ast.walk(scope):
            _check_node(node, types, params, returns_bool, id(node) in contract, filename)


def _check_node(node: ast.AST, types: _Types, params: set[str], returns_bool: bool, in_contract: bool,
                filename: str) -> None:
    def boolish(n: ast.AST) -> bool:
        return types.maybe_bool(n, params, returns_bool)

    why = "Nagini's model and CPython disagree"
    if isinstance(node, (ast.Tuple, ast.List)) and isinstance(node.ctx, ast.Store):
        raise err(node, f"unpacking assignment is not allowed ({why}: Nagini assigns the targets one after another, "
                        "so a, b = b, a proves a == b)", filename)
    if isinstance(node, (ast.List, ast.Tuple)) and any(boolish(e) for e in node.elts):
        raise err(node, f"a bool as an element of a list/tuple ({why}: to Nagini True is never the element 1)",
                  filename)
    if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
        if len(node.ops) > 1:
            raise err(node, "a chained comparison holding 'in' is not allowed", filename)
        if boolish(node.left):
            raise err(node, f"a bool on the left of 'in' ({why}: to Nagini True in [1] is False)", filename)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for seq, n in ((node.left, node.right), (node.right, node.left)):
            if (isinstance(seq, (ast.List, ast.Tuple)) and len(seq.elts) > 1 and isinstance(n, ast.Constant)
                    and type(n.value) is int and n.value > 1):
                raise err(node, f"repeating a list/tuple of {len(seq.elts)} elements ({why}: Nagini proves element "
                                "i of seq * n is seq[i // n], CPython makes seq[i % len(seq)])", filename)
    if in_contract and isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)) \
            and not _positive_literal(node.right):
        op = "//" if isinstance(node.op, ast.FloorDiv) else "%"
        raise err(node, f"{op} in a contract needs a positive int literal divisor (Nagini proves it with Euclidean "
                        "division, Python, the tests and the specification check read it with floor division; "
                        "they agree only on a positive divisor)", filename)


def check_call_graph(tree: ast.Module, functions: set[str], filename: str) -> None:
    """Refuse recursion, direct or mutual (the file's call graph must be acyclic), and call chains deeper than
    :data:`MAX_CALL_DEPTH` functions: Nagini proves a chain of any depth, CPython stops one deeper than its
    recursion limit with RecursionError (and this check itself, walking 1,100 chained functions, hit it while
    loading: a RecursionError, not a one-line PolicyError). The walk stops at that depth, so it never recurses
    deeper itself."""
    calls: dict[str, set[str]] = {}
    lines: dict[str, int] = {}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            lines[fn.name] = fn.lineno
            calls[fn.name] = {n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call)
                              and isinstance(n.func, ast.Name) and n.func.id in functions}
    state: dict[str, int] = {}
    depth: dict[str, int] = {}  # the longest chain of calls that starts at a finished function, itself included

    def too_deep(chain: list[str]) -> PolicyError:
        return PolicyError(f"policy {filename}:{lines.get(chain[0], '?')} refused: a call chain deeper than "
                           f"{MAX_CALL_DEPTH} functions ({' -> '.join(chain[:3])} -> ...)")

    def visit(f: str, path: list[str]) -> None:
        if len(path) > MAX_CALL_DEPTH:
            raise too_deep(path)
        state[f] = 1
        deepest = 0
        for g in sorted(calls.get(f, ())):
            if state.get(g) == 1:
                cycle = " -> ".join(path[path.index(g):] + [g]) if g in path else f"{f} -> {g}"
                raise PolicyError(f"policy {filename}:{lines.get(g, '?')} refused: recursion is not allowed ({cycle})")
            if g not in state:
                visit(g, path + [g])
            deepest = max(deepest, depth[g])
        depth[f] = deepest + 1
        if len(path) - 1 + depth[f] > MAX_CALL_DEPTH:
            raise too_deep(path)
        state[f] = 2

    for f in sorted(calls):
        if f not in state:
            visit(f, [f])
