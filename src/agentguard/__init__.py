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

import sys as _sys
from typing import Any

if _sys.argv[:1] == ["-m"]:  # ``python -m agentguard ...``: Python imports this package while argv[0] is "-m"
    # The import is the command's own: a Ctrl-C during it (about a second) is the command's one line and exit 130,
    # as in the console script (agentguard_entry), not a KeyboardInterrupt traceback. Restored at the end.
    import signal as _signal

    def _aborted(signum: int, frame: Any) -> None:
        _sys.stderr.write("aborted\n")
        raise SystemExit(130)

    _before = _signal.signal(_signal.SIGINT, _aborted)

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

if _sys.argv[:1] == ["-m"] and _signal.getsignal(_signal.SIGINT) is _aborted:
    # the handler it had (Python's default_int_handler for the command; None: one set outside Python, kept as Python's)
    _signal.signal(_signal.SIGINT, _before if _before is not None else _signal.default_int_handler)


def __getattr__(name: str) -> Any:
    return _exports.attr(name)


def __dir__() -> list[str]:
    return _exports.dir()
