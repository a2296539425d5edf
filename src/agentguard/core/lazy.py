"""Lazy package exports: a name is imported from its defining module on first access.

A package keeps a literal ``name -> module`` table and two one-line module hooks::

    _exports = LazyExports(__name__, _LAZY, globals())

    def __getattr__(name: str) -> Any:
        return _exports.attr(name)

    def __dir__() -> list[str]:
        return _exports.dir()

so importing the package imports none of the modules behind it (heavy dependencies stay unloaded
until a name that needs them is used).
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping

__all__ = ["LazyExports"]


class LazyExports:
    """The exports of ``package`` served from ``table`` (absolute or package-relative module names);
    a resolved name is stored in ``namespace`` so later lookups skip ``__getattr__``."""

    def __init__(self, package: str, table: Mapping[str, str], namespace: dict[str, Any]) -> None:
        self.package = package
        self.table = table
        self.namespace = namespace

    def attr(self, name: str) -> Any:
        """The exported ``name``; AttributeError when the package does not export it."""
        where = self.table.get(name)
        if where is None:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where, self.package), name)
        self.namespace[name] = value
        return value

    def dir(self) -> list[str]:
        """The package's names: what it holds plus every lazy export."""
        return sorted(set(self.namespace) | set(self.namespace.get("__all__", ())) | set(self.table))
