"""The one exception tree of agentguard.

Every error the package raises on purpose derives from :class:`AgentGuardError`, so a caller can
catch one type. Messages are one line and name what is wrong; the command line prints them as
``error: <message>`` and exits non-zero instead of showing a traceback.

    AgentGuardError
    +-- InputError            bad input from a user: a file, an argument, a trace
    |   +-- ParseError        text that does not parse (PRISM, property, policy, observation)
    |   +-- ModelError        an ill-formed model (rows not summing to 1, unknown labels/states)
    +-- LifecycleError        methods called out of order (monitor before calibrate)
    +-- GuaranteeError        a requested statistical guarantee cannot be met with the data given
    +-- GuardError            a guard failed while deciding (the stack turns it into a fail-closed verdict)
    |   +-- GuardTimeout      a guard did not decide in time
    +-- PolicyError           a policy was refused (sandbox) or failed verification
    +-- DependencyError       an optional dependency (stormpy, torch, nagini, ...) is missing
"""

from __future__ import annotations


class AgentGuardError(Exception):
    """Base class of every error agentguard raises on purpose."""


class InputError(AgentGuardError, ValueError):
    """Bad input: a file, an argument, a trace or a state that cannot be used."""


class ParseError(InputError):
    """Text that does not parse (PRISM, a property, a policy, an observation)."""


class ModelError(InputError):
    """An ill-formed model: rows that do not sum to 1, unknown labels or states."""


class LifecycleError(AgentGuardError, RuntimeError):
    """A method was called out of order (for example ``monitor`` before ``calibrate``)."""


class GuaranteeError(AgentGuardError):
    """The requested statistical guarantee cannot be met with the data given."""


class GuardError(AgentGuardError, RuntimeError):
    """A guard failed while deciding; stacks turn this into a fail-closed verdict."""


class GuardTimeout(GuardError, TimeoutError):
    """A guard did not decide within its time limit."""


class PolicyError(AgentGuardError):
    """A policy was refused by the sandbox, failed its tests, or failed verification."""


class DependencyError(AgentGuardError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""


def sole_exception(exc: BaseException) -> BaseException:
    """The one exception inside an exception group of one (nested groups too), else ``exc`` itself: what an
    ``anyio``/``asyncio`` task group wraps is the error to report (``mcp-proxy --http nope`` was ``unexpected
    ExceptionGroup``); a group of several stays the group."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def require(module: str, extra: str):
    """Import an optional dependency lazily, or raise DependencyError naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DependencyError(
            f"optional dependency '{module}' is missing: pip install 'agentguard[{extra}]'"
        ) from exc
