"""Session 19: every caller of the verifier gets the same checks (``NaginiVerifier.verify_source`` is the one path).

The hole: ``NaginiVerifier.verify()`` called directly (the library API, synthesis with a custom loop, a service)
reported a vacuous contract as verified; only ``agentguard verify`` refused it. Nagini proves ``Requires(False)``,
contradictory preconditions, a precondition no argument the guard passes satisfies, and ``Ensures`` that hold for
the allow verdict everywhere, of ANY policy, the one that allows everything included. Now the verifier loads the
text as the guard would run it and checks the contract for a witness (an accepted argument on which every
``Requires`` holds and an ``Ensures`` forbids allowing) before Nagini is asked: no witness is ``vacuous``, a text
the sandbox refuses is ``invalid``; neither is ``verified``.

The "worker" here proves every file it is handed, as Nagini does for a vacuous contract, so a ``verified`` below is
the verifier's own judgement (``test_nagini.py`` runs the real Nagini on the same attacks).
"""

from __future__ import annotations

import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.policies.nagini import NaginiVerifier, VerificationResult

HEAD = "from nagini_contracts.contracts import *\nfrom typing import List\n\n"
ALLOW_ALL = "    return 0\n"


def policy(params: str, contract: str, body: str = ALLOW_ALL) -> str:
    return HEAD + f"def check({params}) -> int:\n" + textwrap.indent(textwrap.dedent(contract).strip(), "    ") + "\n" + body


class ProvesEverything(NaginiVerifier):
    """A stand-in worker that answers 'verified' for every file (Nagini's answer to a vacuous contract)."""

    def __init__(self) -> None:  # no venv, no JVM
        self._tmp = tempfile.TemporaryDirectory(prefix="agentguard-nagini-test-")
        self._n = 0
        self.asked: list[str] = []

    def _verify_file(self, p: Path) -> VerificationResult:
        self.asked.append(p.read_text(encoding="utf-8"))
        return VerificationResult(str(p), "verified", output="Verification successful")


#: each contract is proved by Nagini of the allow-everything body above (those in UNREACHABLE: of a body that denies
#: only where no argument the guard passes reaches); none constrains the policy the guard runs
VACUOUS = {
    "Requires(False)": ("x: int", "Requires(False)\nEnsures(Implies(x > 5, Result() != 0))"),
    "contradictory Requires": ("x: int", "Requires(x > 5)\nRequires(x < 3)\nEnsures(Implies(x > 5, Result() != 0))"),
    "contradiction in one Requires": ("x: int", "Requires(0 <= x and x <= 10 and x > 10)\n"
                                                "Ensures(Result() != 0)"),
    "contradictory bool": ("flag: bool", "Requires(flag and not flag)\nEnsures(Implies(flag, Result() != 0))"),
    "no 64-bit int satisfies it": ("x: int", "Requires(x > 18446744073709551616)\nEnsures(Result() != 0)"),
    "no int the guard passes": ("x: int", "Requires(x < -18446744073709551616)\nEnsures(Result() == 1)"),
    "Ensures(Result() == Result())": ("x: int", "Requires(0 <= x and x <= 10)\nEnsures(Result() == Result())"),
    "Ensures(Result() >= 0)": ("x: int", "Requires(0 <= x and x <= 10)\nEnsures(Result() >= 0)"),
    "Implies(False, ...)": ("x: int", "Requires(0 <= x and x <= 10)\nEnsures(Implies(False, Result() != 0))"),
    "constraint only outside the Requires": ("x: int", "Requires(0 <= x and x <= 10)\n"
                                                       "Ensures(Implies(x > 10, Result() != 0))"),
    "constraint only where Requires fail": ("x: int", "Requires(x == 3)\nEnsures(Implies(x == 4, Result() != 0))"),
    "list longer than the guard passes": ("xs: List[int]", "Requires(len(xs) > 10000)\nEnsures(Result() != 0)"),
    "bool verdict, Ensures(Result() or not Result())": ("x: int", "Requires(0 <= x and x <= 10)\n"
                                                                 "Ensures(Result() or not Result())"),
}

