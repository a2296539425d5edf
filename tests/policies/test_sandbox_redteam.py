"""Red team of the bounded policy language (session 10): an adversary writes the policy file.

Each class of escape is a hypothesis strategy over spellings and places (module level, function body,
contract, loop); the property is the same for all: ``validate`` refuses with a one-line PolicyError naming a
line, before anything runs, or the policy runs bounded (cells, ints) and every answer is a plain bool/int.
"""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings, strategies as st

from agentguard.core.errors import PolicyError
from agentguard.policies import policy_from_source, validate
from agentguard.policies._bounded_ops import MAX_SEQ, add, cells, flat, mul
from agentguard.policies.sandbox import RESERVED_NAMES

HEADER = "from nagini_contracts.contracts import *\nfrom typing import List\n\n"
OK_BODY = "    if x > 3:\n        return 1\n    return 0\n"


def module(pre: str = "", stmt: str = "", contract: str = "", params: str = "x: int") -> str:
    return (HEADER + pre + f"def check({params}) -> int:\n    Requires(0 <= x and x <= 100)\n"
            + "    Ensures(Implies(x > 3, Result() != 0))\n" + contract + stmt + OK_BODY)


def refused(source: str) -> str:
    with pytest.raises(PolicyError) as info:
        validate(source, "attack.py")
    msg = str(info.value)
    assert "\n" not in msg and "refused" in msg and "attack.py:" in msg, msg
    return msg


def test_the_template_itself_loads():
    p = policy_from_source(module())
    assert p(x=2).allow is True and p(x=5).allow is False


# -- escapes: every spelling the issue lists, in every place a statement or expression can stand ----------------

ESCAPE_EXPRESSIONS = [
    "x.__class__", "().__class__.__bases__[0].__subclasses__()", "getattr(x, 'real')", "getattr(x, 'im' + 'ag')",
    "'{0.__class__}'.format(x)", "f'{x.__class__}'", "f'{x!r:>99999999}'", "__builtins__", "__import__('os')",
    "globals()", "vars()", "type(x)", "object", "(lambda: 0)()", "(lambda a=print: a)()", "[i for i in [1]]",
    "{i for i in [1]}", "{1: 2}", "(i for i in [1])", "(y := 1)", "2 ** 10 ** 10", "1 << 10 ** 9",
    "'x' * 10 ** 10", "[0] * 10 ** 9", "'%0999999999d' % x", "x @ x", "x | 1", "~x", "x / 2", "1.5", "1e308",
    "x is 1", "x is not None", "b'x'", "1j", "...", "str(x)", "print(x)", "open('/etc/passwd')", "eval('1')",
    "exec('x=1')", "compile('1','','eval')", "breakpoint()", "iter([1])", "next(x)", "hash(x)", "id(x)",
    "format(x, '>999999999')", "memoryview(b'')", "bytearray(10**9)", "super()", "int.__subclasses__()",
    "len(x, key=x)", "max(*[1, 2])", "min(**{})", "Assume(False)", "Inhale(True)", "len.__self__",
]
ESCAPE_STATEMENTS = [
    "import os", "import importlib", "from os import system", "from builtins import open",
    "from importlib import import_module", "from typing import cast", "from nagini_contracts.contracts import Assume",
    "from typing import List as open", "global x", "del x", "while True:\n        pass",
    "try:\n        pass\n    except Exception:\n        pass", "with x:\n        pass",
    "async def f() -> int:\n        return 0",
    "class C(type):\n        pass", "def inner() -> int:\n        return 0", "yield x", "return (yield)",
    "match x:\n        case 1:\n            pass", "assert x, print(x)", "y: print(1) = 0", "y = [1]\n    y[0:0] = y",
    "y = [1]\n    y[0] = 2", "for i in range(10 ** 9):\n        pass", "for i in [1, 2]:\n        pass",
    "for i in range(x * 2):\n        pass", "raise ValueError(x)", "nonlocal x",
]


