"""Red team (session 18) of "verified": a policy Nagini proves whose run time does something else.

Each attack below was confirmed with Nagini 1.2.0 (``tests/policies/test_nagini.py`` keeps the proofs: Nagini
verifies the attack's contract, CPython's run would allow what it denies). Here, without Nagini: the sandbox
refuses the construct at load or the run time refuses the value (PolicyError: the guard fails closed), and a
hypothesis property compares each checked helper with the semantics Nagini assumes.
"""

from __future__ import annotations

import ast
import json

import pytest
from hypothesis import given, settings, strategies as st

from agentguard.core.errors import PolicyError
from agentguard.core.types import Context, Decision, ToolCall
from agentguard.policies import ToolCallGuard, policy_from_source, validate
from agentguard.policies._bounded_ops import contains, flat, mul, to_int
from agentguard.policies.conformance import contract_problems, load_spec, spec_problems
from agentguard.policies.nagini_semantics import rewrite_expression

HEADER = "from nagini_contracts.contracts import *\nfrom typing import List\n\n"


def policy(body: str, params: str = "tool: int", pre: str = "",
           contract: str = "    Ensures(Implies(tool == 1, Result() != 0))\n") -> str:
    return (HEADER + pre + f"def check({params}) -> int:\n    Requires(0 <= tool and tool <= 10)\n" + contract + body)


def refused(source: str, needle: str) -> str:
    with pytest.raises(PolicyError) as info:
        validate(source, "attack.py")
    msg = str(info.value)
    assert "\n" not in msg and "attack.py:" in msg and needle in msg, msg
    return msg


# -- the attacks (each: Nagini proves the contract; CPython would allow tool == 1) ----------------------------------

#: ``([tool, 0] * 2)[1]`` is ``tool`` to Nagini (``list___mul__``: element i is seq[i // n]) and 0 to CPython
REPEAT = "    codes = [tool, 0]\n    twice = codes * 2\n    return twice[1]\n"
#: ``1 in [True, 2]`` is False to Nagini (a bool box is never the int box 1), True to CPython
BOOL_IN_LIST = "    if tool in [True, 2]:\n        return 0\n    return 1\n"


def test_sequence_repetition_is_refused_where_nagini_and_cpython_disagree():
    src = policy(REPEAT)
    with pytest.raises(PolicyError, match=r"seq\[i // n\]"):
        policy_from_source(src).evaluate({"tool": 1})            # CPython: ([1, 0] * 2)[1] == 0, allow
    refused(policy("    twice = [tool, 0] * 2\n    return twice[1]\n"), "repeating a list/tuple of 2")
    refused(policy("    twice = 3 * (tool, 0)\n    return twice[1]\n"), "repeating a list/tuple of 2")
    ok = policy_from_source(policy("    one = [tool] * 3\n    return one[2]\n"))  # one element: both agree
    assert ok.evaluate({"tool": 1}).code == 1 and ok.evaluate({"tool": 0}).code == 0


@pytest.mark.parametrize("src, needle", [
    (policy(BOOL_IN_LIST), "a bool as an element"),
    (policy("    if tool in ALLOWED:\n        return 0\n    return 1\n", pre="ALLOWED = (True, 2)\n\n"),
     "a bool as an element"),
    (policy("    if tool in [tool > 5, 3]:\n        return 0\n    return 1\n"), "a bool as an element"),
    (policy("    if (tool > 0) in [1]:\n        return 0\n    return 1\n"), "left of 'in'"),
    (policy("    if flag in xs:\n        return 0\n    return 1\n", params="tool: int, flag: bool, xs: List[int]"),
     "left of 'in'"),
    (policy("    if int(tool > 0) in [1]:\n        return 0\n    return 1\n"), "left of 'in'"),
    (policy("    if True in xs:\n        return 0\n    return 1\n", params="tool: int, xs: List[int]"), "left of 'in'"),
    (policy("    return 0\n", params="tool: int, flag: bool, xs: List[int]",
            contract="    Ensures(Implies(not (flag in xs), Result() != 0))\n"), "left of 'in'"),
    (policy("    if 0 < tool in [1]:\n        return 0\n    return 1\n"), "chained comparison"),
])
def test_a_bool_among_ints_is_refused_at_load(src, needle):
    refused(src, needle)


