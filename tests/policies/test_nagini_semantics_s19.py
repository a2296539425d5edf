"""Session 19: "Nagini proves one thing and CPython runs another", the constructs session 18 did not measure.

Each body below was run by Nagini 1.2.0 (``Ensures(Result() == v)`` and ``Ensures(Result() != v)``, ``tests/policies/
test_nagini.py`` keeps the proofs) and by CPython through the sandbox. ``AGREED_S19``: Nagini proves exactly the value
CPython computes. ``NAGINI_REFUSES_S19``: Nagini does not prove the value either way (the translation fails, it
crashes, or a precondition cannot be shown): no proof exists, so the one verification path reports the file not
verified. One disagreement was found and closed: a chain of calls deeper than CPython's recursion limit (Nagini
proves any depth; CPython raised RecursionError, and the loader's own walk of the call graph did too):
``nagini_semantics.check_call_graph`` refuses a chain longer than ``MAX_CALL_DEPTH``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.errors import GuardTimeout, PolicyError
from agentguard.core.types import Context, Decision, ToolCall
from agentguard.policies import PolicyBinding, ToolCallGuard, policy_from_source
from agentguard.policies.extract import MappingExtractor
from agentguard.policies.nagini_semantics import MAX_CALL_DEPTH

HEAD = 'from nagini_contracts.contracts import *\nfrom typing import List\n\nL = [1, 2]\nS = "abc"\nT = (1, 2)\n\n'


def probe(body: str, rel: str) -> str:
    """The probe file: ``check(tool)`` on the single input tool == 0, the body computing the answer."""
    lines = "\n".join("    " + ln for ln in body.split("\n"))
    return HEAD + f"def check(tool: int) -> int:\n    Requires(tool == 0)\n    Ensures(Result() {rel})\n{lines}\n"


#: body -> the value Nagini proves and CPython (through the sandbox) computes
AGREED_S19 = {
    # strings: len counts code points to both (astral, combining, escaped surrogates), no normalisation
    "s = \"h\u00e9llo\"\nreturn len(s)": 5,
    "s = \"\\U0001F600\"\nreturn len(s)": 1,
    "s = \"\U0001F600x\"\nreturn len(s)": 2,
    "s = \"e\\u0301\"\nreturn len(s)": 2,
    "s = \"\\ud83d\\ude00\"\nreturn len(s)": 2,
    "s = \"a\" + \"b\"\nif s == \"ab\":\n    return 1\nreturn 0": 1,
    "s = \"\"\nif s:\n    return 1\nreturn 0": 0,
    "if \"\u00e9\" == \"e\\u0301\":\n    return 1\nreturn 0": 0,
    # for ... else without a break runs the else
    "for i in range(3):\n    pass\nelse:\n    return 7\nreturn 0": 7,
    # lists: truthiness, slices with negative and out-of-range bounds (CPython clamps; so does the proof)
    "xs = [0]\nys = xs[1:]\nif ys:\n    return 1\nreturn 0": 0,
    "xs = [0]\nif xs:\n    return 1\nreturn 0": 1,
    "xs = [5]\nys = xs[1:]\nreturn 1 if not ys else 0": 1,
    "xs = [1, 2, 3]\nys = xs[-2:]\nreturn len(ys)": 2,
    "xs = [1, 2, 3]\nys = xs[:-1]\nreturn len(ys)": 2,
    "xs = [1, 2, 3]\nys = xs[-5:]\nreturn len(ys)": 3,
    "xs = [1, 2, 3]\nys = xs[5:]\nreturn len(ys)": 0,
    "xs = [1, 2, 3]\nys = xs[2:1]\nreturn len(ys)": 0,
    "xs = [1, 2, 3]\nys = xs[-1:]\nreturn ys[0]": 3,
    "xs = [1, 2, 3, 4]\nys = xs[-3:-1]\nreturn ys[0]": 2,
    # += on an alias: CPython's list.__iadd__ extends in place (len(xs) is 3); the proof and the sandbox (which
    # runs x += y as x = x + y) both read a new list
    "xs = [1, 2]\nys = xs\nys += [3]\nreturn len(xs)": 2,
    # bools as ints: indexing, sums, negation, multiplication
    "xs = [5, 6]\nf = tool == 0\nreturn xs[f]": 6,
    "return (tool == 0) + (tool == 0)": 2,
    "f = tool == 0\nreturn f * 3": 3,
    "f = tool == 0\nreturn -f": -1,
    "if (tool == 0) > (tool == 1):\n    return 1\nreturn 0": 1,
    # non-bool and/or, int truthiness, conditional expressions, abs/max of ints, // and % of negative numerators
    "return 0 or 5": 5,
    "return tool if tool else 9": 9,
    "x = tool - 1\nif x:\n    return 1\nreturn 0": 1,
    "return abs(tool - 5)": 5,
    "return max(tool - 3, tool - 5)": -3,
    "x = tool - 7\nreturn x % 3": 2,
    "x = tool - 7\nreturn x // 2": -4,
    # module constants: membership in a tuple, str equality
    "if 2 in T:\n    return 1\nreturn 0": 1,
    "if S == \"abc\":\n    return 1\nreturn 0": 1,
}

#: bodies Nagini proves no value of (translation refused, a crash, or an unprovable precondition)
NAGINI_REFUSES_S19 = {
    "slice with a step": "xs = [1, 2, 3]\nys = xs[::-1]\nreturn ys[0]",
    "slice with step 2": "xs = [1, 2, 3]\nreturn len(xs[::2])",
    "str reversed": "s = \"abc\"\nif s[::-1] == \"cba\":\n    return 1\nreturn 0",
    "str slice": "s = \"abc\"\nreturn len(s[1:])",
    "str ordering": "if \"ab\" < \"b\":\n    return 1\nreturn 0",
    "str repetition": "s = \"ab\" * 2\nif s == \"abab\":\n    return 1\nreturn 0",
    "in on a str constant": "if \"b\" in S:\n    return 1\nreturn 0",
    "min of strs": "if min(\"b\", \"a\") == \"a\":\n    return 1\nreturn 0",
    "int of a str": "return int(\"12\")",
    "tuple slicing": "t = (1, 2, 3)\nreturn t[::-1][0]",
    "slice of a module list": "ys = L[-1:]\nreturn ys[0]",
    "+= on a module list": "ys = L\nys += [3]\nreturn len(L)",
    "list equality": "if [1, 2] == [1, 2]:\n    return 1\nreturn 0",
    "list ordering": "if [1, 2] < [1, 3]:\n    return 1\nreturn 0",
    "min of a list": "xs = [3, 1, 2]\nreturn min(xs)",
    "str indexing": "if S[0] == \"a\":\n    return 1\nreturn 0",
    "str negative indexing": "if S[-1] == \"c\":\n    return 1\nreturn 0",
    "module list concatenation": "ys = L + [3]\nreturn len(ys)",
    "for ... else after a break (no invariant)": "for i in range(3):\n    if i == 1:\n        break\nelse:\n    return 7\nreturn 0",
}

#: constructs the sandbox refuses at load, whatever Nagini says (attribute access, floats, defaults, ...)
SANDBOX_REFUSES_S19 = {
    "str method lower()": "s = \"\u0130\"\nif s.lower() == \"i\":\n    return 1\nreturn 0",
    "startswith with a tuple": "if S.startswith((\"x\", \"a\")):\n    return 1\nreturn 0",
    "float literal": "if tool == 0.0:\n    return 1\nreturn 0",
    "float from division": "x = tool / 2\nreturn 0",
    "is": "if tool is 0:\n    return 1\nreturn 0",
    "dict display": "d = {1: 2}\nreturn 0",
    "lambda": "f = lambda: 1\nreturn 0",
    "global": "global L\nreturn 0",
    "try/except swallowing an error": "try:\n    return 1\nexcept Exception:\n    return 0",
    "while": "while tool > 0:\n    tool = tool - 1\nreturn 0",
    "item assignment": "xs = [1]\nxs[0] = 2\nreturn 0",
    "dunder name": "return __name__",
}


@pytest.mark.parametrize("body", sorted(AGREED_S19))
def test_the_sandbox_computes_what_nagini_proves(body: str) -> None:
    pol = policy_from_source(probe(body, f"== {AGREED_S19[body]}"))
    assert pol.evaluate({"tool": 0}).code == AGREED_S19[body]


@pytest.mark.parametrize("name", sorted(SANDBOX_REFUSES_S19))
def test_constructs_the_sandbox_refuses_at_load(name: str) -> None:
    with pytest.raises(PolicyError):
        policy_from_source(probe(SANDBOX_REFUSES_S19[name], "!= 1"))


# -- call chains --------------------------------------------------------------------------------------------------

def chain(n: int) -> str:
    """``check`` calling f0 -> f1 -> ... -> f(n-1): a chain of n + 1 functions, none recursive."""
    src = "from nagini_contracts.contracts import *\n\n"
    for i in range(n):
        src += f"def f{i}(x: int) -> int:\n    return {f'f{i + 1}(x)' if i + 1 < n else '0'}\n\n"
    return src + ("def check(x: int) -> int:\n    Requires(0 <= x and x <= 10)\n    Ensures(Implies(x > 5, Result() != 0))\n"
                  "    if x > 5:\n        return 1\n    return f0(x)\n")


def test_a_chain_deeper_than_cpython_runs_is_refused_at_load_not_a_recursion_error() -> None:
    # 1,100 chained functions: Nagini proves it; CPython raised RecursionError (at load: the call-graph walk)
    with pytest.raises(PolicyError, match="call chain deeper than"):
        policy_from_source(chain(1100))
    with pytest.raises(PolicyError, match="call chain deeper than"):
        policy_from_source(chain(MAX_CALL_DEPTH))
    assert policy_from_source(chain(MAX_CALL_DEPTH - 1)).evaluate({"x": 1}).allow


@settings(max_examples=80, deadline=None)
@given(edges=st.lists(st.tuples(st.integers(0, 45), st.integers(0, 45)), max_size=40), spine=st.integers(0, 45),
       dag=st.booleans())
def test_a_call_graph_loads_exactly_when_acyclic_and_no_chain_is_longer_than_the_bound(edges, spine, dag) -> None:
    """Random call graphs over f0..f45 (``check`` calls f0; a spine f0 -> f1 -> ... of generated length, plus random
    edges, oriented forward when ``dag``): loaded iff acyclic and no chain (from ``check`` or from any function) has
    more than MAX_CALL_DEPTH functions; a loaded one runs without RecursionError."""
    calls: dict[int, set[int]] = {i: set() for i in range(46)}
    for i in range(spine):
        calls[i].add(i + 1)
    for a, b in edges:
        if dag and a != b:
            a, b = min(a, b), max(a, b)
        calls[a].add(b)
    src = "from nagini_contracts.contracts import *\n\n"
    for i in range(46):
        body = "".join(f"    r = r + f{j}(x)\n" for j in sorted(calls[i]))
        src += f"def f{i}(x: int) -> int:\n    r = 0\n{body}    return r\n\n"
    src += "def check(x: int) -> int:\n    Requires(0 <= x and x <= 10)\n    Ensures(Implies(x > 5, Result() != 0))\n"
    src += "    if x > 5:\n        return 1\n    return f0(x)\n"

    memo: dict[int, float] = {}

    def longest(i: int, seen: frozenset[int]) -> float:   # functions on the longest chain from i; inf on a cycle
        if i in seen:
            return float("inf")
        if i not in memo:
            memo[i] = 1 + max((longest(j, seen | {i}) for j in calls[i]), default=0)
        return memo[i]

    cyclic = False
    try:
        chains = [longest(i, frozenset()) for i in range(46)]
        cyclic = any(c == float("inf") for c in chains)
    except RecursionError:  # pragma: no cover - 46 functions
        cyclic = True
    expected = not cyclic and max(1 + longest(0, frozenset()), *chains) <= MAX_CALL_DEPTH
    try:
        pol = policy_from_source(src, timeout_s=5.0)
    except PolicyError as exc:
        assert not expected, str(exc)
        return
    assert expected
    try:
        pol.evaluate({"x": 1})
    except GuardTimeout:  # many paths through a wide graph: a denial, never a RecursionError
        pass


# -- an exception inside the policy denies, never allows ------------------------------------------------------------

RAISING = {
    "index past the end": "    xs = [1]\n    return xs[x]\n",
    "division by a computed zero": "    return 10 // (x - x)\n",
    "an int too wide": "    y = x + 1\n" + "    y = y * 1000000\n" * 60 + "    return 0\n",
    "a list too long": "    xs = [1]\n" + "    xs = xs + xs\n" * 16 + "    return 0\n",
    "falls off its end": "    if x > 100:\n        return 0\n",
    "max of an empty list": "    xs = [1]\n    ys = xs[1:]\n    return max(ys)\n",
    "runs past its time limit": "    r = 0\n" + "    for i in range(1000000):\n        r = r + 1\n" * 3 + "    return 0\n",
}


@pytest.mark.parametrize("name", sorted(RAISING))
def test_an_exception_inside_the_policy_denies(name: str) -> None:
    src = ("from nagini_contracts.contracts import *\n\ndef check(x: int) -> int:\n    Requires(0 <= x and x <= 10)\n"
           "    Ensures(Implies(x > 5, Result() != 0))\n" + RAISING[name])
    pol = policy_from_source(src, timeout_s=0.05)
    guard = ToolCallGuard([PolicyBinding(pol, MappingExtractor({"x": lambda c, ctx: c.arguments["x"]}))])
    v = guard.check(Context(run_id="r"), ToolCall("t", {"x": 1}))
    assert v.decision is Decision.REJECT, (name, v.reason)
    assert "could not decide" in v.reason