@settings(max_examples=150, deadline=None)
@given(expr=st.sampled_from(ESCAPE_EXPRESSIONS), where=st.sampled_from(["assign", "if", "return", "arg", "module"]))
def test_every_escape_expression_is_refused_wherever_it_stands(expr, where):
    if where == "assign":
        source = module(stmt=f"    y = {expr}\n")
    elif where == "if":
        source = module(stmt=f"    if {expr}:\n        return 0\n")
    elif where == "return":
        source = module(stmt=f"    return {expr}\n")
    elif where == "arg":
        source = module(stmt=f"    y = len([{expr}])\n")
    else:
        source = module(pre=f"Y = {expr}\n\n")
    refused(source)


@settings(max_examples=80, deadline=None)
@given(stmt=st.sampled_from(ESCAPE_STATEMENTS), top=st.booleans())
def test_every_escape_statement_is_refused_in_a_body_or_at_module_level(stmt, top):
    if top and "\n" not in stmt:
        refused(HEADER + stmt + "\n" + module().removeprefix(HEADER))
    else:
        refused(module(stmt="    " + stmt + "\n"))


@pytest.mark.parametrize("source", [
    # decorators, defaults, annotations and metaclasses run at import: refused before any import happens
    module().replace("def check", "@print\ndef check"),
    module().replace("def check", "@Pure\n@open('/tmp/x', 'w')\ndef check"),
    module().replace("x: int)", "x: int = print(1))"),
    module().replace("x: int)", "x: print(1))"),
    module().replace("-> int", "-> open('/tmp/x')"),
    HEADER + "X: open('/tmp/x') = 1\n" + module().removeprefix(HEADER),
    HEADER + "class M(type):\n    pass\n" + module().removeprefix(HEADER),
    # a contract that runs code or adds facts without proof
    module(contract="    Ensures(print(Result()) is None)\n"),
    module(contract="    Requires(Forall(x, lambda i: True))\n"),
    module(contract="    Assume(x > 3)\n"),
])
def test_import_time_code_is_refused(source):
    refused(source)


# -- rebinding what the proof and the run time must agree on --------------------------------------------------

@settings(max_examples=120, deadline=None)
@given(name=st.sampled_from(sorted(RESERVED_NAMES)),
       form=st.sampled_from(["module", "def", "param", "local", "for"]))
def test_no_reserved_name_can_be_rebound(name, form):
    """``def Implies(a, b): return True``, ``len = 0``, ``List = ...``: what Nagini reads as the contract
    vocabulary or a builtin would run as something else."""
    if form == "module":
        source = HEADER + f"{name} = 1\n" + module().removeprefix(HEADER)
    elif form == "def":
        source = HEADER + f"def {name}(a: int) -> int:\n    return 0\n\n" + module().removeprefix(HEADER)
    elif form == "param":
        source = module(params=f"x: int, {name}: int")
    elif form == "local":
        source = module(stmt=f"    {name} = 1\n")
    else:
        source = module(stmt=f"    for {name} in range(3):\n        pass\n")
    refused(source)


@pytest.mark.parametrize("source,needle", [
    (HEADER + "LIMIT = 3\nLIMIT = 1000\n" + module().removeprefix(HEADER), "already defined"),
    (HEADER + "def check(x: int) -> int:\n    Ensures(Result() == 1)\n    return 1\n\n" + module().removeprefix(HEADER),
     "already defined"),
    (HEADER + "LIMIT = 3\n" + module(stmt="    LIMIT = 1000\n"), "shadows"),
    (HEADER + "def helper(a: int) -> int:\n    return a\n\n" + module(stmt="    helper = len\n"), "shadows"),
    (HEADER + "LIMIT = 3\n" + module(params="x: int, LIMIT: int"), "shadows"),
])
def test_a_module_name_means_one_thing(source, needle):
    """Python runs the last definition: a second ``def check`` that always allows was what the sandbox ran on
    the tested-only path (no verifier); Nagini itself refuses the file (mypy: "already defined"), checked with
    Nagini 1.2.0. Shadowing a module name by a local is refused for the same reason: one name, one meaning."""
    assert needle in refused(source)


# -- sizes: a value is at most MAX_SEQ cells whatever its shape ------------------------------------------------

