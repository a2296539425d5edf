"""agentguard: keep LLM agents safe while they run.

The top level re-exports the core vocabulary (sorted ``__all__``, enforced by a test). Mechanisms
live in sub-packages (``agentguard.predictive``, ``agentguard.calibration``, ``agentguard.policies``,
``agentguard.control``) and are imported on demand so ``import agentguard`` stays fast.
"""

from .core import (
    AgentGuardError,
    BaseGuard,
    Context,
    Decision,
    DependencyError,
    Enforcement,
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
    PolicyError,
    Step,
    ToolCall,
    Trace,
    Verdict,
    fail_closed,
    read_traces,
    write_traces,
)

__version__ = "0.1.0"

__all__ = [
    "AgentGuardError",
    "BaseGuard",
    "Context",
    "Decision",
    "DependencyError",
    "Enforcement",
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
    "PolicyError",
    "Step",
    "ToolCall",
    "Trace",
    "Verdict",
    "__version__",
    "fail_closed",
    "read_traces",
    "write_traces",
]
