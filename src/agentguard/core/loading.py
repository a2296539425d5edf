"""``module:attr`` import paths, read one way everywhere (configuration factories, extractors,
scorers, fallback policies).

The standard library's :func:`pkgutil.resolve_name` does the resolving (it accepts ``pkg.mod:attr``
and dotted attributes after the colon); this wrapper only adds the one-line error the configuration
files promise and refuses the colon-less form, so a typo is not read as a module path.
"""

from __future__ import annotations

import pkgutil
from typing import Any

from .errors import InputError

__all__ = ["load_attr"]


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
