"""The synthesis loop with a scripted LLM and a stand-in verifier (the real-Nagini loop is in
test_nagini.py): stages, feedback, and what reaches the next prompt."""

import pytest

from agentguard.core.errors import InputError
from agentguard.llm import ScriptedClient
from agentguard.policies import VerificationError, VerificationResult, synthesize
from agentguard.policies.synthesis import extract_code

GOOD = '''Here is the policy:
```python
from nagini_contracts.contracts import *

POLICY_ID = "age-gate"
REASONS = ["allowed", "too young"]


def check(age: int) -> int:
    Requires(0 <= age and age <= 150)
    Ensures(Implies(age < 18, Result() == 1))
    Ensures(Implies(age >= 18, Result() == 0))
    if age < 18:
        return 1
    return 0
```'''
WRONG_AT_BOUNDARY = GOOD.replace("if age < 18:", "if age < 17:")
INVALID = "```python\nimport os\n```"


class FakeVerifier:
    """Stand-in with Nagini's interface: refuses the first source, accepts the rest."""

    def __init__(self):
        self.calls = []

    def verify_source(self, source, name):
        self.calls.append(source)
        if len(self.calls) == 1:
            e = VerificationError("Postcondition of check might not hold. (x.py@10.12--10.50).", 10, {"age": 150}, 0)
            return VerificationResult(name, "failed", (e,))
        return VerificationResult(name, "verified")


def test_invalid_then_test_failure_then_verified_and_feedback_reaches_prompts():
    client = ScriptedClient([INVALID, WRONG_AT_BOUNDARY, GOOD, GOOD])
    v = FakeVerifier()
    res = synthesize("Deny users under 18.", client, verifier=v, max_rounds=4)
    assert [r.stage for r in res.rounds] == ["invalid", "tests", "verification", "verified"]
    assert res.ok and res.verified and res.policy.id == "age-gate"
    p2 = client.prompts[1][-1]["content"]
    assert "import os is not allowed" in p2
    p3 = client.prompts[2][-1]["content"]
    assert "age=17" in p3 and "tests failed" in p3
    p4 = client.prompts[3][-1]["content"]
    assert "Counterexample: with age=150" in p4
    # the whole conversation is carried forward
    assert client.prompts[3][0]["role"] == "system" and "Deny users under 18." in client.prompts[3][1]["content"]
    assert len(v.calls) == 2


def test_gives_up_after_max_rounds():
    client = ScriptedClient([INVALID], cycle=True)
    res = synthesize("Deny users under 18.", client, verifier=FakeVerifier(), max_rounds=2)
    assert not res.ok and res.source is None and len(res.rounds) == 2


def test_without_verifier_result_is_marked_unverified():
    res = synthesize("Deny users under 18.", ScriptedClient([GOOD]), verifier=None)
    assert res.ok and not res.verified and res.rounds[0].stage == "tested"


def test_bad_arguments():
    with pytest.raises(InputError):
        synthesize("  ", ScriptedClient([GOOD]))
    with pytest.raises(InputError):
        synthesize("x", ScriptedClient([GOOD]), max_rounds=0)


def test_extract_code():
    assert extract_code("```py\nx = 1\n```").strip() == "x = 1"
    assert extract_code("x = 2").strip() == "x = 2"


# ---------------------------------------------------------------- issue 26: the contract is fixed by the spec

from agentguard.policies.conformance import contract_problems, load_spec  # noqa: E402
from agentguard.policies.library import library_path  # noqa: E402

M2W = load_spec("mind2web_sc")
_M2W_SRC = library_path("mind2web_sc").read_text()
EDITS_CONTRACT = "```python\n" + _M2W_SRC.replace("age < 18", "age <= 18") + "```"       # code AND contract
USES_ASSUME = "```python\n" + _M2W_SRC.replace("    if category == CAR", "    Assume(False)\n    if category == CAR", 1) + "```"
BODY_ONLY = "```python\n" + _M2W_SRC[_M2W_SRC.index("    if category == CAR"):] + "```"


def test_a_candidate_that_edits_the_contract_is_refused_and_told_the_contract_is_fixed():
    client = ScriptedClient([EDITS_CONTRACT, USES_ASSUME, BODY_ONLY])
    v = FakeVerifier()
    v.calls.append("skip the first refusal")  # accept the first source sent to the verifier
    res = synthesize(M2W, client, verifier=v, max_rounds=3)
    assert [r.stage for r in res.rounds] == ["contract-edited", "invalid", "verified"]
    assert res.ok and res.verified and res.contract_fixed
    assert "age <= 18" in res.rounds[0].feedback and "fixed by the specification" in res.rounds[0].feedback
    assert "Assume" in res.rounds[1].feedback
    assert len(v.calls) == 2  # neither refused candidate reached the verifier
    assert contract_problems(res.source, M2W) == []
    # no feedback invites editing the contract
    for r in res.rounds:
        assert "or the contract" not in r.feedback


def test_fixed_contract_prompt_holds_the_rule_and_header():
    client = ScriptedClient([BODY_ONLY])
    res = synthesize(M2W, client, verifier=None, max_rounds=1)
    assert res.ok and not res.verified and res.rounds[0].stage == "tested"
    user = res.rounds[0].prompt[-1]["content"]
    assert "User aged under 18 cannot book a hotel" in user
    assert all(c.split("(", 1)[1][:30] in user for c in M2W.contract)


def test_verification_feedback_does_not_invite_contract_edits():
    client = ScriptedClient([GOOD, GOOD])
    res = synthesize("Deny users under 18.", client, verifier=FakeVerifier(), max_rounds=2)
    assert res.rounds[0].stage == "verification"
    assert "contract is fixed" in res.rounds[0].feedback and not res.contract_fixed


class _Truthy:
    def __bool__(self):
        return True


class _NotAProof:
    """A stand-in verifier whose answer is truthy everywhere but says no proof happened."""

    errors: tuple = ()
    output = ""
    counterexample = None

    def __init__(self, status, verified):
        self.status, self.verified = status, verified

    def verify_source(self, source, name):
        return self


@pytest.mark.parametrize("status,verified", [("crashed", True), ("timeout", 1), ("verified", _Truthy()),
                                             ("verified", "yes"), ("invalid", True)])
def test_only_a_verified_status_with_an_exact_true_counts_as_verified(status, verified):
    """A verifier that timed out, crashed or answers a truthy stand-in never makes the result 'verified'."""
    res = synthesize("Deny users under 18.", ScriptedClient([GOOD]), verifier=_NotAProof(status, verified),
                     max_rounds=1)
    assert res.verified is False and res.rounds[-1].stage == "verification"


VACUOUS = GOOD.replace('''    Ensures(Implies(age < 18, Result() == 1))
    Ensures(Implies(age >= 18, Result() == 0))
    if age < 18:
        return 1
    return 0''', '''    Ensures(Result() >= 0)
    return 0''')


def test_a_vacuous_contract_never_reaches_the_verifier():
    """``Ensures(Result() >= 0)`` over an allow-everything body is provable; it is a test failure instead."""
    v = FakeVerifier()
    res = synthesize("Deny users under 18.", ScriptedClient([VACUOUS]), verifier=v, max_rounds=1)
    assert not res.ok and res.rounds[0].stage == "tests" and "never forbids allowing" in res.rounds[0].feedback
    assert v.calls == []