def test_lists_of_long_strings_are_bounded_by_their_characters():
    """The attack that passed issue 13's element count: 10**4 elements of 10**4 characters each (10**8
    characters held by one name; 256 names made ~25 GB with a generous time limit)."""
    s = "q" * 9_990
    src = (HEADER + f'S = "{s}"\n\n' + "def check(x: int, xs: List[int]) -> int:\n    Ensures(Result() >= 0)\n"
           "    a = [S]\n    for i in xs:\n        a = a + [S + \"x\"]\n    return 0\n")
    policy = policy_from_source(src, timeout_s=5.0)
    with pytest.raises(PolicyError, match="cells"):
        policy.evaluate({"x": 1, "xs": list(range(10_000))})


_LONG = st.builds(lambda c, n: c * n, st.sampled_from("ab\u200b\U0001F600"), st.integers(1_000, 9_990))
_ATOM = st.one_of(st.integers(-5, 5), st.text(max_size=40), _LONG)
_VALUE = st.one_of(_ATOM, st.lists(_ATOM, max_size=8), st.lists(_ATOM, max_size=8).map(tuple))


@settings(max_examples=300, deadline=None)
@given(a=_VALUE, b=_VALUE, n=st.integers(-3, 10**6), op=st.sampled_from(["add", "mul", "flat"]))
def test_every_built_value_stays_within_the_cell_bound(a, b, n, op):
    """Differential: each helper either refuses before computing or returns a value of at most MAX_SEQ cells
    (the operands themselves are within it, as every value a policy holds is)."""
    if cells(a) > MAX_SEQ or cells(b) > MAX_SEQ:
        return
    try:
        out = add(a, b) if op == "add" else mul(a, n) if op == "mul" else flat([a, b])
    except (PolicyError, TypeError):
        return
    assert cells(out) <= MAX_SEQ


# -- the run time reads only what the language allows -----------------------------------------------------------

def test_nothing_returned_by_a_policy_can_carry_behaviour():
    """A policy can return only values it built from literals and its (exact-type) arguments: the answer is an
    int or a bool, never an object with ``__bool__``/``__eq__`` of its own."""
    p = policy_from_source(module())
    for x in range(0, 101):
        out = p.code.function("check")(x)
        assert type(out) is int


# -- what Nagini proves must be what Python runs ----------------------------------------------------------------

IS_POLICY = HEADER + """LIMIT = 1000

def check(x: int) -> int:
    Requires(0 <= x and x <= 100000)
    Ensures(Implies(x == LIMIT, Result() != 0))
    if x is LIMIT:
        return 1
    return 0
"""


def test_identity_comparison_is_refused_because_nagini_proves_it_as_equality():
    """Nagini 1.2.0 reports this file 'Verification successful' (it reads ``is`` on ints as ``==``; run on
    2026-11-26), while CPython compares object identity: ``int('1000') is LIMIT`` is False, so the
    "verified" policy allowed x = 1000. ``is`` is outside the language; so are ``/`` (a float Nagini models
    apart from Python) and float literals."""
    x = int("1000")  # as a JSON parser makes it
    ns: dict = {"LIMIT": 1000}
    exec("def run(x):\n    return 1 if x is LIMIT else 0", ns)  # noqa: S102 - the pre-fix run-time semantics
    assert ns["run"](x) == 0  # the identity test misses the forbidden value
    assert "Is is not allowed" in refused(IS_POLICY)
    assert "Div is not allowed" in refused(module(stmt="    if x / 3 > 1:\n        return 1\n"))
    assert "float" in refused(module(stmt="    if x > 3.5:\n        return 1\n"))


def test_a_permission_fraction_is_the_one_place_for_division():
    src = HEADER + """def check(x: int, xs: List[int]) -> int:
    Requires(Acc(list_pred(xs), 1/2))
    Requires(0 <= x and x <= 100)
    Ensures(Acc(list_pred(xs), 1/2))
    Ensures(Implies(x in xs, Result() != 0))
    if x in xs:
        return 1
    return 0
"""
    assert policy_from_source(src)(x=3, xs=[3]).allow is False
    refused(src.replace("1/2))\n    Requires(0", "x/2))\n    Requires(0"))


