"""Session 19 red team: "the contract proven is not the rule enforced" between a tool call and a verified policy.

Nagini proves the policy over Python's ``int``, ``bool`` and ``List[int]`` (its model: unbounded ints, bools, lists
of boxed ints). The values a tool call carries are whatever the caller built: floats (NaN, inf, -0.0), bools where
ints are expected (``True + 1``), ``int``/``str``/``list`` subclasses whose ``__eq__``, ``__hash__``, ``__gt__``,
``__contains__`` or ``__iter__`` lie, 70-bit ints, the same argument under two spellings. The gate passes the
policy only values of exactly the proved types (``model._checked_argument``: exact ``int`` of at most 64 bits,
exact ``bool``, a private copy of an exact ``list`` of exact ints) and refuses everything else, so the value the
policy computes on is one the proof is about. Properties below: whatever the value, the gate allows only where the
policy called directly on that value allows AND the proved contract holds of it; on plain values in the domain
the two agree (no over-refusal).

Hole found and fixed here: two spellings of one argument (``{"blocked": [999], "BLOCKED": [E(7)]}``, ``E`` an int
subclass whose ``__eq__`` says True) were compared with ``!=``, which CPython answers by asking the subclass inside
the list: the spellings were "the same", the policy saw ``[999]`` and a case-insensitive binder could hand the tool
the other. They are now compared with exact types (``extract._same_value``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.types import Context, Decision, ToolCall
from agentguard.policies import ToolCallGuard, policy_from_source
from agentguard.policies.extract import _same_value

GATE_POLICY = '''from nagini_contracts.contracts import *
from typing import List

POLICY_ID = "payment-gate"
LIMIT = 500
REASONS = ["allowed", "amount over the limit for an untrusted payee", "payee blocked"]


def check(amount: int, trusted: bool, payee: int, blocked: List[int]) -> int:
    Requires(Acc(list_pred(blocked), 1/2))
    Requires(0 <= amount and amount <= 1000000)
    Requires(0 <= payee and payee <= 1000)
    Ensures(Acc(list_pred(blocked), 1/2))
    Ensures(Implies(amount > LIMIT and not trusted, Result() != 0))
    Ensures(Implies(payee in blocked, Result() != 0))
    if amount > LIMIT and not trusted:
        return 1
    if payee in blocked:
        return 2
    return 0
'''
PARAMS = ("amount", "trusted", "payee", "blocked")


def _direct() -> Any:
    """The policy's function as plain CPython runs it (contracts as no-ops): "the policy called directly"."""
    ns: dict[str, Any] = {}
    stubs = ("def Requires(x): pass\ndef Ensures(x): pass\ndef Acc(*a): return True\ndef list_pred(x): return x\n"
             "def Implies(a, b): return (not a) or b\ndef Result(): return 0\n")
    exec(stubs + GATE_POLICY.split("\n", 2)[2], ns)  # noqa: S102 - the test's own policy text
    return ns["check"]


DIRECT = _direct()


def contract_holds(amount: Any, trusted: Any, payee: Any, blocked: Any, result: int) -> bool:
    """The proved contract, read on plain values (the only ones the gate may have passed)."""
    return (not (amount > 500 and not trusted) or result != 0) and (payee not in blocked or result != 0)


class LyingInt(int):
    def __eq__(self, other: object) -> bool: return True          # noqa: E704
    def __ne__(self, other: object) -> bool: return False         # noqa: E704
    def __hash__(self) -> int: return 0                           # noqa: E704
    def __gt__(self, other: object) -> bool: return False         # noqa: E704
    def __lt__(self, other: object) -> bool: return False         # noqa: E704
    def __ge__(self, other: object) -> bool: return True          # noqa: E704
    def __le__(self, other: object) -> bool: return True          # noqa: E704
    def __bool__(self) -> bool: return True                       # noqa: E704


