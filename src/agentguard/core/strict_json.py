"""One strict JSON reader for every place JSON enters agentguard (the service, the LiteLLM endpoint,
the MCP proxy, tool-call argument strings).

Python's ``json`` keeps the *last* of two equal keys, so ``{"command": "rm -rf /", "command": "ls"}``
reads as ``ls`` to a guard while another parser downstream may run ``rm -rf /``. :func:`loads_strict`
refuses such input outright, together with ``NaN``/``Infinity`` (not JSON), numbers that overflow to
infinity (``1e999``), strings or keys holding a lone UTF-16 surrogate (``"\\ud800"``: not Unicode text, so
two different inputs could be stored or digested alike), text that is not UTF-8,
and nesting deeper than ``max_depth`` (checked before parsing, so deep input cannot exhaust the stack).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import InputError

__all__ = ["SAFE_INTEGER", "StrictJSONError", "inexact_integer", "loads_strict"]

#: default limit on nested objects/arrays
MAX_DEPTH = 64


class StrictJSONError(InputError):
    """Input that :func:`loads_strict` refuses (the message says why, in one line)."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise StrictJSONError(f"duplicate key {key[:60]!r} in a JSON object")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise StrictJSONError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 reads as inf: one program sees infinity, another null or an error
        raise StrictJSONError(f"number {text[:40]} is out of range (overflows to {value!r})")
    return value


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_float=_finite)
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


#: a lone surrogate can only come from a ``\\uD800``-``\\uDFFF`` escape (or, in ``str`` input, a raw one):
#: text without either needs no walk
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_RAW_SURROGATE = re.compile("[\ud800-\udfff]")


def _where(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{str(p)[:40]}" for p in path).lstrip(".") or "top"


def _no_surrogates(obj: Any, path: tuple[Any, ...] = ()) -> None:
    if isinstance(obj, str):
        if _RAW_SURROGATE.search(obj):
            raise StrictJSONError(f"string at {_where(path)} holds a lone UTF-16 surrogate (not Unicode text)")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if _RAW_SURROGATE.search(k):
                raise StrictJSONError(f"a key at {_where(path)} holds a lone UTF-16 surrogate (not Unicode text)")
            _no_surrogates(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _no_surrogates(v, (*path, i))


def _too_deep(text: str, max_depth: int) -> bool:
    if text.count("[") + text.count("{") <= max_depth:
        return False
    depth = 0
    for ch in _NOT_BRACKETS.sub("", _STRINGS.sub("", text)):
        depth += 1 if ch in "[{" else -1
        if depth > max_depth:
            return True
    return False


def loads_strict(data: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``data`` as JSON, refusing duplicate keys, ``NaN``/``Infinity``, numbers that overflow, lone
    surrogates, non-UTF-8 bytes and nesting deeper than ``max_depth``; every refusal is a
    :class:`StrictJSONError` (an InputError) with a one-line message."""
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StrictJSONError(f"not UTF-8 (byte {exc.start})") from None
    else:
        text = data
    if _too_deep(text, max_depth):
        raise StrictJSONError(f"JSON nested deeper than {max_depth} levels")
    try:
        value = _DECODER.decode(text)
        if _SURROGATE_ESCAPE.search(text) or (text is data and _RAW_SURROGATE.search(text)):
            _no_surrogates(value)
        return value
    except StrictJSONError:
        raise
    except RecursionError:
        raise StrictJSONError(f"JSON nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        raise StrictJSONError(str(exc).split("\n")[0]) from None


#: the largest integer every JSON reader reads exactly (I-JSON, RFC 7493 section 2.2: readers that hold numbers as
#: IEEE 754 doubles, JavaScript's ``JSON.parse`` among them, read ``9007199254740993`` as ``...992``)
SAFE_INTEGER = 2**53 - 1


def inexact_integer(obj: Any, path: tuple[Any, ...] = ()) -> str | None:
    """Where ``obj`` (parsed JSON) holds an integer beyond +-:data:`SAFE_INTEGER`, None when it holds none: Python
    reads such an integer exactly, a double-based reader (a TypeScript MCP server, a JavaScript agent loop behind
    LiteLLM) as a neighbouring number, so a guard that judged ``{"user_id": 9007199254740993}`` would let the tool
    act on user ``9007199254740992``. Callers that forward arguments to another reader refuse them."""
    if isinstance(obj, int) and not isinstance(obj, bool):
        return _where(path) if abs(obj) > SAFE_INTEGER else None
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        where = inexact_integer(v, (*path, k))
        if where is not None:
            return where
    return None