@pytest.mark.parametrize("stmt", ["y = x\n    y /= 2", "y = x\n    y **= 99", "y = x\n    y <<= 99",
                                  "y = x\n    y |= 1", "y = x\n    y *= x"])
def test_augmented_assignment_follows_the_operator_rules(stmt):
    refused(module(stmt=f"    {stmt}\n"))


def test_a_quantified_precondition_is_checked_at_run_time_or_fails_closed():
    """``Requires(Forall(xs, small))`` used to run as True: inputs outside the proof's domain passed."""
    from agentguard.policies import PreconditionViolation
    from agentguard.policies.sandbox import RUNTIME_CONTRACTS

    forall, exists = RUNTIME_CONTRACTS["Forall"], RUNTIME_CONTRACTS["Exists"]
    assert forall([1, 2], lambda i: i < 10) is True and forall([1, 20], lambda i: i < 10) is False
    assert exists([1, 20], lambda i: i > 10) is True and exists([], lambda i: True) is False
    assert forall([1], lambda i: 1) is False  # only an exact True holds
    for args in ((int, lambda i: True), ([1], None), ("ab", lambda c: True), ([1], lambda i: True, 3)):
        with pytest.raises(PreconditionViolation):
            forall(*args)


# -- differential: the rewritten run time computes what plain Python computes -----------------------------------

_LEAF = st.one_of(st.sampled_from(["x", "y", "LIMIT"]), st.integers(-20, 20).map(str))


def _expr(children):
    return st.one_of(
        st.tuples(children, st.sampled_from(["+", "-", "%", "//"]), children).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(children, st.integers(-9, 9)).map(lambda t: f"({t[0]} * {t[1]})"),
        st.tuples(children, st.sampled_from(["<", "<=", "==", "!=", ">", ">="]), children).map(
            lambda t: f"int({t[0]} {t[1]} {t[2]})"),
        st.tuples(children, children, children).map(lambda t: f"({t[0]} if {t[1]} > 0 else {t[2]})"),
        st.tuples(children, children).map(lambda t: f"max({t[0]}, {t[1]})"),
        children.map(lambda c: f"abs({c})"),
    )


EXPRESSIONS = st.recursive(_LEAF, _expr, max_leaves=8)


class _PositiveDivision(ast.NodeTransformer):
    """The oracle reads ``//`` and ``%`` as the policy language does since session 13: a divisor that is not
    positive is refused (Nagini proves them with Euclidean division, CPython floors; they agree only then)."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            op = ast.Constant(type(node.op).__name__)
            return ast.copy_location(ast.Call(ast.Name("_div", ast.Load()), [node.left, node.right, op], []), node)
        return node


def _positive_division(a, b, op):
    if type(b) is bool or b <= 0:  # a bool divisor is refused too (the policy's int() keeps a bool a bool)
        raise ZeroDivisionError("a divisor that is not a positive int")
    return a // b if op == "FloorDiv" else a % b


def _policy_int(v):
    """The policy language's ``int``: a bool stays a bool, as Nagini's ``int___int__`` returns its argument
    (:mod:`agentguard.policies.nagini_semantics`, session 18); CPython's would make it the int 0 or 1."""
    return v if type(v) is bool else int(v)


@settings(max_examples=80, deadline=None)
@given(expr=EXPRESSIONS, aug=st.sampled_from(["+=", "-=", "*=", "%="]), x=st.integers(-1000, 1000),
       y=st.integers(-1000, 1000))
