"""Runs the REAL Nagini verifier (one warm worker for the whole module, one batch).

Needs .nagini-venv (scripts/setup_nagini.sh, which `make test` runs first). Skipped with a message on a
machine without it, but FAILS under CI=true: CI must prove every shipped policy.
"""

import os

import pytest

from agentguard.llm import ScriptedClient
from agentguard.policies import NaginiVerifier, find_nagini_venv, load_policy, shipped_policies, synthesize

pytestmark = pytest.mark.slow

WRONG_HOTEL = '''from nagini_contracts.contracts import *

POLICY_ID = "hotel-age-wrong"
HOTEL = 3
REASONS = ["allowed", "User aged under 18 cannot book a hotel"]


def check(category: int, age: int) -> int:
    Requires(0 <= category and category <= 6)
    Requires(0 <= age and age <= 150)
    Ensures(Implies(category == HOTEL and age < 18, Result() == 1))
    if category == HOTEL and age < 17:
        return 1
    return 0
'''

# Round 1 of the synthesis test: wrong only at amount == 777777, which the generated tests do not hit,
# so it reaches Nagini, whose counterexample must then appear in the round-2 prompt.
SPEC = "Deny (return 1) every payment whose amount exceeds 500000; allow (return 0) every other payment."
ROUND1 = '''```python
from nagini_contracts.contracts import *

POLICY_ID = "payment-limit"
REASONS = ["allowed", "payment above the limit"]


def check(amount: int) -> int:
    Requires(0 <= amount and amount <= 1000000)
    Ensures(Implies(amount > 500000, Result() == 1))
    Ensures(Implies(amount <= 500000, Result() == 0))
    if amount * 3 == 2333331:
        return 0
    if amount > 500000:
        return 1
    return 0
```'''
ROUND2 = ROUND1.replace("    if amount * 3 == 2333331:\n        return 0\n", "")


@pytest.fixture(scope="module")
def verifier():
    if find_nagini_venv() is None:
        msg = "Nagini venv missing: run scripts/setup_nagini.sh"
        if os.environ.get("CI") == "true":
            pytest.fail(msg + " (CI must verify the shipped policies)")
        pytest.skip(msg)
    with NaginiVerifier() as v:
        yield v


def test_every_shipped_policy_verifies(verifier):
    paths = shipped_policies()
    assert len(paths) >= 3
    results = verifier.verify_many(paths)
    for r in results:
        assert r.verified, r.describe()
        load_policy(r.path)  # and the sandbox accepts it


def test_synthesis_feeds_nagini_counterexample_back(verifier):
    client = ScriptedClient([ROUND1, ROUND2])
    res = synthesize(SPEC, client, verifier=verifier, max_rounds=3)
    assert [r.stage for r in res.rounds] == ["verification", "verified"]
    assert res.ok and res.verified
    assert res.rounds[0].verification.counterexample.inputs == {"amount": 777777}
    round2_prompt = client.prompts[1][-1]["content"]
    assert "amount=777777" in round2_prompt and "Counterexample" in round2_prompt
    assert res.policy(amount=777777).allow is False


class _Shared:
    """Hands the module's warm verifier to the CLI without letting the CLI close it."""

    def __init__(self, v):
        self.v = v
        self.startup_seconds = v.startup_seconds

    def __enter__(self):
        return self.v

    def __exit__(self, *exc):
        return None


def test_wrong_policy_rejected_with_counterexample_through_the_cli(verifier, monkeypatch, tmp_path, capsys):
    """`agentguard verify` on a deliberately wrong policy: exit 1 and Nagini's counterexample, structured."""
    import json

    import agentguard.policies.nagini as nagini_mod
    from agentguard.cli import main

    monkeypatch.setattr(nagini_mod, "NaginiVerifier", lambda *a, **k: _Shared(verifier))
    wrong = tmp_path / "hotel_wrong.py"
    wrong.write_text(WRONG_HOTEL)
    with pytest.raises(SystemExit) as ei:
        main(["verify", "--no-tests", "--json", str(wrong)])
    assert ei.value.code == 1
    (r,) = json.loads(capsys.readouterr().out)
    assert r["status"] == "failed"
    (err,) = [e for e in r["errors"] if e["inputs"]]
    assert err["inputs"] == {"category": 3, "age": 17}  # the only counterexample: hotel, 17 years old
    assert err["result"] == 0 and err["line"] == 11
    assert "Postcondition of check might not hold" in err["message"]


