"""agentguard: keep LLM agents safe while they run.

The top level re-exports the core vocabulary (sorted ``__all__``, enforced by a test) and, lazily,
the main public names of each mechanism, so one import line reaches everything::

    from agentguard import ProactiveGuard, ToolCallGuard, ThresholdMonitor, SafetyFilter, check

A mechanism's name is served by a module-level ``__getattr__`` from the literal table ``_LAZY``
(name -> package): its package (``agentguard.predictive``, ``agentguard.calibration``,
``agentguard.policies``, ``agentguard.control``, ``agentguard.testing``) is imported on first use
only, so ``import agentguard`` imports no mechanism, and no name here imports torch or stormpy (those
stay lazy inside the mechanisms).
"""

from __future__ import annotations

from typing import Any

from .core import (
    AgentGuardError,
    BaseGuard,
    Context,
    Decision,
    DependencyError,
    GuaranteeError,
    Guard,
    GuardError,
    GuardStack,
    GuardTimeout,
    InputError,
    LifecycleError,
    ModelError,
    Outcome,
    ParseError,
    Pipeline,
    PolicyError,
    RunMemory,
    Step,
    ToolCall,
    Trace,
    Verdict,
    fail_closed,
    read_traces,
    write_traces,
)
from .core.lazy import LazyExports

__version__ = "0.1.0"

# name -> the package that exports it (each package lists it in its own ``__all__``)
_LAZY = {
    "DTMC": "agentguard.predictive",
    "DTMCLearner": "agentguard.predictive",
    "PolicyBinding": "agentguard.policies",
    "ProactiveGuard": "agentguard.predictive",
    "ProductGuard": "agentguard.predictive",
    "SafetyFilter": "agentguard.control",
    "Sequences": "agentguard.calibration",
    "ThresholdCalibrator": "agentguard.calibration",
    "ThresholdMonitor": "agentguard.calibration",
    "ToolCallGuard": "agentguard.policies",
    "check": "agentguard.predictive",
    "check_guard": "agentguard.testing",
    "load_dtmc": "agentguard.predictive",
    "load_policy": "agentguard.policies",
}

__all__ = [
    "AgentGuardError",
    "BaseGuard",
    "Context",
    "DTMC",
    "DTMCLearner",
    "Decision",
    "DependencyError",
    "GuaranteeError",
    "Guard",
    "GuardError",
    "GuardStack",
    "GuardTimeout",
    "InputError",
    "LifecycleError",
    "ModelError",
    "Outcome",
    "ParseError",
    "Pipeline",
    "PolicyBinding",
    "PolicyError",
    "ProactiveGuard",
    "ProductGuard",
    "RunMemory",
    "SafetyFilter",
    "Sequences",
    "Step",
    "ThresholdCalibrator",
    "ThresholdMonitor",
    "ToolCall",
    "ToolCallGuard",
    "Trace",
    "Verdict",
    "__version__",
    "check",
    "check_guard",
    "fail_closed",
    "load_dtmc",
    "load_policy",
    "read_traces",
    "write_traces",
]


_exports = LazyExports(__name__, _LAZY, globals())


def __getattr__(name: str) -> Any:
    return _exports.attr(name)


def __dir__() -> list[str]:
    return _exports.dir()
