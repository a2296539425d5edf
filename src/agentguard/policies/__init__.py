"""Verified tool-call policies (VeriGuard, ../shared/papers/veriguard-verified-code-generation.txt).

Offline: a policy (Python over ints/bools with Nagini contracts) is validated by a sandbox
(:func:`validate`, :func:`load_policy`), tested with generated cases (:func:`run_tests`,
:func:`boundary_cases`, :func:`write_pytest`) and proved by the real Nagini verifier, out of process and
warm (:func:`verify`, :class:`NaginiVerifier`); an LLM can write it from a natural-language specification in
a refine loop fed with counterexamples (:func:`synthesize`).

Online: :class:`ToolCallGuard` extracts the policy's arguments from each tool call (an extractor:
:class:`MappingExtractor`, :class:`SpecExtractor` of declarative :class:`FieldRule`, :class:`LLMExtractor`,
or the one shipped with each library policy, :func:`library_extractor`), evaluates the policy and applies
an enforcement strategy (:func:`strategy`: TT, AB, TEH, CRP), recording every decision.
:meth:`ToolCallGuard.from_config` builds it from a configuration table (type ``policy`` in
``agentguard.toml``). Nagini itself is imported only by the worker in its own venv; nothing here imports a
heavy dependency.
"""

from .audit import AuditRecord, AuditSink, JsonlAuditSink, MemoryAuditSink
from .extract import ArgumentExtractor, FieldRule, LLMExtractor, MappingExtractor, SpecExtractor
from .guard import AB, CRP, TEH, TT, PolicyBinding, ToolCallGuard, strategy
from .library import extractor as library_extractor
from .library import library_path, shipped_policies
from .model import Param, Policy, PolicyResult, load_policy, policy_from_source
from .nagini import (NaginiVerifier, VerificationError, VerificationResult, find_nagini_venv, parse_nagini_output,
                     verify)
from .provenance import (TRUSTED, UNTRUSTED, USER, ProvenanceLedger, SourceDeclaration, atoms, canonical, dates,
                         entities, strings_of, trust_level, word_form)
from .provenance_guard import ProvenanceGuard
from .sandbox import PreconditionViolation, validate
from .synthesis import SynthesisResult, SynthesisRound, synthesize
from .testing import TestFailure, TestReport, boundary_cases, check_case, run_tests, write_pytest

__all__ = [
    "AB",
    "ArgumentExtractor",
    "AuditRecord",
    "AuditSink",
    "CRP",
    "FieldRule",
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
    "ProvenanceGuard",
    "ProvenanceLedger",
    "SourceDeclaration",
    "SpecExtractor",
    "SynthesisResult",
    "SynthesisRound",
    "TEH",
    "TRUSTED",
    "TT",
    "TestFailure",
    "TestReport",
    "ToolCallGuard",
    "UNTRUSTED",
    "USER",
    "VerificationError",
    "VerificationResult",
    "atoms",
    "boundary_cases",
    "canonical",
    "check_case",
    "dates",
    "entities",
    "find_nagini_venv",
    "library_extractor",
    "library_path",
    "load_policy",
    "parse_nagini_output",
    "policy_from_source",
    "run_tests",
    "shipped_policies",
    "strategy",
    "strings_of",
    "synthesize",
    "trust_level",
    "validate",
    "verify",
    "word_form",
    "write_pytest",
]