@pytest.mark.parametrize("body", [
    "    t = tool > 0\n    if t in [1, 2]:\n        return 0\n    return 1\n",            # a bool item, via a name
    "    t = tool > 0\n    ys = [t, 5]\n    if 1 in ys:\n        return 0\n    return 1\n",  # a bool element
    "    t = int(tool > 0)\n    if t in [1]:\n        return 0\n    return 1\n",  # int(True) is True to Nagini
    "    t = max(tool > 0, 0)\n    ys = [t]\n    return len(ys)\n",
])
def test_a_bool_among_ints_is_refused_at_run_time(body):
    pol = policy_from_source(policy(body))
    with pytest.raises(PolicyError, match="bool"):
        pol.evaluate({"tool": 1})


def test_unpacking_assignment_is_refused_because_nagini_assigns_one_target_after_another():
    refused(policy("    a = 0\n    b = tool\n    a, b = b, a\n    return b\n"), "unpacking assignment")
    refused(policy("    [a, b] = [tool, 0]\n    return a\n"), "unpacking assignment")


def test_a_function_falling_off_its_end_fails_closed():
    """Nagini reads ``if x > 5: return 1`` alone (in a @Pure function) as returning 1 for every x."""
    pre = "@Pure\ndef flagged(x: int) -> int:\n    if x > 5:\n        return 1\n\n\n"
    pol = policy_from_source(policy("    if flagged(tool) == 1 and tool == 1:\n        return 1\n    return 0\n",
                                    pre=pre))
    assert pol.evaluate({"tool": 7}).code == 0
    with pytest.raises(PolicyError, match="flagged ended without a return"):
        pol.evaluate({"tool": 1})                                  # CPython: None == 1 is False, allow
    with pytest.raises(PolicyError, match="check ended without a return"):
        policy_from_source(policy("    if tool > 5:\n        return 1\n")).evaluate({"tool": 1})


@pytest.mark.parametrize("clause", [
    "Ensures(Implies(tool % -2 == -1, Result() != 0))",   # Euclid: tool mod -2 is 0 or 1: vacuous to Nagini
    "Ensures(Implies(tool // -2 == -1, Result() != 0))",
    "Ensures(Implies(tool % DIV == 1, Result() != 0))",    # a name: its value is not seen by the contract check
    "Ensures(Implies(tool % (0 - 2) == -1, Result() != 0))",
    "Requires(tool % -3 != 2)",
])
def test_division_in_a_contract_needs_a_positive_literal_divisor(clause):
    refused(policy("    return 0\n", pre="DIV = -2\n\n", contract=f"    {clause}\n"), "positive int literal divisor")
    assert validate(policy("    return 0\n", contract="    Ensures(Implies(tool % 2 == 1, Result() != 0))\n"))


def test_contracts_are_evaluated_by_python_through_the_same_helpers():
    """The generated tests and the specification check read a clause as the proof does, or not at all."""
    ns = {"_ag_in": contains, "_ag_flat": flat, "_ag_mul": mul}
    for text in ("True in [1, 2]", "1 in [x, 2]", "([1, 0] * 2)[1]"):
        expr = ast.Expression(rewrite_expression(ast.parse(text, mode="eval").body))
        with pytest.raises(PolicyError):
            eval(compile(ast.fix_missing_locations(expr), "<c>", "eval"), ns, {"x": True})  # noqa: S307


def test_implies_reads_its_conclusion_only_where_its_premise_holds():
    """Viper's ``a ==> b``: an eager ``Implies`` raised IndexError on ``xs == []``, an input the proof covers."""
    src = (HEADER + "def check(xs: List[int]) -> int:\n    Requires(Acc(list_pred(xs)))\n"
           "    Requires(Implies(len(xs) > 0, xs[0] > 0))\n    Ensures(Implies(len(xs) > 0, Result() != 0))\n"
           "    if len(xs) > 0:\n        return 1\n    return 0\n")
    pol = policy_from_source(src)
    assert pol.evaluate({"xs": []}).code == 0 and pol.evaluate({"xs": [3]}).code == 1
    with pytest.raises(PolicyError, match="precondition"):
        pol.evaluate({"xs": [0]})


