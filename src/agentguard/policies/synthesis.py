"""The offline synthesis loop of VeriGuard (section 3.2): natural-language specification -> LLM writes a
policy with Nagini contracts -> validation (sandbox) -> testing (generated cases) -> formal verification
(Nagini) -> on failure the error and counterexample go back to the LLM -> repeat, up to ``max_rounds``.

With a :class:`~agentguard.policies.conformance.Spec` (issue 26) the contract is fixed *before* the LLM
writes anything: the prompt gives the rule and the module header made from the specification (constants,
signature, ``Requires``/``Ensures``), the LLM writes only the implementation (a body, or the whole module with
the header unchanged, plus helper functions if it likes), and a candidate that edits the contract, the
signature or a constant of the specification is refused (stage ``contract-edited``) before any test, as is a
candidate using a refused construct such as ``Assume`` (stage ``invalid``). Feedback never invites the LLM
to change the contract. With plain text the LLM writes the contract too, and nothing ties it to the rule:
the result says so (``contract_fixed=False``).

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
from .conformance import Spec, contract_problems, policy_header
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


FIXED_PROMPT = '''You write the implementation of a safety policy for LLM agents that the Nagini verifier must prove.
The module header below is FIXED: its constants, the signature of the entry point and its Requires/Ensures
contract come from the specification and must not change (a reply that changes them is refused). Write the
body of the entry point under the contract (plain if/return code over its parameters), and helper functions
above it if you need them. Return the whole module in one ```python code block.
Rules: no imports other than the header's; no attribute access, no I/O, no exec/eval, no names starting with
"_"; only if/return/assignments/for loops (each loop needs Invariant(...)); no while loops, no recursion;
never Assume, Inhale, Exhale, Fold, Unfold or any construct that adds a fact without proof.'''


@dataclass
class SynthesisRound:
    """One round: the prompt sent, the code received, the stage that failed (or 'verified') and feedback."""

    index: int
    prompt: list[dict[str, str]]
    reply: str
    code: str
    stage: str  # invalid | contract-edited | tests | verification | verified | tested (no verifier)
    feedback: str = ""
    verification: Any = None


@dataclass
class SynthesisResult:
    ok: bool
    verified: bool
    source: str | None
    policy: Policy | None
    rounds: list[SynthesisRound] = field(default_factory=list)
    #: True when the contract came from a specification (the LLM could not change it)
    contract_fixed: bool = False


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
    lines.append("Fix the code so that it meets the contract; the contract is fixed and may not change. "
                 "Return the whole module.")
    return "\n".join(lines)


def splice(reply_code: str, spec: Spec) -> str:
    """The candidate module: the reply as is when it defines the entry point, else the specification's
    header with the reply as the entry point's body (indented when it is not)."""
    if f"def {spec.entry}(" in reply_code:
        return reply_code
    body = [ln if ln.startswith((" ", "\t")) or not ln.strip() else "    " + ln for ln in reply_code.splitlines()]
    return policy_header(spec) + "\n".join(body).rstrip() + "\n"


def synthesize(spec: str | Spec, client: Any, *, verifier: Any = None, max_rounds: int = 3, test_examples: int = 200,
               extra_instructions: str = "", complete_options: dict[str, Any] | None = None) -> SynthesisResult:
    """Run the refine loop; return the first policy that passes every stage (or the failure record).

    ``spec``: a :class:`~agentguard.policies.conformance.Spec` (the contract is fixed from it) or plain text
    (the LLM writes the contract too). ``complete_options`` go to every ``client.complete`` call
    (``max_tokens``, ``temperature``)."""
    fixed = isinstance(spec, Spec)
    if fixed:
        header = policy_header(spec)
        messages: list[dict[str, str]] = [
            {"role": "system", "content": FIXED_PROMPT + ("\n" + extra_instructions if extra_instructions else "")},
            {"role": "user", "content": f"Rule:\n{spec.rule.strip()}\n\nFixed module header:\n```python\n{header}```\n"
                                        f"Write the implementation of {spec.entry}."},
        ]
    else:
        if not isinstance(spec, str) or not spec.strip():
            raise InputError("the specification is empty")
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT + ("\n" + extra_instructions if extra_instructions else "")},
            {"role": "user", "content": f"Specification:\n{spec.strip()}\n\nWrite the policy module."},
        ]
    if max_rounds < 1:
        raise InputError("max_rounds must be at least 1")
    result = SynthesisResult(False, False, None, None, contract_fixed=fixed)
    for k in range(1, max_rounds + 1):
        prompt = [dict(m) for m in messages]
        reply = client.complete(prompt, **(complete_options or {}))
        code = extract_code(reply)
        if fixed:
            code = splice(code, spec)  # type: ignore[arg-type]
        rnd = SynthesisRound(k, prompt, reply, code, "invalid")
        result.rounds.append(rnd)
        try:
            policy = policy_from_source(code, path=f"<synthesized round {k}>")
        except PolicyError as exc:
            rnd.feedback = f"The module was refused before any test: {exc}. Return the whole corrected module."
        else:
            problems = contract_problems(code, spec) if fixed else []  # type: ignore[arg-type]
            if problems:
                rnd.stage = "contract-edited"
                rnd.feedback = ("The candidate was refused: " + "; ".join(problems) + ". The constants, the signature "
                                "and the Requires/Ensures contract are fixed by the specification; keep them exactly "
                                "as given and change only the implementation. Return the whole module.")
                messages = messages + [{"role": "assistant", "content": reply}, {"role": "user", "content": rnd.feedback}]
                continue
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
                if getattr(vr, "status", None) == "verified" and vr.verified is True:  # a truthy stand-in is no proof
                    rnd.stage = "verified"
                    result.ok, result.verified, result.source, result.policy = True, True, code, policy
                    return result
                rnd.stage = "verification"
                rnd.feedback = _feedback_verification(vr)
        messages = messages + [{"role": "assistant", "content": reply}, {"role": "user", "content": rnd.feedback}]
    return result