def test_the_run_time_computes_what_python_computes(expr, aug, x, y):
    """Every statement of the policy goes through the rewriter (ticks, size-checked + - * %, augmented
    assignment): its verdict must equal the same code run by plain CPython, or the policy refuses (fail
    closed) where Python raises."""
    body = f"    z = {expr}\n    z {aug} 7\n    if z > 0:\n        return 1\n    return 0\n"
    source = (HEADER + "LIMIT = 100\n\ndef check(x: int, y: int) -> int:\n    Requires(-1000 <= x and x <= 1000)\n"
              "    Requires(-1000 <= y and y <= 1000)\n    Ensures(Result() >= 0)\n" + body)
    ns: dict = {"LIMIT": 100, "_div": _positive_division, "int": _policy_int}
    oracle = ast.fix_missing_locations(_PositiveDivision().visit(ast.parse(f"def plain(x, y):\n{body}")))
    exec(compile(oracle, "<oracle>", "exec"), ns)  # noqa: S102 - the oracle: the same code, unrewritten
    try:
        expected = ns["plain"](x, y)
    except ArithmeticError:
        expected = None
    policy = policy_from_source(source)
    try:
        got = policy.evaluate({"x": x, "y": y}).code
    except (PolicyError, ArithmeticError):
        got = None
    assert got == expected, (expr, aug, x, y)


# -- session 11: the verifier and the run time read one program -------------------------------------------------

_HIDDEN = ("from nagini_contracts.contracts import *\n\n"
           "def check(amount: int) -> int:\n    Requires(0 <= amount and amount <= 1000000)\n"
           "    Ensures(Implies(amount > 1000, Result() != 0))\n"
           "    # +AAo-    if amount > 1000:+AAo-        return 1\n"
           "    return 0\n")


def test_a_declared_encoding_cannot_show_the_verifier_other_code(tmp_path):
    """Nagini reads a policy file through ``tokenize.open`` (PEP 263); the gate reads UTF-8 text. Under
    ``# coding: utf-7`` the comment above is the line ``if amount > 1000: return 1`` to the verifier (which then
    proves the contract) and a comment to the run time (which returns 0 for every amount)."""
    import ast
    import tokenize

    from agentguard.policies import load_policy

    path = tmp_path / "pay.py"
    path.write_text("# -*- coding: utf-7 -*-\n" + _HIDDEN, encoding="utf-8")
    with tokenize.open(path) as f:  # what the verifier parses
        seen_by_verifier = ast.parse(f.read())
    assert any(isinstance(n, ast.If) for n in ast.walk(seen_by_verifier))
    assert not any(isinstance(n, ast.If) for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))
    with pytest.raises(PolicyError, match="declares the source encoding 'utf-7'"):
        load_policy(path)


@settings(max_examples=30, deadline=None)
@given(encoding=st.sampled_from(["utf-7", "latin-1", "cp1252", "ascii", "utf-16", "rot13", "koi8-r", "shift_jis"]),
       form=st.sampled_from(["# -*- coding: {} -*-\n", "# vim: set fileencoding={} :\n",
                             "#!/usr/bin/env python\n# coding={}\n"]))
def test_every_declared_encoding_but_utf8_is_refused(encoding, form):
    source = form.format(encoding) + module()
    msg = refused(source)
    assert "encoding" in msg or "syntax" in msg
    assert validate(form.format("utf-8") + module(), "ok.py") is not None


# -- session 13: Nagini proves // and % with Euclidean division, CPython floors ------------------------------------

@settings(max_examples=60, deadline=None)
@given(x=st.integers(-50, 50), y=st.integers(-50, 50), op=st.sampled_from(["//", "%"]), aug=st.booleans())
def test_floor_and_mod_run_only_where_the_proof_and_cpython_agree(x, y, op, aug):
    """``7 // -2`` is -4 to CPython and -3 to Nagini (``7 % -2``: -1 and 1): a divisor that is not positive is
    refused at run time; a positive one computes what CPython (and the proof) computes."""
    stmt = f"z = x\n    z {op}= y" if aug else f"z = x {op} y"
    source = (HEADER + "def check(x: int, y: int) -> int:\n    Requires(-50 <= x and x <= 50)\n"
              "    Requires(-50 <= y and y <= 50)\n    Ensures(Result() >= 0)\n"
              f"    {stmt}\n    return z + 100\n")
    policy = policy_from_source(source)
    if y <= 0:
        with pytest.raises((PolicyError, ZeroDivisionError)):
            policy.evaluate({"x": x, "y": y})
    else:
        assert policy.evaluate({"x": x, "y": y}).code == (x // y if op == "//" else x % y) + 100
