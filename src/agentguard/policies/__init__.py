"""Verified tool-call policies (VeriGuard, ../shared/papers/veriguard-verified-code-generation.txt).

Offline: a policy (Python over ints/bools with Nagini contracts) is validated by a sandbox, tested with
generated cases and proved by the real Nagini verifier (out of process, warm); an LLM can write it from a
natural-language specification in a refine loop fed with counterexamples. Online: :class:`ToolCallGuard`
extracts the policy's arguments from each tool call, evaluates the policy and applies an enforcement
strategy, recording every decision. Nagini itself is imported only by the worker in its own venv.
"""

from .audit import AuditRecord, AuditSink, JsonlAuditSink, MemoryAuditSink
from .extract import ArgumentExtractor, LLMExtractor, MappingExtractor
from .guard import AB, CRP, TEH, TT, PolicyBinding, ToolCallGuard, strategy
from .library import library_path, shipped_policies
from .model import Param, Policy, PolicyResult, load_policy, policy_from_source
from .nagini import NaginiVerifier, VerificationError, VerificationResult, find_nagini_venv, parse_nagini_output
from .sandbox import PreconditionViolation, validate
from .synthesis import SynthesisResult, SynthesisRound, synthesize
from .testing import TestReport, boundary_cases, run_tests, write_pytest

__all__ = [
    "AB",
    "ArgumentExtractor",
    "AuditRecord",
    "AuditSink",
    "CRP",
    "JsonlAuditSink",
    "LLMExtractor",
    "MappingExtractor",
    "MemoryAuditSink",
    "NaginiVerifier",
    "Param",
    "Policy",
    "PolicyBinding",
    "PolicyResult",
    "PreconditionViolation",
    "SynthesisResult",
    "SynthesisRound",
    "TEH",
    "TT",
    "TestReport",
    "ToolCallGuard",
    "VerificationError",
    "VerificationResult",
    "boundary_cases",
    "find_nagini_venv",
    "library_path",
    "load_policy",
    "parse_nagini_output",
    "policy_from_source",
    "run_tests",
    "shipped_policies",
    "strategy",
    "synthesize",
    "validate",
    "write_pytest",
]