class LyingStr(str):
    def __eq__(self, other: object) -> bool: return True          # noqa: E704
    def __hash__(self) -> int: return 0                           # noqa: E704


class LyingList(list):
    def __contains__(self, item: object) -> bool: return False    # noqa: E704
    def __iter__(self): return iter([])                           # noqa: E704
    def __len__(self) -> int: return 0                            # noqa: E704


HOSTILE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([-0.0, 0.0, 5.0, 501.0, 1e308, math.nan, math.inf]),
    st.booleans(), st.integers(-(2**70), 2**70), st.sampled_from([2**64, -(2**63) - 1, 2**63]),
    st.text(max_size=4), st.builds(LyingStr, st.text(max_size=3)), st.builds(LyingInt, st.integers(-5, 2000)),
    st.none(), st.lists(st.one_of(st.integers(-2, 1001), st.booleans(), st.builds(LyingInt, st.integers(0, 9))), max_size=4),
    st.builds(LyingList, st.lists(st.integers(0, 1000), max_size=3)), st.tuples(st.integers(0, 9)),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
PLAIN = {"amount": st.integers(0, 1_000_000) | st.integers(400, 600), "trusted": st.booleans(),
         "payee": st.integers(0, 1000) | st.integers(0, 9), "blocked": st.lists(st.integers(0, 1000) | st.integers(0, 9), max_size=5)}


def canonical(name: str, v: Any) -> bool:
    """A value of exactly the type the proof is about, in the proved domain."""
    if name == "trusted":
        return type(v) is bool
    if name == "blocked":
        return type(v) is list and all(type(x) is int and abs(x) < 2**63 for x in v)
    lo, hi = (0, 1_000_000) if name == "amount" else (0, 1000)
    return type(v) is int and lo <= v <= hi


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> ToolCallGuard:
    f: Path = tmp_path_factory.mktemp("gate") / "payment_gate.py"
    f.write_text(GATE_POLICY, encoding="utf-8")
    return ToolCallGuard.from_config({"policy": str(f), "arguments": {p: p for p in PARAMS}, "tools": ["pay"]})


def decide(gate: ToolCallGuard, args: dict[str, Any]) -> bool:
    return gate.check(Context(run_id="r"), ToolCall("pay", args)).decision is Decision.ALLOW


def direct_allows(values: dict[str, Any]) -> bool:
    try:
        return DIRECT(**values) == 0
    except Exception:  # noqa: BLE001
        return False


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_the_gate_allows_only_values_the_proof_is_about_and_only_where_the_policy_allows(gate, data) -> None:
    args = {p: data.draw(st.one_of(PLAIN[p], HOSTILE), label=p) for p in PARAMS}
    twin = data.draw(st.sampled_from([None, *PARAMS]), label="second spelling")
    if twin is not None:   # the same argument under a second spelling a case-insensitive binder reads
        args[twin.upper()] = data.draw(st.one_of(st.just(args[twin]), PLAIN[twin], HOSTILE), label="twin value")
    allowed = decide(gate, args)
    if allowed:
        spellings = [{**args, twin: args[twin.upper()]}] if twin is not None else []
        for values in [{p: args[p] for p in PARAMS}, *({p: s[p] for p in PARAMS} for s in spellings)]:
            assert all(canonical(p, values[p]) for p in PARAMS), values
            assert direct_allows(values) and contract_holds(*(values[p] for p in PARAMS), 0), values


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_on_plain_values_in_the_domain_the_gate_answers_as_the_policy_called_directly(gate, data) -> None:
    values = {p: data.draw(PLAIN[p], label=p) for p in PARAMS}
    assert decide(gate, values) == direct_allows(values)
    assert decide(gate, values) == policy_from_source(GATE_POLICY).evaluate(values).allow


# -- each attack tried, kept: the gate refuses, the policy called directly would have allowed -------------------------

