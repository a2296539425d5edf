"""agentguard.server: the guard service (``agentguard serve``), its audit store and trace store.

Imported lazily (FastAPI, SQLAlchemy and pyarrow come with the ``server`` extra), so ``import
agentguard`` and the command line stay fast::

    from agentguard.server import ServerSettings, create_app, load_traces
"""

from __future__ import annotations

from typing import Any

from ..core.lazy import LazyExports

__all__ = [
    "AuditStore",
    "GuardServiceClient",
    "GuardSource",
    "RemoteGuard",
    "ServerSettings",
    "ServiceGuards",
    "TraceStore",
    "create_app",
    "default_guards",
    "load_settings",
    "load_traces",
]

_WHERE = {
    "AuditStore": ".audit",
    "GuardServiceClient": ".client",
    "GuardSource": ".guards",
    "RemoteGuard": ".client",
    "ServerSettings": ".settings",
    "ServiceGuards": ".guards",
    "TraceStore": ".traces",
    "create_app": ".app",
    "default_guards": ".guards",
    "load_settings": ".settings",
    "load_traces": ".traces",
}


_exports = LazyExports(__name__, _WHERE, globals())


def __getattr__(name: str) -> Any:
    return _exports.attr(name)


def __dir__() -> list[str]:
    return _exports.dir()