# One deliberately wrong twin per shipped policy: the shipped source with ONE line changed (so the twin
# stays in step with the policy), each of which Nagini must reject with a counterexample.
TWINS = {
    "mind2web_sc": ("    if category == HOTEL and age < 18:\n", "    if category == HOTEL and age < 17:\n"),
    "asb_declared_tools": ("    if tool in declared:\n", "    if tool in declared or tool == -1:\n"),
    "agentdojo_grounding": ("    if not targets_trusted:\n", "    if not targets_trusted and kind == SEND:\n"),
    # the twin is policy version 2: a booking's dates not checked (the rule now says they are)
    "agentdojo_provenance": ("    return kind == WRITE or kind == SEND or kind == ACCOUNT\n",
                             "    return kind == SEND or kind == ACCOUNT\n"),
}


def test_every_shipped_policy_has_a_wrong_twin_that_fails_with_a_counterexample(verifier):
    assert set(TWINS) == {p.stem for p in shipped_policies()}
    for name, (old, new) in sorted(TWINS.items()):
        src = next(p for p in shipped_policies() if p.stem == name).read_text()
        assert src.count(old) == 1, name
        r = verifier.verify_source(src.replace(old, new), f"{name}_wrong_twin")
        assert not r.verified, name
        assert r.counterexample is not None, (name, r.describe())


# Issue 26: mutants that the old, code-restating contracts let through are now rejected by Nagini itself
# (code-only edits; the same edits in code AND contract are refused earlier, by the specification check).
ISSUE_26_CODE_MUTANTS = {
    "deny every hotel": ("mind2web_sc", "    if category == HOTEL and age < 18:", "    if category == HOTEL:"),
    "hotel off-by-one": ("mind2web_sc", "    if category == HOTEL and age < 18:", "    if category == HOTEL and age <= 18:"),
    "JOB under 18": ("mind2web_sc", "    if category == JOB and age < 15:", "    if category == JOB and age < 18:"),
}


def test_issue_26_mutants_are_rejected_by_nagini(verifier):
    for name, (stem, old, new) in ISSUE_26_CODE_MUTANTS.items():
        src = next(p for p in shipped_policies() if p.stem == stem).read_text()
        assert src.count(old) == 1, name
        r = verifier.verify_source(src.replace(old, new), f"issue26_{stem}")
        assert not r.verified, (name, r.describe())


# Session 13: Nagini 1.2.0 proves // and % with the solver's Euclidean division, CPython floors. With a negative
# divisor they differ (7 // -2 is -4 to CPython, -3 to the proof): both policies below are "verified" while the run
# time would allow x=7, y=-2, which the contract denies. The sandbox now refuses a divisor that is not positive.
_EUCLID = ("from nagini_contracts.contracts import *\n\ndef check(x: int, y: int) -> int:\n"
           "    Requires(-10 <= x and x <= 10)\n    Requires(-10 <= y and y <= -1)\n"
           "    Ensures(Implies(x == 7 and y == -2, Result() != 0))\n    if x OP y == V:\n        return 1\n"
           "    return 0\n")


def test_a_proof_on_euclidean_division_is_not_run_with_floor_division(verifier):
    from agentguard.core.errors import PolicyError
    from agentguard.policies import policy_from_source

    for op, v in (("//", "-3"), ("%", "1")):
        src = _EUCLID.replace("OP", op).replace("V", v)
        assert verifier.verify_source(src, "euclid").verified, op   # Nagini's reading: 7 div -2 = -3, 7 mod -2 = 1
        with pytest.raises(PolicyError, match="positive int divisor"):
            policy_from_source(src).evaluate({"x": 7, "y": -2})    # CPython's would allow (-4, -1): refused


# Session 18: constructs on which Nagini 1.2.0's model and CPython disagree. Each attack below is VERIFIED by Nagini
# (its contract denies tool == 1) while CPython's run would allow tool == 1; the sandbox refuses each, at load or at
# run time (agentguard.policies.nagini_semantics).
_S18_PURE = "@Pure\ndef flagged(x: int) -> int:\n    if x > 5:\n        return 1\n\n\n"
_S18_HEAD = ("from nagini_contracts.contracts import *\n\n" + _S18_PURE + "def check(tool: int) -> int:\n"
             "    Requires(0 <= tool and tool <= 10)\n")
