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
import re
from typing import Any

__all__ = ["HAVE_ORJSON", "MAX_DEPTH", "RequestJSONError", "dumps", "loads", "loads_request"]

#: The deepest nesting of objects and arrays a request body may have.
MAX_DEPTH = 64

try:  # pragma: no cover - depends on the environment
    import orjson as _orjson

    HAVE_ORJSON = True
except ImportError:  # pragma: no cover
    _orjson = None
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


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise RequestJSONError(f"duplicate key {dup[:60]!r} in a JSON object")
    return d


def _no_constant(name: str) -> Any:
    raise RequestJSONError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constant)


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


def _depth_ok(text: str) -> bool:
    """False when objects and arrays (outside strings) nest deeper than MAX_DEPTH."""
    depth = 0
    for ch in _NOT_BRACKETS.sub("", _STRINGS.sub("", text)):
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return False
        else:
            depth -= 1
    return True


def loads_request(raw: bytes) -> Any:
    """Parse a request body strictly; :class:`RequestJSONError` (one-line message) when it is not
    UTF-8 JSON, repeats a key in an object, uses ``NaN``/``Infinity`` or nests deeper than MAX_DEPTH."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestJSONError(f"body is not UTF-8 (byte {exc.start})") from None
    if text.count("[") + text.count("{") > MAX_DEPTH and not _depth_ok(text):
        raise RequestJSONError(f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return _DECODER.decode(text)
    except RequestJSONError:
        raise
    except RecursionError:
        raise RequestJSONError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise RequestJSONError(str(exc).split("\n")[0]) from None