def test_a_specification_constant_is_matched_with_its_type():
    spec = load_spec("asb_declared_tools")
    src = next(p for p in __import__("agentguard.policies", fromlist=["x"]).shipped_policies()
               if p.stem == "asb_declared_tools").read_text()
    assert contract_problems(src, spec) == []
    forged = src.replace("ALLOW = 0", "ALLOW = False")
    assert forged != src
    assert any("ALLOW must be 0" in p for p in contract_problems(forged, spec))


def test_a_specification_clause_may_name_only_what_the_specification_fixes():
    from dataclasses import replace

    spec = load_spec("asb_declared_tools")
    assert spec_problems(spec) == []
    loose = replace(spec, contract=[*spec.contract, "Ensures(Implies(tool == SPECIAL, Result() == ALLOW))"])
    assert any("names SPECIAL" in p for p in spec_problems(loose, limit=50))


def test_verify_without_tests_still_refuses_a_vacuous_contract(tmp_path, monkeypatch, capsys):
    """Nagini proves ``Ensures(Result() == Result())`` of a policy that allows everything: refused before it."""
    import agentguard.policies.nagini as nagini_mod
    from agentguard.cli import main

    def no_nagini(*a, **k):
        raise AssertionError("a vacuous contract must not reach Nagini")

    monkeypatch.setattr(nagini_mod, "NaginiVerifier", no_nagini)
    f = tmp_path / "vacuous.py"
    f.write_text(policy("    return 0\n", contract="    Ensures(Result() == Result())\n"))
    with pytest.raises(SystemExit) as ei:
        main(["verify", "--no-tests", "--json", str(f)])
    assert ei.value.code == 1
    (r,) = json.loads(capsys.readouterr().out)
    assert r["status"] == "vacuous-contract"


# -- properties: each checked helper against the semantics Nagini 1.2.0 assumes -------------------------------------