#: preconditions satisfiable to Nagini (unbounded ints, lists) but by no argument the guard passes: Nagini proves the
#: contract of these bodies, and the guard refuses every call (PreconditionViolation): the proof covers no call
UNREACHABLE = {
    "no 64-bit int satisfies it": "    if x > 18446744073709551616:\n        return 1\n    return 0\n",
    "no int the guard passes": "    if x < -18446744073709551616:\n        return 1\n    return 0\n",
    "list longer than the guard passes": "    if len(xs) > 10000:\n        return 1\n    return 0\n",
}


def _bool_verdict(src: str) -> str:
    return src.replace(") -> int:", ") -> bool:").replace("    return 0\n", "    return True\n")


@pytest.mark.parametrize("name", sorted(VACUOUS))
def test_a_vacuous_contract_is_not_verified_by_a_direct_call(name: str, tmp_path: Path) -> None:
    params, contract = VACUOUS[name]
    src = policy(params, contract)
    if "bool verdict" in name:
        src = _bool_verdict(src)
    v = ProvesEverything()
    r = v.verify_source(src, "vacuous")
    assert r.status == "vacuous" and not r.verified, (name, r.describe())
    assert "never forbids allowing" in r.describe()
    f = tmp_path / "vacuous.py"
    f.write_text(src, encoding="utf-8")
    assert [x.status for x in (v.verify(f), *v.verify_many([f]))] == ["vacuous", "vacuous"]
    assert v.asked == []   # Nagini is never asked: its "verified" would mean nothing


def test_a_contract_with_a_witness_goes_to_nagini_and_is_verified() -> None:
    v = ProvesEverything()
    src = policy("x: int", "Requires(0 <= x and x <= 10)\nEnsures(Implies(x > 5, Result() != 0))",
                 "    if x > 5:\n        return 1\n    return 0\n")
    r = v.verify_source(src, "limit")
    assert r.verified and v.asked == [src]


def test_the_policy_function_the_guard_calls_is_the_one_checked() -> None:
    """``entry``: the contract checked is the entry point's; a helper with a real contract does not vouch for it."""
    src = (HEAD + "def helper(x: int) -> int:\n    Requires(0 <= x and x <= 10)\n    Ensures(Implies(x > 5, Result() != 0))\n"
           "    if x > 5:\n        return 1\n    return 0\n\n\n"
           "def check(x: int) -> int:\n    Requires(0 <= x and x <= 10)\n    Ensures(Result() >= 0)\n    return 0\n")
    v = ProvesEverything()
    assert v.verify_source(src, "p").status == "vacuous"
    assert v.verify_source(src, "p", entry="helper").verified
    assert v.verify_source(src, "p", entry="missing").status == "invalid"


SANDBOX_REFUSED = {
    # session 18: proved by Nagini (its reading), refused by the sandbox: the guard never runs it
    "swap": "    Ensures(Implies(x == 1, Result() != 0))\n    a = 0\n    b = x\n    a, b = b, a\n    return b\n",
    "attribute": "    Ensures(Implies(x == 1, Result() != 0))\n    if x.bit_length() > 0:\n        return 0\n    return 1\n",
    "default argument": None,
    "float": "    Ensures(Implies(x == 1, Result() != 0))\n    if x == 1.0:\n        return 1\n    return 0\n",
}


@pytest.mark.parametrize("name", sorted(SANDBOX_REFUSED))
def test_a_text_the_guard_would_not_run_is_not_verified(name: str) -> None:
    body = SANDBOX_REFUSED[name]
    if body is None:
        src = HEAD + "def check(x: int = 1) -> int:\n    Requires(0 <= x and x <= 10)\n    Ensures(Implies(x == 1, Result() != 0))\n    return 1\n"
    else:
        src = HEAD + "def check(x: int) -> int:\n    Requires(0 <= x and x <= 10)\n" + body
    v = ProvesEverything()
    r = v.verify_source(src, "refused")
    assert r.status == "invalid" and not r.verified and "not a policy the guard runs" in r.describe()
    assert v.asked == []


