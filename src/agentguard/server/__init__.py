"""agentguard.server: the guard service (``agentguard serve``), its audit store and trace store.

Imported lazily (FastAPI, SQLAlchemy and pyarrow come with the ``server`` extra), so ``import
agentguard`` and the command line stay fast::

    from agentguard.server import ServerSettings, create_app, load_traces
"""

from __future__ import annotations

import importlib
from typing import Any

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
    "AuditStore": "audit",
    "GuardServiceClient": "client",
    "GuardSource": "guards",
    "RemoteGuard": "client",
    "ServerSettings": "settings",
    "ServiceGuards": "guards",
    "TraceStore": "traces",
    "create_app": "app",
    "default_guards": "guards",
    "load_settings": "settings",
    "load_traces": "traces",
}


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'agentguard.server' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{mod}", __name__), name)
