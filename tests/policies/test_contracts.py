"""Issue 26: no escape hatch in a policy file. Every Nagini construct that adds a fact without proof (or
switches a proof obligation off) is refused at load with a one-line error naming it; so is every contract
placed where the run time would evaluate a stand-in instead of what Nagini proves.

The first case is the issue's forgery: a hidden bug (``age * 3 == 39`` denies nothing else) plus
``Assume(False)``, which Nagini would report verified.
"""

from __future__ import annotations

import pytest

from agentguard.core.errors import PolicyError
from agentguard.policies import load_policy, policy_from_source, shipped_policies
from agentguard.policies.contracts import ESCAPE_CONSTRUCTS

HEAD = "from nagini_contracts.contracts import *\n\n"

FORGED = HEAD + '''def check(category: int, age: int) -> int:
    Requires(0 <= category and category <= 6)
    Requires(0 <= age and age <= 150)
    Ensures(Implies(category == 3 and age < 18, Result() == 3))
    Assume(False)
    if category == 3 and age * 3 == 39:
        return 3
    return 0
'''

BODY = '''def check(x: int) -> int:
    Requires(0 <= x and x <= 10)
    Ensures(Result() == 0)
{stmt}
    return 0
'''

# construct -> a policy using it (each a full module that would otherwise load)
ESCAPES = {
    "Assume": FORGED,
    "Assume-named-import": "from nagini_contracts.contracts import Assume, Requires, Ensures, Result\n\n"
                           + BODY.format(stmt="    Assume(x == 0)"),
    "Assume-in-contract": HEAD + BODY.format(stmt="    Assert(Implies(Assume(False), True))"),
    "Assume-as-value": HEAD + BODY.format(stmt="    y = Assume"),
    "Inhale": HEAD + BODY.format(stmt="    Inhale(False)"),
    "Exhale": HEAD + BODY.format(stmt="    Exhale(True)"),
    "Fold": HEAD + BODY.format(stmt="    Fold(list_pred(x))"),
    "Unfold": HEAD + BODY.format(stmt="    Unfold(list_pred(x))"),
    "Unfolding": HEAD + BODY.format(stmt="    y = Unfolding(list_pred(x), x)"),
    "Predicate": HEAD + "@Predicate\ndef p(x: int) -> bool:\n    return x == 0\n\n" + BODY.format(stmt="    pass"),
    "Trusted": HEAD + "@Trusted\n" + BODY.format(stmt="    pass"),
    "ContractOnly": HEAD + "@ContractOnly\n" + BODY.format(stmt="    pass"),
    "Opaque": HEAD + "@Opaque\n@Pure\ndef p(x: int) -> bool:\n    return x == 0\n\n" + BODY.format(stmt="    pass"),
    "Reveal": HEAD + BODY.format(stmt="    y = Reveal(x)"),
    "Ghost": HEAD + "@Ghost\ndef g(x: int) -> int:\n    return x\n\n" + BODY.format(stmt="    pass"),
    "Inline": HEAD + "@Inline\ndef g(x: int) -> int:\n    return x\n\n" + BODY.format(stmt="    pass"),
    "Refute": HEAD + BODY.format(stmt="    Refute(x == 11)"),
    "Exsures": HEAD + BODY.format(stmt="    Exsures(int, True)"),
    "Let": HEAD + BODY.format(stmt="    y = Let(x, int, x)"),
    "Wildcard": HEAD + BODY.format(stmt="    Assert(Wildcard(x))"),
    "Rd": HEAD + BODY.format(stmt="    Assert(Rd(x))"),
    "ARP": HEAD + BODY.format(stmt="    y = ARP()"),
    "Low": HEAD + BODY.format(stmt="    Assert(Low(x))"),
    "Declassify": HEAD + BODY.format(stmt="    Declassify(x)"),
    "MaySet": HEAD + BODY.format(stmt="    Assert(MaySet(x, 'f'))"),
}

# contracts outside the places where Nagini checks them and the run time honours them
MISPLACED = {
    "Forall-in-code": (HEAD + BODY.format(stmt="    if Forall(x, x):\n        return 1"), "inside a contract"),
    "Result-in-code": (HEAD + BODY.format(stmt="    y = Result()"), "inside a contract"),
    "Old-in-Requires": (HEAD + "def check(x: int) -> int:\n    Requires(Old(x) == x)\n    Ensures(Result() == 0)\n"
                        "    return 0\n", "Ensures/Invariant/Assert"),
    "Requires-after-code": (HEAD + "def check(x: int) -> int:\n    Ensures(Result() == 0)\n    y = 1\n"
                            "    Requires(x == 0)\n    return 0\n", "top of a function body"),
    "Ensures-in-branch": (HEAD + BODY.format(stmt="    if x == 0:\n        Ensures(Result() == 1)"),
                          "top of a function body"),
    "Requires-in-expression": (HEAD + BODY.format(stmt="    y = Requires(x == 0)"), "top of a function body"),
    "Invariant-outside-loop": (HEAD + BODY.format(stmt="    Invariant(x == 0)"), "top of a loop body"),
    "Pure-as-value": (HEAD + BODY.format(stmt="    y = Pure"), "decorator"),
}


def _refusal(source: str) -> str:
    with pytest.raises(PolicyError) as info:
        policy_from_source(source, path="escape.py")
    msg = str(info.value)
    assert "\n" not in msg and "refused" in msg, msg
    return msg


@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_escape_construct_is_refused_at_load(case):
    construct = case.split("-")[0]
    msg = _refusal(ESCAPES[case])
    assert construct in msg, msg


@pytest.mark.parametrize("case", sorted(MISPLACED))
def test_misplaced_contract_is_refused_at_load(case):
    source, why = MISPLACED[case]
    assert why in _refusal(source)


def test_every_listed_escape_construct_has_a_test():
    tested = {c.split("-")[0] for c in ESCAPES}
    untested = set(ESCAPE_CONSTRUCTS) - tested - {"Inline", "GhostReturns", "LowVal", "LowEvent", "LowExit",
                                                   "AllLow", "PreservesLow", "TerminatesSif", "MayCreate"}
    assert not untested, untested
    # the remaining names share a refusal path with a tested sibling: check them directly too
    for name in ESCAPE_CONSTRUCTS:
        assert name in _refusal(HEAD + BODY.format(stmt=f"    y = {name}"))


def test_the_forged_policy_without_assume_still_loads():
    """The refusal is about Assume, not the bug: without it the file loads (and Nagini would reject it)."""
    pol = policy_from_source(FORGED.replace("    Assume(False)\n", ""), path="forged.py")
    assert pol.evaluate({"category": 3, "age": 13}).code == 3
    assert pol.evaluate({"category": 3, "age": 16}).allow  # the hidden bug the contract catches


@pytest.mark.parametrize("path", shipped_policies(), ids=lambda p: p.stem)
def test_shipped_policies_use_no_escape_construct(path):
    load_policy(path)
