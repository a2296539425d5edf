"""Parsing Nagini's reports (texts captured from Nagini 1.2.0 runs) and finding its venv."""

import pytest

from agentguard.core.errors import DependencyError
from agentguard.policies import NaginiVerifier
from agentguard.policies.nagini import parse_nagini_output

FAILED = """
Verification failed
Errors:
Postcondition of allow might not hold. Assertion Implies(((category == 3) and (age < 18)), (not Result())) might not hold. (bad.py@5.12--5.61).
Old store:
  age -> 17,
  category -> 3
Old heap: Empty.
Current store:
  age -> 17,
  category -> 3,
  Result() -> True
Current heap: Empty.

Verification took 16.04 seconds."""

OK = "\nVerification successful\nVerification took 23.14 seconds."

INVALID = """Translation failed
Type error: Unsupported operand types for + ("int" and "str") (/tmp/p.py@7.0)
"""


def test_parse_failure_with_counterexample():
    r = parse_nagini_output(FAILED, "bad.py")
    assert r.status == "failed" and not r.verified and r.seconds == pytest.approx(16.04)
    (e,) = r.errors
    assert e.line == 5 and e.inputs == {"age": 17, "category": 3} and e.result is True
    assert r.counterexample is e
    assert "counterexample: age=17, category=3 -> returns True" in r.describe()


def test_parse_success_and_invalid():
    r = parse_nagini_output(OK, "ok.py")
    assert r.verified and r.seconds == pytest.approx(23.14) and r.errors == ()
    r = parse_nagini_output(INVALID, "p.py")
    assert r.status == "invalid" and r.errors[0].line == 7 and "Type error" in r.errors[0].message


def test_parse_garbage_is_a_crash_not_a_pass():
    r = parse_nagini_output("java.lang.OutOfMemoryError", "x.py")
    assert r.status == "crashed" and not r.verified


def test_missing_venv_is_a_clear_dependency_error(tmp_path):
    with pytest.raises(DependencyError, match="agentguard setup nagini"):
        NaginiVerifier(tmp_path / "nowhere")


@pytest.mark.parametrize("text", [
    OK + "\nVerification failed\nErrors:\nAssert might not hold. (p.py@3.0).",
    "Translation failed\nNot supported: Verification successful\nVerification successful\n",
    "\nVerification crashed: RuntimeError: JVM\nVerification successful\n",
])
def test_success_next_to_a_failure_or_crash_is_not_verified(text):
    """A success line anywhere used to win over a failure or a crash in the same report."""
    r = parse_nagini_output(text, "p.py")
    assert not r.verified and r.status in ("crashed", "failed", "invalid")


@pytest.mark.parametrize("text", ["", "Verification took 3.0 seconds.", "Verification successful!",
                                  "  verification successful", "Verification timed out"])
def test_no_success_line_no_proof(text):
    assert parse_nagini_output(text, "p.py").status == "crashed"
