"""JSON for the service: orjson when installed (fast path), the standard library otherwise.

``dumps`` returns bytes; ``sort_keys=True`` gives the canonical form used for input digests.
Only JSON is ever parsed from clients: nothing a client sends is evaluated or unpickled.
Request bodies go through :func:`loads_request`, which refuses what JSON parsers usually let pass:
a key that appears twice in one object (``{"command": "rm -rf /", "command": "ls"}``: the parser
would keep the last, a checker upstream may have read the first), ``NaN``/``Infinity`` literals, text
that is not UTF-8, nesting deeper than :data:`MAX_DEPTH`, numbers that overflow to infinity (``1e999``:
Python's ``json`` reads it as ``inf`` and orjson writes ``inf`` back as ``null``, so ``1e999``, ``-1e999`` and
``null`` would share a digest and a stored payload would lose the value) and strings or keys holding a lone
UTF-16 surrogate (``"\\ud800"``: not encodable as UTF-8, so two different inputs could be stored alike).

:func:`canonical` is the one encoding digests are taken over (see its docstring for why it cannot collide).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..core.strict_json import StrictJSONError, loads_strict

__all__ = ["HAVE_ORJSON", "MAX_DEPTH", "RequestJSONError", "canonical", "check_value_count", "check_values",
           "count_values", "dumps", "loads", "loads_request"]

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


_NUMPY = _orjson.OPT_SERIALIZE_NUMPY if _orjson is not None else 0
_SORTED = _NUMPY | _orjson.OPT_SORT_KEYS if _orjson is not None else 0


def dumps(obj: Any, *, sort_keys: bool = False) -> bytes:
    if _orjson is not None:
        try:
            return _orjson.dumps(obj, default=_default, option=_SORTED if sort_keys else _NUMPY)
        except TypeError:  # e.g. non-str dict keys: fall back to the standard library
            pass
    return json.dumps(obj, default=_default, sort_keys=sort_keys, separators=(",", ":")).encode()


def loads(data: bytes | str) -> Any:
    if _orjson is not None:
        return _orjson.loads(data)
    return json.loads(data)


class RequestJSONError(ValueError):
    """A request body that is not acceptable JSON (the message says why, in one line)."""


def _where(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{str(p)[:40]}" for p in path).lstrip(".") or "body"


def _bad_str(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_values(obj: Any, path: tuple[Any, ...] = ()) -> None:
    """Refuse (:class:`RequestJSONError`, one line naming where) a float that is not finite (``1e999``
    overflows to ``inf``; NaN/Infinity literals are refused by the parser already) and a string or object
    key holding a lone surrogate. Walks the parsed value once (a body is at most ``max_body_bytes``)."""
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise RequestJSONError(f"number at {_where(path)} is out of range (overflows to {obj!r}): "
                                   "numbers must be finite doubles")
    elif isinstance(obj, str):
        if _bad_str(obj):
            raise RequestJSONError(f"string at {_where(path)} holds a lone UTF-16 surrogate (not Unicode text)")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str) and _bad_str(k):
                raise RequestJSONError(f"a key at {_where(path)} holds a lone UTF-16 surrogate (not Unicode text)")
            check_values(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            check_values(v, (*path, i))


def _canon_default(obj: Any) -> Any:
    # Only reached for values that are not JSON (a library guard's own record): tagged, so a converted
    # value can never encode like a JSON string or array of the same text.
    if hasattr(obj, "to_dict"):
        return {"$agentguard.object": type(obj).__name__, "value": obj.to_dict()}
    if hasattr(obj, "tolist"):
        return {"$agentguard.array": obj.tolist()}
    if isinstance(obj, (set, frozenset)):
        return {"$agentguard.set": sorted(repr(x) for x in obj)}
    return {"$agentguard.repr": repr(obj)}


def canonical(obj: Any) -> bytes:
    """The canonical encoding of a JSON value: UTF-8 JSON with object keys sorted (by code point),
    no whitespace, strings as themselves (``ensure_ascii=False``), integers in full, floats as Python's
    shortest round-tripping ``repr`` (always with a ``.`` or an exponent, so ``1`` and ``1.0`` differ),
    ``true``/``false``/``null``.

    Why it cannot collide: for every JSON value ``v`` the standard parser reads it back exactly,
    types included (``json.loads(canonical(v))`` is ``v``: an int stays an int of the same value, a
    float the same double, ``-0.0`` stays ``-0.0``), so two values with one encoding are the same value.
    That holds only for finite floats and Unicode strings, which is why they are refused here (and at
    the request boundary by :func:`check_values`) rather than written as ``null`` as orjson would.
    (A test checks the round trip with hypothesis over arbitrary JSON.)

    Why not RFC 8785 (JCS, the ``rfc8785`` package): JCS reads every number as an IEEE double, so
    ``2**53 + 1`` and ``2**53`` (or ``1`` and ``1.0``) are one number to it, and it refuses integers
    beyond 2**53; the guards see the Python values exactly, so the digest that binds an approval to a
    call must tell them apart. Tuples are encoded as arrays (they never come from JSON).

    The refusal needs no walk of its own (the hot path digests every decided input): ``allow_nan=False``
    raises on a non-finite float and the strict UTF-8 encoding raises on a lone surrogate, both as
    :class:`RequestJSONError`.

    A value of plain JSON types (dicts with string keys, lists, strings, integers, booleans, None, finite floats:
    :func:`_plain`) is encoded by orjson, whose output for such values is byte for byte the standard library's
    (strings escaped alike for every code point, keys sorted by code point; a test compares the two over generated
    values); a float is put in as a raw fragment written by ``float.__repr__`` as the standard library writes it
    (``1e+16``, ``1e-07``: not orjson's own form). Any other type, a non-finite float, a lone surrogate or an
    integer beyond 64 bits (orjson refuses the last two) takes the standard library's encoding. The service hashes
    every decided input and every chained record with it (:func:`.chain.record_hash`): one encoder, one fast path."""
    ready = _plain(obj, 0) if _orjson is not None else _NOT_PLAIN
    if ready is not _NOT_PLAIN:
        try:
            return _orjson.dumps(ready, option=_orjson.OPT_SORT_KEYS)
        except TypeError:  # orjson.JSONEncodeError: a lone surrogate, an integer beyond 64 bits, too deep
            pass
    return _canonical_json(obj)


_NOT_PLAIN: Any = object()
_Fragment: Any = getattr(_orjson, "Fragment", None)  # orjson >= 3.10: raw JSON put in as it is


def _float(v: float) -> Any:
    """A finite float as the standard library writes it (a raw orjson fragment), else _NOT_PLAIN."""
    return _Fragment(float.__repr__(v)) if _Fragment is not None and v - v == 0.0 else _NOT_PLAIN  # inf-inf is nan


def _plain(obj: Any, depth: int) -> Any:
    """``obj`` ready for orjson (floats as :func:`_float` fragments; a container copied only where it holds one),
    or _NOT_PLAIN unless it holds only dicts with string keys, lists, strings, integers, booleans, None and finite
    floats (exact types), nested at most 64 deep."""
    t = type(obj)
    if t is str or t is int or t is bool or obj is None:
        return obj
    if t is float:
        return _float(obj)
    if depth > 64 or (t is not dict and t is not list):
        return _NOT_PLAIN
    out: Any = None
    items = obj.items() if t is dict else enumerate(obj)
    for k, v in items:
        if t is dict and type(k) is not str:
            return _NOT_PLAIN
        tv = type(v)
        if tv is str or tv is int or tv is bool or v is None:
            continue
        r = _float(v) if tv is float else _plain(v, depth + 1) if tv is dict or tv is list else _NOT_PLAIN
        if r is _NOT_PLAIN:
            return _NOT_PLAIN
        if r is not v:
            if out is None:
                out = dict(obj) if t is dict else list(obj)
            out[k] = r
    return obj if out is None else out


def _canonical_json(obj: Any) -> bytes:
    """:func:`canonical` by the standard library (the reference encoding)."""
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                          default=_canon_default).encode("utf-8")
    except ValueError as exc:  # a non-finite float (allow_nan=False) inside a non-JSON value
        raise RequestJSONError(f"not canonical JSON: {exc}") from None
    except TypeError:  # keys that are not strings (a library record): sorted by their repr
        try:
            return json.dumps(_str_keys(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              allow_nan=False, default=_canon_default).encode("utf-8")
        except ValueError as exc:
            raise RequestJSONError(f"not canonical JSON: {exc}") from None


def _str_keys(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {"$agentguard.map": sorted(([repr(k) if not isinstance(k, str) else k, _str_keys(v)]
                                           for k, v in obj.items()), key=lambda kv: kv[0])}
    if isinstance(obj, (list, tuple)):
        return [_str_keys(v) for v in obj]
    return obj


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string (escapes included), unrolled: no backtracking
_EMPTY = re.compile(rb"\[[ \t\r\n]*\]|\{[ \t\r\n]*\}")


def count_values(raw: bytes) -> int:
    """The number of JSON values in ``raw`` (a document :func:`loads_request` accepted: every array element and
    object member value, and the root), from its text in three C-speed passes: strings blanked, then
    ``1 + commas + non-empty containers`` (a container of k >= 1 elements holds k - 1 commas). Exact for valid
    JSON; it bounds the work every later walk of the value does (snapshots, digests, guards)."""
    text = _STRING.sub(b'""', bytes(raw))
    containers = text.count(b"[") + text.count(b"{")
    return 1 + text.count(b",") + containers - len(_EMPTY.findall(text))


def check_value_count(raw: bytes, limit: int) -> None:
    """:class:`RequestJSONError` when the document ``raw`` holds more than ``limit`` JSON values; free below
    ``limit`` bytes (every value takes at least one byte). Asked before parsing: on text that is not valid JSON the
    count is only an estimate, and such a body is refused either way."""
    if len(raw) > limit and (n := count_values(raw)) > limit:
        raise RequestJSONError(f"body holds {n} JSON values, more than the {limit} a decision request may hold "
                               "(max_json_values)")


def loads_request(raw: bytes) -> Any:
    """Parse a request body strictly (:func:`agentguard.core.strict_json.loads_strict`, the one strict
    reader); :class:`RequestJSONError` (one-line message) when it is not UTF-8 JSON, repeats a key in an
    object, uses ``NaN``/``Infinity``, nests deeper than MAX_DEPTH, or holds a number that overflows
    (``1e999``) or a lone surrogate (the strict reader refuses each; :func:`check_values` is the same
    refusal for a value parsed elsewhere)."""
    try:
        data = loads_strict(raw, MAX_DEPTH)
    except StrictJSONError as exc:
        msg = str(exc)
        raise RequestJSONError("body is " + msg if msg.startswith("not UTF-8") else msg) from None
    return data