_S18_DENY_ONE = "    Ensures(Implies(tool == 1, Result() != 0))\n"
S18_ATTACKS = {
    # list___mul__: element i of seq * n is seq[i // n] to Nagini; ([1, 0] * 2)[1] is 1 to it, 0 to CPython
    "repetition": _S18_DENY_ONE + "    codes = [tool, 0]\n    twice = codes * 2\n    return twice[1]\n",
    "repetition-display": _S18_DENY_ONE + "    twice = [tool, 0] * 2\n    return twice[1]\n",
    # a bool box is never the int box 1: 1 in [True, 2] is False to Nagini, True to CPython
    # (tool + 0: an int parameter may be a bool to Nagini, never to the guard, which passes exact ints only)
    "bool-element": _S18_DENY_ONE + "    t = tool + 0\n    if t in [True, 2]:\n        return 0\n    return 1\n",
    "bool-item": _S18_DENY_ONE + "    t = tool > 0\n    if t in [1, 2]:\n        return 0\n    return 1\n",
    # int___int__ returns its argument: int(True) stays the bool box
    "int-of-bool": _S18_DENY_ONE + "    t = int(tool > 0)\n    if t in [1]:\n        return 0\n    return 1\n",
    # unpacking is sequential to Nagini (the right side is read again after each target): after a, b = b, a it
    # proves a == b == the old b; CPython swaps (b is 0, allow)
    "swap": _S18_DENY_ONE + "    a = 0\n    b = tool\n    a, b = b, a\n    return b\n",
    # a @Pure function falling off its end: Nagini reads flagged(x) as 1 for every x, CPython returns None
    "pure-fall-through": _S18_DENY_ONE + "    if flagged(tool) == 1 and tool == 1:\n        return 1\n    return 0\n",
    # the contract means nothing to Nagini (tool mod -2 is never -1), "deny odd tools" to a Python reader
    "euclid-contract": "    Ensures(Implies(tool % -2 == -1, Result() != 0))\n    return 0\n",
}


def test_session_18_attacks_are_verified_by_nagini_and_refused_by_the_sandbox(verifier):
    from agentguard.core.errors import PolicyError
    from agentguard.policies import policy_from_source

    for name, body in S18_ATTACKS.items():
        src = _S18_HEAD + body
        r = verifier._prove(src, f"s18_{name.replace('-', '_')}")
        assert r.verified, (name, r.describe())                 # the proof holds, of Nagini's reading
        try:
            policy_from_source(src)
            loads = True
        except PolicyError:
            loads = False
        # the one verification path: refused at load, never verified; loaded, verified (and refused at run time below)
        assert verifier.verify_source(src, "s18").verified == loads, name
        with pytest.raises(PolicyError):                         # CPython's reading never runs
            policy_from_source(src).evaluate({"tool": 1})


def test_session_18_agreements_are_proved_by_nagini(verifier):
    """The regression list of test_nagini_semantics: the value the sandbox computes is the one Nagini proves."""
    from .test_nagini_semantics import AGREED

    src = "from nagini_contracts.contracts import *\nfrom typing import List\n\n"
    for i, (body, proved, _sandbox) in enumerate(AGREED):
        if proved is not None:
            src += (f"def f{i}(tool: int) -> int:\n    Requires(tool == 0)\n    Ensures(Result() == {proved})\n"
                    + body + "\n\n")
    r = verifier._prove(src, "s18_agreements")   # Nagini alone: the file has no entry point ``check``
    assert r.verified, r.describe()


# Session 18, tried and refused by Nagini itself (translation fails: no proof, whatever the sandbox would run)
S18_NAGINI_REFUSES = {
    "chained comparison": "    if 3 < tool < 5:\n        return 1\n    return 0\n",
    "range with a step": "    r = 0\n    for i in range(10, 0, -1):\n        r = r + i\n    return r\n",
    "in on a string": "    if 'b' in 'abc':\n        return 1\n    return 0\n",
    "string indexing": "    s = 'abc'\n    if s[-1] == 'c':\n        return 1\n    return 0\n",
    "int * list": "    ys = 2 * [tool, 0]\n    return ys[1]\n",
}


def test_session_18_constructs_nagini_refuses(verifier):
    for name, body in S18_NAGINI_REFUSES.items():
        src = ("from nagini_contracts.contracts import *\n\ndef check(tool: int) -> int:\n"
               "    Requires(0 <= tool and tool <= 10)\n    Ensures(Result() >= 0)\n" + body)
        r = verifier._prove(src, "s18_refused")   # Nagini alone (Result() >= 0 is vacuous: verify_source refuses it)
        assert r.status == "invalid", (name, r.describe())


