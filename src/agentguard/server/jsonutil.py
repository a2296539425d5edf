"""JSON for the service: orjson when installed (fast path), the standard library otherwise.

``dumps`` returns bytes; ``sort_keys=True`` gives the canonical form used for input digests.
Only JSON is ever parsed from clients: nothing a client sends is evaluated or unpickled.
Request bodies go through :func:`loads_request`, which refuses what JSON parsers usually let pass:
a key that appears twice in one object (``{"command": "rm -rf /", "command": "ls"}``: the parser
would keep the last, a checker upstream may have read the first), ``NaN``/``Infinity`` literals, text
that is not UTF-8, and nesting deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.strict_json import StrictJSONError, loads_strict

__all__ = ["HAVE_ORJSON", "MAX_DEPTH", "RequestJSONError", "dumps", "loads", "loads_request"]

#: The deepest nesting of objects and arrays a request body may have.
MAX_DEPTH = 64

try:  # pragma: no cover - depends on the environment
    import orjson as _orjson

    HAVE_ORJSON = True
except ImportError:  # pragma: no cover
    _orjson = None  # type: ignore[assignment]
    HAVE_ORJSON = False


def _default(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)


def dumps(obj: Any, *, sort_keys: bool = False) -> bytes:
    if _orjson is not None:
        opt = _orjson.OPT_SERIALIZE_NUMPY | (_orjson.OPT_SORT_KEYS if sort_keys else 0)
        try:
            return _orjson.dumps(obj, default=_default, option=opt)
        except TypeError:  # e.g. non-str dict keys: fall back to the standard library
            pass
    return json.dumps(obj, default=_default, sort_keys=sort_keys, separators=(",", ":")).encode()


def loads(data: bytes | str) -> Any:
    if _orjson is not None:
        return _orjson.loads(data)
    return json.loads(data)


class RequestJSONError(ValueError):
    """A request body that is not acceptable JSON (the message says why, in one line)."""


def loads_request(raw: bytes) -> Any:
    """Parse a request body strictly (:func:`agentguard.core.strict_json.loads_strict`, the one strict
    reader); :class:`RequestJSONError` (one-line message) when it is not UTF-8 JSON, repeats a key in an
    object, uses ``NaN``/``Infinity`` or nests deeper than MAX_DEPTH."""
    try:
        return loads_strict(raw, MAX_DEPTH)
    except StrictJSONError as exc:
        msg = str(exc)
        raise RequestJSONError("body is " + msg if msg.startswith("not UTF-8") else msg) from None
