"""The offline synthesis loop of VeriGuard (section 3.2): natural-language specification -> LLM writes a
policy with Nagini contracts -> validation (sandbox) -> testing (generated cases) -> formal verification
(Nagini) -> on failure the error and counterexample go back to the LLM -> repeat, up to ``max_rounds``.

Works with any agentguard.llm client (``complete(messages) -> str``): OpenAICompatClient against an
endpoint, ScriptedClient in tests. ``verifier`` is a :class:`~agentguard.policies.nagini.NaginiVerifier`
(or anything with ``verify_source(text, name) -> VerificationResult``); with ``verifier=None`` the loop
stops after testing and the result says the policy is NOT verified.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import InputError, PolicyError
from .model import Policy, policy_from_source
from .testing import run_tests

__all__ = ["SynthesisResult", "SynthesisRound", "synthesize"]  # SYSTEM_PROMPT, extract_code: helpers

SYSTEM_PROMPT = '''You write safety policies for LLM agents as Python functions that the Nagini verifier can prove.
Write ONE Python module, in a ```python code block, of this shape:

from nagini_contracts.contracts import *

POLICY_ID = "short-id"
POLICY_VERSION = "1"
SOME_ENUM_VALUE = 3                       # enums are int constants
REASONS = ["allowed", "reason for code 1", ...]   # text per verdict code

def check(param: int, other: bool) -> int:   # returns 0 to allow, k > 0 to deny with REASONS[k]
    Requires(0 <= param and param <= 6)      # the domain of every int parameter
    Ensures(Implies(<violation>, Result() != 0))   # the safety property, stated as a contract
    Ensures(Implies(<no violation>, Result() == 0)) # and that nothing else is denied
    ...plain if/return code...

Rules: parameters are int, bool or List[int] only (string facts are computed by the caller and passed in as
bools); no imports other than nagini_contracts.contracts and typing; no attribute access, no I/O, no
exec/eval, no names starting with "_"; only if/return/assignments/loops; every loop needs Invariant(...);
multiply only by int literals; no while loops and no recursion: for loops only over a parameter, a constant
or range(...) of literals, names and len(name); no % on strings.'''


@dataclass
class SynthesisRound:
    """One round: the prompt sent, the code received, the stage that failed (or 'verified') and feedback."""

    index: int
    prompt: list[dict[str, str]]
    reply: str
    code: str
    stage: str  # invalid | tests | verification | verified | tested (no verifier)
    feedback: str = ""
    verification: Any = None


@dataclass
class SynthesisResult:
    ok: bool
    verified: bool
    source: str | None
    policy: Policy | None
    rounds: list[SynthesisRound] = field(default_factory=list)


_CODE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


def extract_code(reply: str) -> str:
    """The first fenced code block of the reply, else the whole reply."""
    m = _CODE.search(reply or "")
    return (m.group(1) if m else (reply or "")).strip() + "\n"


def _feedback_verification(vr: Any) -> str:
    lines = [f"Nagini could not verify the policy ({vr.status})."]
    for e in vr.errors:
        lines.append(f"- {e.message}")
        if e.inputs:
            args = ", ".join(f"{k}={v!r}" for k, v in e.inputs.items())
            ret = f" and the function returns {e.result!r}" if e.result is not None else ""
            lines.append(f"  Counterexample: with {args}{ret}, the contract is violated.")
    lines.append("Fix the code (or the contract, if it does not state the specification) and return the whole module.")
    return "\n".join(lines)


def synthesize(spec: str, client: Any, *, verifier: Any = None, max_rounds: int = 3, test_examples: int = 200,
               extra_instructions: str = "") -> SynthesisResult:
    """Run the refine loop; return the first policy that passes every stage (or the failure record)."""
    if not spec or not spec.strip():
        raise InputError("the specification is empty")
    if max_rounds < 1:
        raise InputError("max_rounds must be at least 1")
    messages: list[dict[str, str]] = [
        {"role": "system", "content": SYSTEM_PROMPT + ("\n" + extra_instructions if extra_instructions else "")},
        {"role": "user", "content": f"Specification:\n{spec.strip()}\n\nWrite the policy module."},
    ]
    result = SynthesisResult(False, False, None, None)
    for k in range(1, max_rounds + 1):
        prompt = [dict(m) for m in messages]
        reply = client.complete(prompt)
        code = extract_code(reply)
        rnd = SynthesisRound(k, prompt, reply, code, "invalid")
        result.rounds.append(rnd)
        try:
            policy = policy_from_source(code, path=f"<synthesized round {k}>")
        except PolicyError as exc:
            rnd.feedback = f"The module was refused before any test: {exc}. Return the whole corrected module."
        else:
            report = run_tests(policy, examples=test_examples)
            if not report.passed:
                rnd.stage = "tests"
                rnd.feedback = ("The generated tests failed:\n" + "\n".join("- " + f.describe() for f in report.failures[:5])
                                + "\nFix the code and return the whole module.")
            elif verifier is None:
                rnd.stage = "tested"
                result.ok, result.verified, result.source, result.policy = True, False, code, policy
                return result
            else:
                vr = verifier.verify_source(code, policy.id)
                rnd.verification = vr
                if vr.verified:
                    rnd.stage = "verified"
                    result.ok, result.verified, result.source, result.policy = True, True, code, policy
                    return result
                rnd.stage = "verification"
                rnd.feedback = _feedback_verification(vr)
        messages = messages + [{"role": "assistant", "content": reply}, {"role": "user", "content": rnd.feedback}]
    return result