def nagini_repeat(seq: list, n: int) -> list:
    """``list___mul__``: length max(n, 0) * len(seq), element i is seq[i // n] (Euclidean division, n > 0)."""
    return [seq[i // n] for i in range(len(seq) * max(n, 0))] if n > 0 else []


def nagini_in(item, seq) -> bool:
    """Viper's sequence membership over boxed references: a bool box and an int box are never the same."""
    return any(type(x) is type(item) and x == item for x in seq)


SCALARS = st.one_of(st.integers(-3, 3), st.booleans())


@settings(max_examples=300, deadline=None)
@given(seq=st.lists(st.integers(-5, 5), max_size=4), n=st.integers(-3, 5), tup=st.booleans())
def test_repetition_runs_only_where_the_proof_and_cpython_agree(seq, n, tup):
    value = tuple(seq) if tup else seq
    try:
        got = mul(value, n)
    except PolicyError:
        assert len(seq) > 1 and n > 1  # where the two can differ (refused even when the elements are equal)
        return
    assert list(got) == nagini_repeat(seq, n) == list(value * n)


@settings(max_examples=300, deadline=None)
@given(item=SCALARS, seq=st.lists(SCALARS, max_size=4), tup=st.booleans())
def test_membership_runs_only_where_the_proof_and_cpython_agree(item, seq, tup):
    container = tuple(seq) if tup else seq
    try:
        got = contains(item, container)
    except PolicyError:
        assert type(item) is bool or any(type(x) is bool for x in seq)
        return
    assert got == nagini_in(item, seq) == (item in container)


@settings(max_examples=100, deadline=None)
@given(v=SCALARS)
def test_int_of_a_value_is_what_nagini_proves_it_is(v):
    got = to_int(v)
    assert got == int(v) and (got is v if type(v) is bool else type(got) is int)


# a generated policy: ``if ITEM in [E1, E2, ...]: return 0`` over int/bool expressions; the sandbox refuses it
# (load or run) or answers what Nagini's reading (bool boxes never ints; int(b) is b) gives
_INT_EXPRS = ["tool", "1", "0", "tool + 1", "abs(tool - 2)", "max(tool, 1)", "int(tool)"]
_BOOL_EXPRS = ["flag", "True", "False", "tool > 1", "not flag", "int(flag)", "int(tool > 1)", "flag and True",
               "max(flag, False)", "bool(tool)"]


def _model(text: str, tool: int, flag: bool):
    """Evaluate an element as Nagini reads it: int(b) stays the bool b (``int___int__`` returns its argument)."""
    return eval(text, {"int": lambda v: v if type(v) is bool else int(v), "max": max, "abs": abs,  # noqa: S307
                       "bool": bool}, {"tool": tool, "flag": flag})


@settings(max_examples=150, deadline=None)
@given(item=st.sampled_from(_INT_EXPRS + _BOOL_EXPRS), elems=st.lists(st.sampled_from(_INT_EXPRS + _BOOL_EXPRS),
       min_size=1, max_size=3), tool=st.integers(0, 10), flag=st.booleans(), via_name=st.booleans())
def test_a_generated_membership_policy_answers_as_nagini_reads_it_or_fails_closed(item, elems, tool, flag, via_name):
    display = "[" + ", ".join(elems) + "]"
    body = (f"    ys = {display}\n    it = {item}\n    if it in ys:\n" if via_name
            else f"    if {item} in {display}:\n") + "        return 0\n    return 1\n"
    src = policy(body, params="tool: int, flag: bool")
    try:
        got = policy_from_source(src).evaluate({"tool": tool, "flag": flag}).code
    except PolicyError:
        return
    want = 0 if nagini_in(_model(item, tool, flag), [_model(e, tool, flag) for e in elems]) else 1
    assert got == want, (item, elems, tool, flag)


@settings(max_examples=80, deadline=None)
@given(divisor=st.one_of(st.integers(-4, 4).map(str), st.sampled_from(["tool", "DIV", "(0 - 2)", "-(2)", "+3"])),
       op=st.sampled_from(["%", "//"]), clause=st.sampled_from(["Ensures", "Requires"]))
def test_a_contract_divides_only_by_a_positive_literal(divisor, op, clause):
    text = (f"    {clause}(Implies(tool {op} {divisor} == 1, Result() != 0))\n" if clause == "Ensures"
            else f"    Requires(tool {op} {divisor} != 7)\n")
    src = policy("    return 1\n", pre="DIV = 3\n\n", contract="    Ensures(Result() != 0)\n" + text)
    if divisor.isdigit() and int(divisor) > 0:
        assert validate(src)
    else:
        refused(src, "positive int literal divisor")


# -- the guard's conversion of tool-call arguments: anything but the declared exact type fails closed ---------------

_ALLOW_ALL = HEADER + ("def check(amount: int, ok: bool, ids: List[int]) -> int:\n"
                       "    Requires(Acc(list_pred(ids)))\n    Ensures(Implies(amount < 0, Result() != 0))\n"
                       "    if amount < 0:\n        return 1\n    return 0\n")
JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True)
                    | st.text(max_size=6) | st.just("5\x00") | st.just("5"),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
                    max_leaves=6)


@pytest.fixture(scope="module")
def allow_all_guard(tmp_path_factory):
    path = tmp_path_factory.mktemp("conv") / "allow_all.py"
    path.write_text(_ALLOW_ALL)
    return ToolCallGuard.from_config({"policy": str(path), "arguments": {"amount": "amount", "ok": "ok",
                                                                         "ids": "ids"}})


