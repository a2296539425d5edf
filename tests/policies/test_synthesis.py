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