ATTACKS = {
    "int subclass that compares below the limit": {"amount": LyingInt(10**6)},
    "float amount (NaN compares False to the limit)": {"amount": math.nan},
    "float amount inf": {"amount": math.inf},
    "float -0.0": {"amount": -0.0},
    "bool amount (True + 1 arithmetic)": {"amount": True},
    "int 1 for the trusted flag": {"trusted": 1},
    "str subclass for the trusted flag": {"trusted": LyingStr("yes")},
    "70-bit amount": {"amount": 2**70},
    "list subclass hiding its blocked payee": {"payee": 7, "blocked": LyingList([7])},
    "int subclass payee equal to nothing blocked": {"payee": LyingInt(7), "blocked": [8]},
    "blocked list holding a lying int": {"payee": 7, "blocked": [LyingInt(999)]},
    "tuple for the list": {"payee": 7, "blocked": (8,)},
    "two spellings, lying int inside the list": {"payee": 7, "blocked": [999], "BLOCKED": [LyingInt(7)]},
    "two spellings, bool and int": {"amount": 1, "AMOUNT": True},
    "two spellings, -0.0 and 0.0": {"amount": 0, "AMOUNT": -0.0},
    "two spellings, NaN twice": {"amount": math.nan, "AMOUNT": math.nan},
}
BASE = {"amount": 10, "trusted": False, "payee": 1, "blocked": []}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_each_attack_is_refused_by_the_gate(gate, name: str) -> None:
    assert decide(gate, BASE)  # the plain call is allowed: the refusal below is the attack's
    assert not decide(gate, {**BASE, **ATTACKS[name]}), name


def test_two_spellings_are_compared_with_exact_types() -> None:
    assert not _same_value([999], [LyingInt(7)]) and [999] == [LyingInt(7)]   # CPython: "equal"
    assert not _same_value(math.nan, math.nan) and not _same_value(1, True) and not _same_value((1,), [1])
    assert _same_value({"a": [1, "x"]}, {"a": [1, "x"]}) and _same_value(-0.0, 0.0)
    nested: Any = []
    for _ in range(40):
        nested = [nested]
    assert not _same_value(nested, nested)   # deeper than 32: refused, not compared


# -- the function and the argument order the gate calls are the ones proved -----------------------------------------

def test_arguments_reach_the_policy_by_name_whatever_order_it_declares_them() -> None:
    """The gate passes values by parameter name: a policy declaring (payee, blocked, trusted, amount) gets the same
    values as GATE_POLICY, never a positional shuffle of what the extractor produced."""
    swapped = GATE_POLICY.replace("def check(amount: int, trusted: bool, payee: int, blocked: List[int])",
                                  "def check(payee: int, blocked: List[int], trusted: bool, amount: int)")
    assert swapped != GATE_POLICY
    a, b = policy_from_source(GATE_POLICY), policy_from_source(swapped)
    for values in ({"amount": 900, "trusted": False, "payee": 3, "blocked": []},
                   {"amount": 10, "trusted": True, "payee": 3, "blocked": [3]},
                   {"amount": 10, "trusted": False, "payee": 4, "blocked": [3]}):
        assert a.evaluate(values).code == b.evaluate(values).code == DIRECT(**values)


def test_a_module_constant_is_the_same_on_every_call() -> None:
    """``ys = L; ys += [x]`` extends L in place in CPython (the next call would see another L); the run time reads
    ``+=`` as ``ys = ys + [x]`` (a new list), as Nagini does, so the constant the proof read never changes."""
    src = ("from nagini_contracts.contracts import *\n\nL = [1, 2]\n\ndef check(x: int) -> int:\n"
           "    Requires(0 <= x and x <= 10)\n    Ensures(Implies(x > 5, Result() != 0))\n"
           "    ys = L\n    ys += [x]\n    if x > 5:\n        return 1\n    return len(L) - 2\n")
    pol = policy_from_source(src)
    assert [pol.evaluate({"x": 1}).code for _ in range(5)] == [0] * 5
    assert pol.code is not None and pol.code.namespace["L"] == [1, 2]
