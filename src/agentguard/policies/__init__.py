"""Verified tool-call policies (VeriGuard, ../shared/papers/veriguard-verified-code-generation.txt).

Offline: a policy (Python over ints/bools with Nagini contracts) is validated by a sandbox
(:func:`validate`, :func:`load_policy`), tested with generated cases (:func:`run_tests`,
:func:`boundary_cases`, :func:`write_pytest`) and proved by the real Nagini verifier, out of process and
warm (:func:`verify`, :class:`NaginiVerifier`); an LLM can write it from a natural-language specification in
a refine loop fed with counterexamples (:func:`synthesize`).

Online: :class:`ToolCallGuard` extracts the policy's arguments from each tool call (an extractor:
:class:`MappingExtractor`, :class:`SpecExtractor` of declarative :class:`FieldRule`, :class:`LLMExtractor`,
or the one shipped with each library policy, :func:`library_extractor`), evaluates the policy and applies
an enforcement strategy (by name: TT, AB, TEH, CRP, ``CRP+TEH``; :func:`agentguard.core.strategy`), recording
every decision (:class:`JsonlAuditSink`, :class:`MemoryAuditSink`); :meth:`ToolCallGuard.from_config` builds
it from a configuration table (type ``policy`` in ``agentguard.toml``). :class:`ProvenanceGuard` checks where
a call's arguments came from (:class:`SourceDeclaration`); :class:`ToolRuleGuard` (:class:`ArgumentRule`) is
the declarative allow/deny guard of type ``tool-rules``; :class:`FlowGuard` (:class:`FlowRule`) holds the
sequence rules of type ``flow-rules``; :class:`NetworkGuard` (type ``network-rules``) refuses calls that would
connect to a host off the public internet; :class:`RunBudgetGuard` (type ``run-budget``) limits a run's calls taken
together (a total amount, a number of calls); :class:`SecretLeakGuard` (type ``secret-leak``) refuses keys, tokens and
PII sent to a third party. Nagini itself is imported only by the worker in its own venv; nothing here imports a
heavy dependency (detect-secrets and the PII libraries are imported when a scanner is built).

The rest stays public in its module, not here: the paper's strategy names ``TT``/``AB``/``TEH``/``CRP``
(:mod:`.guard`), the provenance ledger and its atoms (:mod:`.provenance`), ``Param``/``PolicyResult``
(:mod:`.model`), the synthesis and test-report records (:mod:`.synthesis`, :mod:`.testing`), the Nagini
output parser (:mod:`.nagini`).
"""

from .audit import JsonlAuditSink, MemoryAuditSink
from .budget import RunBudgetGuard
from .extract import ArgumentExtractor, FieldRule, LLMExtractor, MappingExtractor, SpecExtractor
from .flow import FlowGuard, FlowRule
from .guard import PolicyBinding, ToolCallGuard
from .library import extractor as library_extractor
from .library import library_path, shipped_policies
from .model import Policy, load_policy, policy_from_source
from .nagini import NaginiVerifier, VerificationError, VerificationResult, find_nagini_venv, verify
from .networks import NetworkGuard
from .provenance import SourceDeclaration
from .provenance_guard import ProvenanceGuard
from .rules import ArgumentRule, ToolRuleGuard
from .sandbox import PreconditionViolation, validate
from .secret_guard import SecretLeakGuard
from .synthesis import synthesize
from .testing import boundary_cases, run_tests, write_pytest

__all__ = [
    "ArgumentExtractor",
    "ArgumentRule",
    "FieldRule",
    "FlowGuard",
    "FlowRule",
    "JsonlAuditSink",
    "LLMExtractor",
    "MappingExtractor",
    "MemoryAuditSink",
    "NaginiVerifier",
    "NetworkGuard",
    "Policy",
    "PolicyBinding",
    "PreconditionViolation",
    "ProvenanceGuard",
    "RunBudgetGuard",
    "SecretLeakGuard",
    "SourceDeclaration",
    "SpecExtractor",
    "ToolCallGuard",
    "ToolRuleGuard",
    "VerificationError",
    "VerificationResult",
    "boundary_cases",
    "find_nagini_venv",
    "library_extractor",
    "library_path",
    "load_policy",
    "policy_from_source",
    "run_tests",
    "shipped_policies",
    "synthesize",
    "validate",
    "verify",
    "write_pytest",
]
