"""Red team of policy files (session 21): an attacker writes a policy file the guard loads (or a user copies one).

Mostly a regression list: each attack below was tried against the real loader (``policy_from_source``,
``ToolCallGuard.from_config``) and was already refused, or fails closed at run time. Two holes were found and fixed:

- ``timeout_s`` of ``nan``/``inf`` (from configuration or in code) switched the policy's tick off: the deadline
  ``t0 + nan`` is never passed, so ``for i in range(1000000): for j in range(1000000): pass`` held the gate for
  hours (:func:`agentguard.core.limits.time_limit` in the sandbox's tick and in ``from_config``);
- ``int('9' * 4000)`` built a 13,000-bit int although the language promises ints of at most MAX_INT_BITS bits
  (:func:`agentguard.policies._bounded_ops.to_int` checks its result).

The property every test shares: a refused call never runs; whatever a policy does, the gate's verdict is ALLOW only
when the policy returned exactly the allow verdict of its declared type.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

from agentguard import Context, ToolCall
from agentguard.core.errors import InputError, PolicyError
from agentguard.core.types import Decision
from agentguard.policies import ToolCallGuard, policy_from_source, validate
from agentguard.policies._bounded_ops import MAX_INT_BITS

HEADER = "from nagini_contracts.contracts import *\nfrom typing import List\n\n"


def policy(body: str, pre: str = "", params: str = "x: int", ret: str = "int") -> str:
    return (HEADER + pre + f"def check({params}) -> {ret}:\n    Requires(0 <= x and x <= 100)\n"
            "    Ensures(Implies(x > 3, Result() != 0))\n" + body)


ALLOW_BODY = "    if x > 3:\n        return 1\n    return 0\n"


def refused(source: str) -> str:
    with pytest.raises(PolicyError) as info:
        validate(source, "attack.py")
    msg = str(info.value)
    assert "\n" not in msg and "refused" in msg, msg
    return msg


# -- escape hatches: already refused at load (regression list) ----------------------------------------------------

ESCAPES = [
    "    y = '{0.__class__.__mro__}'.format_map({'0': x})\n",      # str.format_map attribute walk
    "    y = '{x.__class__}'.format(x=x)\n",
    "    y = (i for i in [1]).gi_frame.f_globals\n",                # generator frame -> globals
    "    y = check.__globals__\n",
    "    y = check.__code__.co_consts\n",
    "    y = (lambda: 0).__closure__\n",
    "    y = 10 ** 10 ** 8\n",                                      # huge int
    "    y = 'x' * 10 ** 8\n",                                      # big string repetition
    "    y = x * x * x * x\n",                                      # no int literal factor
    "    y = x << 100000\n",
    "    y = -~x\n",
    "    y = x if x else open('/etc/passwd')\n",
    "    y = max(x, key=print)\n",
    "    y = min(*[x])\n",
    "    y = len.__self__.__import__('os')\n",
    "    y = __builtins__\n",
    "    y = __import__('os')\n",
    "    y = vars()\n",
    "    y = type(x).__subclasses__()\n",
    "    y = x.__class__.__base__.__subclasses__()\n",
    "    y = [c for c in (1).__class__.__bases__]\n",
    "    y = f'{x!r:>999999999}'\n",
    "    y = '%0999999999d' % x\n",
    "    y = (y := 1)\n",
    "    while True:\n        pass\n",
    "    try:\n        y = 1\n    except BaseException:\n        return 0\n",
    "    raise SystemExit(0)\n",
    "    import operator\n",
    "    global LIMIT\n",
    "    del x\n",
    "    assert x, print(x)\n",
]
ESCAPES_AT_MODULE = [
    "from operator import attrgetter\n",
    "import dataclasses\n",
    "from enum import Enum\n",
    "from typing import cast\n",
    "from typing import List as check2\n",
    "from nagini_contracts.contracts import Assume\n",
    "from nagini_contracts.contracts import Requires as R\n",
    "class E(Enum):\n    A = 1\n",
    "@dataclass\nclass D:\n    x: int = 0\n",
    "Y = [[1] * 10]\n",
    "Y = [1, [2]]\n",
    "Y = {'a': 1}\n",
    "Y = 1.5\n",
    "Y = b'x'\n",
    "Y = print\n",
    "Y = -(-1)\n",
    "Y: print('annotation') = 1\n",
    "_hidden = 1\n",
    "Pure = 1\n",
    "def Implies(a: bool, b: bool) -> bool:\n    return True\n",
    "def check(x: int) -> int:\n    Ensures(Result() == 0)\n    return 0\n",   # entry shadowed by a second one
    "# -*- coding: utf-7 -*-\n",
]


@settings(max_examples=120, deadline=None)
@given(stmt=st.sampled_from(ESCAPES), place=st.sampled_from(["first", "after-if", "in-loop"]))
def test_regression_policy_escapes_are_refused_at_load(stmt, place):
    if place == "first":
        source = policy(stmt + ALLOW_BODY)
    elif place == "after-if":
        source = policy("    if x > 50:\n        return 1\n" + stmt + ALLOW_BODY)
    else:
        source = policy("    for i in range(3):\n" + "".join("    " + ln + "\n" for ln in stmt.splitlines())
                        + ALLOW_BODY)
    refused(source)


@pytest.mark.parametrize("top", ESCAPES_AT_MODULE)
def test_regression_module_level_escapes_are_refused_at_load(top):
    if "coding" in top:
        source = top + policy(ALLOW_BODY)
    else:
        source = HEADER + top + "\n" + policy(ALLOW_BODY).removeprefix(HEADER)
    refused(source)


def test_unicode_spellings_of_reserved_names_are_the_names():
    # Python reads identifiers in NFKC: a full-width ｌｅｎ is len, ＿x is _x; both refused as such
    refused(policy("    ｌｅｎ = 1\n" + ALLOW_BODY))
    refused(policy("    ＿x = 1\n" + ALLOW_BODY))


# -- run time: unbounded work, huge values, fail-open returns ------------------------------------------------------

def test_attack_int_of_a_long_string_built_an_int_past_the_bound():
    p = policy_from_source(policy("    y = int('9' * 4000)\n    if y > 1:\n        return 1\n    return 0\n"))
    with pytest.raises(PolicyError, match=f"wider than {MAX_INT_BITS} bits"):
        p.evaluate({"x": 5})
    ok = policy_from_source(policy("    y = int('12')\n    if y > x:\n        return 1\n    return 0\n"))
    assert ok.evaluate({"x": 50}).allow is True and ok.evaluate({"x": 5}).allow is False


NESTED = policy("    for i in range(1000000):\n        for j in range(1000000):\n            pass\n" + ALLOW_BODY)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0, 0.0, 1e300, True, "0.05"])
def test_attack_a_policy_time_limit_that_is_no_limit(tmp_path, bad):
    # before: timeout_s = nan/inf/1e300 was accepted and NESTED held the gate (still running after 3 s)
    with pytest.raises(InputError, match="timeout_s"):
        policy_from_source(NESTED, timeout_s=bad)
    f = tmp_path / "slow.py"
    f.write_text(NESTED)
    with pytest.raises(InputError, match="timeout_s"):
        ToolCallGuard.from_config({"policy": str(f), "arguments": {"x": "x"}, "timeout_s": bad})


def test_a_finite_time_limit_stops_the_nested_loop_and_the_gate_refuses(tmp_path):
    f = tmp_path / "slow.py"
    f.write_text(NESTED)
    g = ToolCallGuard.from_config({"policy": str(f), "arguments": {"x": "x"}, "timeout_s": 0.05})
    out: dict = {}
    th = threading.Thread(target=lambda: out.setdefault("v", g.check(Context(run_id="r"), ToolCall("t", {"x": 1}))))
    th.start()
    th.join(5)
    assert not th.is_alive() and out["v"].decision is Decision.REJECT and "time limit" in out["v"].reason


RUNTIME_FAILURES = [
    "    y = min([])\n",                          # ValueError
    "    y = abs('a')\n",                         # TypeError
    "    if 'a' < x:\n        return 0\n",        # TypeError in a comparison
    "    y = x // (x - x)\n",                     # a zero divisor
    "    y = x % (0 - 1)\n",                      # a negative divisor (Nagini and CPython differ)
    "    y = [1, 2] * 2\n",                       # seq * n (Nagini and CPython differ)
    "    y = [True]\n",                           # a bool in a list
    "    y = 1\n    for i in range(300):\n        y = y * 2\n",   # an int past MAX_INT_BITS
    "    s = 'ab'\n    for i in range(20):\n        s = s + s\n",  # a string past MAX_SEQ
    "    return 0 == 0\n",                        # a bool from an int policy
    "    y = [0] * 1000000 * 1000000\n",         # loads (each * has a literal factor), refused before it builds
    "    if x > 0:\n        return 0\n",          # falls off the end for x == 0 (returns None to CPython)
    "    return -0 + 0 * 1 + (x - x) - 1\n",     # an int verdict -1 (no REASONS entry; not 0: denies)
]


@settings(max_examples=60, deadline=None)
@given(body=st.sampled_from(RUNTIME_FAILURES), x=st.sampled_from([0, 5, 50]))
def test_property_whatever_a_policy_raises_or_returns_the_gate_never_allows_unless_it_returned_zero(tmp_path_factory,
                                                                                                   body, x):
    d = tmp_path_factory.mktemp("p")
    f = d / "p.py"
    f.write_text(policy(body + "    return 0\n"))
    try:
        g = ToolCallGuard.from_config({"policy": str(f), "arguments": {"x": "x"}})
    except PolicyError:
        return  # refused at load: never runs
    v = g.check(Context(run_id="r"), ToolCall("t", {"x": x}))
    pol = g.bindings[0].policy
    try:
        res = pol.evaluate({"x": x})
    except Exception:  # noqa: BLE001
        assert v.decision is Decision.REJECT, (body, x, v)
        return
    assert (v.decision is Decision.ALLOW) == (res.code == 0 and res.allow is True), (body, x, v, res)


def test_the_policy_cannot_change_the_arguments_it_judges():
    src = policy("    xs = xs + [1]\n    ys = xs\n" + ALLOW_BODY, params="x: int, xs: List[int]")
    p = policy_from_source(src)
    arg = [7, 8]
    p.evaluate({"x": 1, "xs": arg})
    assert arg == [7, 8]


# -- verified means verified: the pinned digest is of the bytes that run --------------------------------------------

def test_a_symlink_swapped_after_pinning_refuses_to_load(tmp_path):
    good, evil = tmp_path / "good.py", tmp_path / "evil.py"
    good.write_text(policy(ALLOW_BODY))
    evil.write_text(policy("    return 0\n"))
    link = tmp_path / "policy.py"
    os.symlink(good, link)
    pinned = policy_from_source(good.read_text()).digest
    g = ToolCallGuard.from_config({"policy": str(link), "arguments": {"x": "x"}, "verified_digest": pinned})
    assert g.check(Context(run_id="r"), ToolCall("t", {"x": 50})).decision is Decision.REJECT
    link.unlink()
    os.symlink(evil, link)  # the file behind the configured path changes: another digest, refused
    with pytest.raises(PolicyError, match="refusing to run unverified code"):
        ToolCallGuard.from_config({"policy": str(link), "arguments": {"x": "x"}, "verified_digest": pinned})


@settings(max_examples=40, deadline=None)
@given(edit=st.sampled_from([("return 1", "return 0"), ("x > 3", "x > 99"), ("    if", "    pass\n    if"),
                             ("\n", "\n\n"), ("Requires(0 <= x", "Requires(-1 <= x"), ("int", "int ")]))
def test_property_any_edit_of_a_pinned_policy_refuses_to_load(tmp_path_factory, edit):
    d = tmp_path_factory.mktemp("pin")
    f = d / "p.py"
    src = policy(ALLOW_BODY)
    pinned = policy_from_source(src).digest
    f.write_text(src.replace(*edit, 1))
    with pytest.raises((PolicyError, InputError)):
        ToolCallGuard.from_config({"policy": str(f), "arguments": {"x": "x"}, "verified_digest": pinned})


def test_the_digest_is_of_the_text_that_runs_not_of_a_re_read(tmp_path, monkeypatch):
    # load_policy reads the file once: rewriting it after the read cannot change what was compiled
    from agentguard.policies import model

    f = tmp_path / "p.py"
    f.write_text(policy(ALLOW_BODY))
    real = model.policy_from_source

    def swap_then_load(source, **kw):
        f.write_text(policy("    return 0\n"))  # the attacker rewrites the file between read and compile
        return real(source, **kw)

    monkeypatch.setattr(model, "policy_from_source", swap_then_load)
    pol = model.load_policy(f)
    assert pol.evaluate({"x": 50}).allow is False and pol.digest == real(policy(ALLOW_BODY)).digest
    assert time.time() > 0


# -- a policy guard's tools are exact names: a glob covered nothing, and unknown_tool = "allow" let the call through ---

TRANSFER_POLICY = "examples/integrations/policies/transfer_limit.py"


@pytest.mark.parametrize("tools", [["transfer_*"], ["*transfer_funds"], ["transfer_fund?"], ["transfer_[f]unds"], [""],
                                   ["  "], ["transfer_funds", "pay_*"]])
def test_attack_a_glob_in_a_policy_guards_tools_covered_nothing(tools):
    # before: tools = ["transfer_*"] with unknown_tool = "allow" ALLOWED transfer_funds(amount=5000) over the limit
    with pytest.raises(InputError, match="not a tool name"):
        ToolCallGuard.from_config({"policy": TRANSFER_POLICY, "tools": tools, "arguments": {"amount": "amount"},
                                   "constants": {"limit": 1000}, "unknown_tool": "allow"})


@settings(max_examples=60, deadline=None)
@given(name=st.text(alphabet="abc_-*?[] ", min_size=0, max_size=8))
def test_property_a_policy_guard_loads_only_tools_it_can_cover(name):
    try:
        g = ToolCallGuard.from_config({"policy": TRANSFER_POLICY, "tools": [name], "arguments": {"amount": "amount"},
                                       "constants": {"limit": 1000}, "unknown_tool": "allow"})
    except InputError:
        assert name != "*" and (not name.strip() or any(c in name for c in "*?[]")), name
        return
    if name == "*":
        return
    assert g.check(Context(run_id="r"), ToolCall(name, {"amount": 5000})).decision is not Decision.ALLOW, name