@settings(max_examples=200, deadline=None)
@given(amount=JSON, ok=JSON, ids=JSON)
def test_an_argument_of_another_type_never_allows(allow_all_guard, amount, ok, ids):
    verdict = allow_all_guard.check(Context(run_id="conv"), ToolCall("pay", {"amount": amount, "ok": ok, "ids": ids}))
    exact = (type(amount) is int and 0 <= amount and amount.bit_length() <= 64 and type(ok) is bool
             and type(ids) is list and all(type(i) is int and i.bit_length() <= 64 for i in ids))
    assert (verdict.decision is Decision.ALLOW) == exact, (amount, ok, ids, verdict.reason)


# -- regression list: what else was compared, and agreed with Nagini or was refused ----------------------------------

#: (body returning an int, the value Nagini 1.2.0 proved or None where it refused the program, the sandbox's answer
#: or the exception type it fails closed with)
AGREED = [
    ("    return True + True\n", 2, 2),
    ("    return abs(True)\n", 1, 1),
    ("    return tool or 5\n", None, 5),              # tool == 0: proved `Implies(tool == 0, Result() == 5)`
    ("    return tool and 7\n", None, 0),
    ("    return len('\\u00e9\\U0001F600')\n", 2, 2),  # code points to both
    ("    return 7 // 2 + (-7) // 2 + (-7) % 2\n", 0, 0),
    ("    ys = [5, 6, 7]\n    return ys[-1]\n", 7, 7),
    ("    ys = [1] * 3\n    return ys[2]\n", 1, 1),
    ("    return max(True, 0)\n", 1, PolicyError),    # a bool returned by an int policy: fails closed
    # += on a list: CPython extends xs in place (2); Nagini reads __add__ and a rebinding (1), and so does the sandbox
    ("    xs = [1]\n    ys = xs\n    ys += [2]\n    return len(xs)\n", 1, 1),
    ("    r = 0\n    for i in range(3):\n        if i == 5:\n            break\n    else:\n        r = 1\n"
     "    return r\n", None, 1),
    ("    a = b = 5\n    return a + b\n", 10, 10),
    ("    ys = [3, 1]\n    return max(ys) - min(ys)\n", None, 2),
]


@pytest.mark.parametrize("body, proved, sandbox", AGREED)
def test_constructs_that_agree_with_the_proof_or_fail_closed(body, proved, sandbox):
    pol = policy_from_source(policy(body, contract="    Ensures(Result() >= 0)\n"))
    if isinstance(sandbox, type):
        with pytest.raises(sandbox):
            pol.evaluate({"tool": 0})
    else:
        assert pol.evaluate({"tool": 0}).code == sandbox
        assert proved is None or proved == sandbox


@pytest.mark.parametrize("body, error", [
    ("    ys = [7]\n    return max(ys[1:])\n", "ValueError"),          # max of an empty list: Nagini's precondition
    ("    if tool < 'a':\n        return 1\n    return 0\n", "TypeError"),
    ("    ys = [1, 2]\n    return ys[5]\n", "IndexError"),
])
def test_a_run_time_error_fails_closed_through_the_guard(tmp_path, body, error):
    path = tmp_path / "err.py"
    path.write_text(policy(body))
    guard = ToolCallGuard.from_config({"policy": str(path), "arguments": {"tool": "tool"}})
    verdict = guard.check(Context(run_id="e"), ToolCall("t", {"tool": 1}))
    assert verdict.decision is Decision.REJECT and error in verdict.reason


#: @Pure bodies compared with Nagini in session 18 (``Ensures(Result() != V)`` with V CPython's value was never
#: proved, i.e. Nagini did not contradict CPython): the sandbox computes CPython's value
PURE = """@Pure
def p(x: int) -> int:
    y = 1
    if x > 5:
        y = 2
        if x > 7:
            return y * 10
    return y


@Pure
def q(x: int) -> int:
    if x > 5:
        return 1
    elif x > 2:
        return 2
    return 3


"""


@pytest.mark.parametrize("call, value", [("p(8)", 20), ("p(6)", 2), ("p(0)", 1), ("q(6)", 1), ("q(3)", 2),
                                         ("q(0)", 3)])
def test_pure_functions_that_agree_with_nagini(call, value):
    pol = policy_from_source(policy(f"    return {call}\n", pre=PURE, contract="    Ensures(Result() >= 0)\n"))
    assert pol.evaluate({"tool": 0}).code == value