# -- the property: verified exactly when a witness exists (brute force over the small domain) ------------------------

CMP = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
       ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


@settings(max_examples=150, deadline=None)
@given(lo=st.integers(-20, 20), width=st.integers(-3, 25), extra=st.sampled_from(sorted(CMP)), c=st.integers(-25, 25),
       guard=st.sampled_from(sorted(CMP)), k=st.integers(-25, 25), mod=st.booleans(), verdict=st.sampled_from(["int", "bool"]))
def test_verified_exactly_when_an_accepted_argument_makes_the_contract_forbid_allowing(lo, width, extra, c, guard, k,
                                                                                       mod, verdict):
    hi = lo + width
    second = f"x % 3 {extra} {c % 3}" if mod else f"x {extra} {c}"
    deny = "Result() != 0" if verdict == "int" else "not Result()"
    src = policy("x: int", f"Requires({lo} <= x and x <= {hi})\nRequires({second})\nEnsures(Implies(x {guard} {k}, {deny}))")
    if verdict == "bool":
        src = _bool_verdict(src)
    v = ProvesEverything()
    r = v.verify_source(src, "generated")
    holds = (lambda x: CMP[extra](x % 3, c % 3)) if mod else (lambda x: CMP[extra](x, c))
    witness = any(holds(x) and CMP[guard](x, k) for x in range(lo, hi + 1))
    assert r.verified == witness, (src, r.describe())
    assert r.status == ("verified" if witness else "vacuous")
    assert bool(v.asked) == witness


# -- a proof that does not come back is not a proof ------------------------------------------------------------------

SILENT_WORKER = """import json, sys, time
sys.stdout.write(json.dumps({"ready": True}) + "\\n"); sys.stdout.flush()
for line in sys.stdin:
    time.sleep(3600)   # a Silicon run that never ends
"""


def _silent_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    worker = tmp_path / "silent_worker.py"
    worker.write_text(SILENT_WORKER)
    py = venv / "bin" / "python"
    py.write_text(f"#!/bin/sh\nexec {sys.executable} {worker}\n")
    py.chmod(0o755)
    return venv


def test_a_proof_that_times_out_is_not_verified_and_the_worker_is_killed(tmp_path: Path) -> None:
    src = policy("x: int", "Requires(0 <= x and x <= 10)\nEnsures(Implies(x > 5, Result() != 0))",
                 "    if x > 5:\n        return 1\n    return 0\n")
    with NaginiVerifier(_silent_venv(tmp_path), request_timeout_s=1.0, startup_timeout_s=30) as v:
        proc = v._proc
        assert proc is not None
        t0 = time.perf_counter()
        r = v.verify_source(src, "slow")
        took = time.perf_counter() - t0
        assert r.status == "timeout" and not r.verified and "not verified" in r.describe()
        assert took < 10            # not retried: one timeout, not two
        assert proc.poll() is not None   # killed (its whole process group: the solver too)
        with pytest.raises(ProcessLookupError):
            os.killpg(proc.pid, 0)


def test_a_contract_too_slow_to_check_is_not_verified(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Requires calling a slow @Pure function: the witness search stops at its budget and the result fails closed."""
    import agentguard.policies.testing as testing

    monkeypatch.setattr(testing, "WITNESS_BUDGET_S", 0.3)
    src = (HEAD + "@Pure\ndef slow(x: int) -> int:\n    r = 0\n    for i in range(1000000):\n        r = r + 1\n    return r\n\n\n"
           + policy("x: int", "Requires(0 <= x and x <= 10)\nRequires(slow(x) > 5)\nEnsures(Implies(x > 5, Result() != 0))",
                    "    if x > 5:\n        return 1\n    return 0\n").replace(HEAD, ""))
    v = ProvesEverything()
    t0 = time.perf_counter()
    r = v.verify_source(src, "slow_contract")
    assert r.status == "vacuous" and not r.verified and v.asked == []
    assert time.perf_counter() - t0 < 3
