"""``module:attr`` import paths, read one way everywhere (configuration factories, extractors,
scorers, fallback policies).

The standard library's :func:`pkgutil.resolve_name` does the resolving (it accepts ``pkg.mod:attr``
and dotted attributes after the colon); this wrapper only adds the one-line error the configuration
files promise and refuses the colon-less form, so a typo is not read as a module path.

A path that configuration *calls* to build a guard or an extractor goes through :func:`check_factory` too: the
object must declare that it builds one (a class with the methods, or a function annotated to return such a
class). A configuration file is data a user may copy from anywhere; before session 21, ``factory =
"subprocess:run"`` with ``args = ["sh", "-c", "..."]`` ran a command while the file was loaded (the result was
then refused as "not a Guard", too late), and ``extractor = "os:abort"`` ended the process. Importing the module
still runs its top-level code: the modules installed are trusted, the file naming them is not.
"""

from __future__ import annotations

import inspect
import pkgutil
import types
import typing
from typing import Any

from .errors import InputError

__all__ = ["check_factory", "load_attr"]


def load_attr(path: Any, what: str = "object") -> Any:
    """The object named by ``"package.module:attribute"`` (``attribute`` may be dotted).

    Raises :class:`~agentguard.core.errors.InputError` with one line naming ``what`` on a malformed
    path, a module that cannot be imported or a missing attribute.
    """
    if not isinstance(path, str) or path.count(":") != 1 or not all(path.split(":")):
        raise InputError(f"{what} must be 'package.module:attribute', got {path!r}")
    try:
        return pkgutil.resolve_name(path)
    except ImportError as exc:
        raise InputError(f"{what} {path!r}: cannot import {exc.name or path.split(':')[0]!r} ({exc})") from None
    except AttributeError as exc:
        raise InputError(f"{what} {path!r}: no such attribute ({exc})") from None
    except (ValueError, TypeError) as exc:
        raise InputError(f"{what} {path!r}: {exc}") from None


def _has_methods(cls: Any, methods: tuple[str, ...]) -> bool:
    return inspect.isclass(cls) and all(callable(getattr(cls, m, None)) for m in methods)


def check_factory(obj: Any, path: str, what: str, methods: tuple[str, ...]) -> Any:
    """``obj`` (resolved from ``path``) when it is declared to build objects with ``methods``: a class that has
    them, or a Python function (or bound method) whose return annotation is such a class (``-> Guard``, ``->
    MyGuard``); InputError (one line) otherwise: a builtin, a function of the standard library that does something
    else, an unannotated function, a ``functools.partial``. Nothing is called here."""
    if _has_methods(obj, methods):
        return obj
    fn = obj.__func__ if inspect.ismethod(obj) else obj
    if inspect.isfunction(fn):
        try:
            ret = typing.get_type_hints(fn).get("return")
        except Exception:  # noqa: BLE001 - an annotation that does not resolve declares nothing
            ret = None
        members = typing.get_args(ret) if typing.get_origin(ret) in (typing.Union, types.UnionType) else (ret,)
        if all(_has_methods(typing.get_origin(m) or m, methods) for m in members):  # `-> A | B`: each builds one
            return obj
    need = ", ".join(methods)
    raise InputError(f"{what} {path!r} is not declared to build one (a class with {need}, or a function annotated "
                     f"to return one): refused before it is called")