# -- properties of the session-18 refusals: unpacking, fall-through, constant types ----------------------------------

@settings(max_examples=60, deadline=None)
@given(targets=st.lists(st.sampled_from(["a", "b", "c"]), min_size=2, max_size=3),
       values=st.lists(st.sampled_from(["tool", "0", "a", "b"]), min_size=2, max_size=3), brackets=st.booleans())
def test_every_unpacking_assignment_is_refused(targets, values, brackets):
    lhs = ("[{}]" if brackets else "{}").format(", ".join(targets))
    rhs = ", ".join(values[:len(targets)] + ["0"] * (len(targets) - len(values)))
    refused(policy(f"    a = 1\n    b = 2\n    c = 3\n    {lhs} = {rhs}\n    return a\n"), "unpacking assignment")


_BRANCHES = st.recursive(
    st.sampled_from(["return 1", "return 0", "pass"]),
    lambda inner: st.tuples(st.integers(0, 10), inner, st.one_of(st.none(), inner)),
    max_leaves=5)


def _render(tree, depth: int) -> str:
    pad = "    " * depth
    if isinstance(tree, str):
        return pad + tree + "\n"
    bound, then, other = tree
    out = f"{pad}if tool > {bound}:\n" + _render(then, depth + 1)
    return out + (f"{pad}else:\n" + _render(other, depth + 1) if other is not None else "")


@settings(max_examples=120, deadline=None)
@given(body=_BRANCHES, tool=st.integers(0, 10))
def test_a_path_without_return_fails_closed_and_every_other_answers_as_cpython(body, tool):
    code = _render(body, 1)
    ns: dict = {}
    exec("def plain(tool):\n" + code, ns)  # noqa: S102 - the oracle: the same body in plain CPython
    expected = ns["plain"](tool)
    pol = policy_from_source(policy(code, contract="    Ensures(Result() >= 0)\n"))
    if expected is None:
        with pytest.raises(PolicyError, match="without a return"):
            pol.evaluate({"tool": tool})
    else:
        assert pol.evaluate({"tool": tool}).code == expected


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(["ALLOW", "UNDECLARED"]), forged=st.sampled_from(["True", "False", "0", "1"]))
def test_a_specification_constant_of_another_type_is_refused(name, forged):
    from agentguard.policies import shipped_policies

    spec = load_spec("asb_declared_tools")
    src = next(p for p in shipped_policies() if p.stem == "asb_declared_tools").read_text()
    line = next(ln for ln in src.splitlines() if ln.startswith(f"{name} = "))
    problems = contract_problems(src.replace(line, f"{name} = {forged}"), spec)
    same = forged == str(spec.constants[name])
    assert (problems == []) == same, (name, forged, problems)


@settings(max_examples=60, deadline=None)
@given(k=st.integers(-5, 15), form=st.sampled_from([
    "Result() >= 0", "Result() == Result()", "Implies(False, Result() != 0)", "Implies(tool > 10, Result() != 0)",
    "Implies(tool < 0, Result() != 0)", "Result() != 99", "Implies(tool == K, Result() != 0)",
    "Implies(tool > K, Result() == 1)", "Implies(tool == K and tool != K, Result() != 0)"]))
def test_a_contract_that_forbids_allowing_nowhere_in_the_domain_is_vacuous(k, form):
    """What ``agentguard verify`` refuses with or without ``--no-tests``: vacuous exactly when no in-domain tool
    (0..10) makes the clause reject the allow verdict 0."""
    from agentguard.policies.testing import vacuity_problem

    clause = form.replace("K", str(k))
    pol = policy_from_source(policy("    return 0\n", contract=f"    Ensures({clause})\n"))
    forbids = any(not eval(clause.replace("Result()", "0").replace("Implies(", "imp("),  # noqa: S307
                           {"imp": lambda a, b: (not a) or b, "tool": t}) for t in range(11))
    assert (vacuity_problem(pol) is None) == forbids, clause