# Session 19: NaginiVerifier.verify_source is the one verification path. Each vacuous contract of
# test_nagini_one_path.VACUOUS is proved by Nagini itself of a policy that allows everything (the hole: a direct
# verify() call reported it verified); the verifier now answers "vacuous" without asking Nagini.
def test_session_19_vacuous_contracts_are_proved_by_nagini_and_refused_by_the_verifier(verifier):
    from .test_nagini_one_path import UNREACHABLE, VACUOUS, _bool_verdict, policy

    for name, (params, contract) in sorted(VACUOUS.items()):
        src = policy(params, contract, UNREACHABLE.get(name, "    return 0\n"))
        if "bool verdict" in name:
            src = _bool_verdict(src)
        if "List[int]" not in params:   # Nagini needs list permissions in the contract for a list parameter
            raw = verifier._prove(src, "s19_vacuous")
            assert raw.verified, (name, raw.describe())            # Nagini: "verified", of a policy that constrains nothing
        r = verifier.verify_source(src, "s19_vacuous")
        assert r.status == "vacuous" and not r.verified, (name, r.describe())


# A policy whose proof explodes (each independent ``if`` doubles Silicon's paths): no answer in time is no proof.
_EXPLODING = ("from nagini_contracts.contracts import *\n\ndef check(x: int) -> int:\n"
              "    Requires(0 <= x and x <= 1000000)\n    Ensures(Implies(x > 999999, Result() != 0))\n    r = 0\n"
              + "".join(f"    if x % {p} == 1:\n        r = r + {i + 1}\n" for i, p in enumerate(
                  (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97)))
              + "    if x > 999999:\n        return 1\n    if r == 123456789:\n        return 1\n    return 0\n")


def test_session_19_a_proof_that_times_out_is_not_verified():
    from agentguard.policies import policy_from_source

    policy_from_source(_EXPLODING)   # the guard would run it
    with NaginiVerifier(request_timeout_s=20) as v:
        r = v.verify_source(_EXPLODING, "s19_exploding")
        assert r.status == "timeout" and not r.verified, r.describe()


def test_session_19_agreements_and_refusals_are_nagini_s(verifier):
    """test_nagini_semantics_s19: every AGREED_S19 body is proved of exactly the value CPython computes, and none of
    its negation (one file each: one postcondition error per function); of each NAGINI_REFUSES_S19 body Nagini proves
    neither the value CPython computes nor its negation."""
    from agentguard.policies import policy_from_source

    from .test_nagini_semantics_s19 import AGREED_S19, HEAD, NAGINI_REFUSES_S19, probe

    def batch(rel: str) -> str:
        src = HEAD
        for i, (body, value) in enumerate(sorted(AGREED_S19.items())):
            lines = "\n".join("    " + ln for ln in body.split("\n"))
            src += f"def f{i}(tool: int) -> int:\n    Requires(tool == 0)\n    Ensures(Result() {rel} {value})\n{lines}\n\n\n"
        return src

    proved = verifier._prove(batch("=="), "s19_agreed")
    assert proved.verified, proved.describe()
    negated = verifier._prove(batch("!="), "s19_negated")
    assert negated.status == "failed" and len({e.line for e in negated.errors}) == len(AGREED_S19), negated.describe()
    for name, body in sorted(NAGINI_REFUSES_S19.items()):
        value = policy_from_source(probe(body, "== 0")).evaluate({"tool": 0}).code   # CPython's value
        for rel in (f"== {value}", f"!= {value}"):
            assert not verifier._prove(probe(body, rel), "s19_refused").verified, (name, rel)


def test_session_19_the_gate_policy_of_the_red_team_properties_is_verified(verifier):
    """test_guard_verified_redteam checks the gate against the contract of GATE_POLICY: Nagini proves it."""
    from .test_guard_verified_redteam import GATE_POLICY

    r = verifier.verify_source(GATE_POLICY, "payment_gate")
    assert r.verified, r.describe()


def test_session_19_a_call_chain_deeper_than_the_bound_is_proved_by_nagini_and_refused_by_the_verifier(verifier):
    from .test_nagini_semantics_s19 import chain

    src = chain(40)   # 41 functions: past MAX_CALL_DEPTH (32); CPython's limit is reached by 1,100
    assert verifier._prove(src, "s19_chain").verified
    r = verifier.verify_source(src, "s19_chain")
    assert r.status == "invalid" and "call chain deeper than" in r.describe()
