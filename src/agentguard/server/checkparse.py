"""The fast reader of a ``POST /v1/check`` body: :func:`read_check`, the same answer as the strict reader and the
pydantic model (:func:`.jsonutil.loads_request`, then :class:`.models.CheckRequest`) at a fraction of the cost, or
None where it cannot be sure (the caller then takes the full path, which gives the error).

Guarantee: for every body, :func:`read_check` either returns None or returns exactly the values the full path
gives (the run id, the tool call's name, arguments and call id, the metadata: equal values of equal types), and it
returns values only for a body the full path accepts (``tests/server/test_checkparse.py`` checks both over generated
bodies against the full path). How:

- the JSON is parsed by orjson (when installed), then accepted only if the strict reader would read it alike: every
  object key unique (the values a walk of the result finds equal :func:`.jsonutil.count_values` of the text: a
  repeated key collapses two members into one), nesting no deeper than :data:`.jsonutil.MAX_DEPTH`, no float that
  could be an integer orjson widened (it reads an integer beyond 64 bits as a double: any float of magnitude
  ``>= 2**63`` sends the body to the full path), and at most ``max_values`` values. orjson itself refuses what the
  strict reader refuses otherwise (``NaN``, ``1e999``, lone surrogates, bytes that are not UTF-8, a BOM, control
  characters in strings): a body it refuses goes to the full path;
- the fields are checked as the model checks them: only the known keys, a ``run_id`` matching
  :data:`.models.RUN_ID_PATTERN` (default ``"default"``), a ``tool_call`` object with a ``name`` of 1-256
  characters, ``arguments`` an object, ``call_id`` and ``id`` (its alias) strings of at most 256 characters that
  agree, ``metadata`` an object. Anything else goes to the full path.
"""

from __future__ import annotations

import re
from typing import Any

from .jsonutil import MAX_DEPTH, _orjson, count_values

_loads: Any = _orjson.loads if _orjson is not None else None

__all__ = ["CheckBody", "read_check"]

#: (run_id, tool name, arguments, call_id, metadata)
CheckBody = tuple[str, str, dict[str, Any], str, dict[str, Any]]

_RUN_ID = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")  # models.RUN_ID_PATTERN, whole string (no "$" before a newline)
_TOP = frozenset({"run_id", "tool_call", "metadata"})
_CALL = frozenset({"name", "arguments", "call_id", "id"})
_WIDE = float(2**63)  # orjson reads an integer beyond 64 bits as a double of at least this magnitude


def _values(obj: Any, depth: int) -> int:
    """How many JSON values ``obj`` holds (itself included); -1 when it nests deeper than MAX_DEPTH or holds a
    float that may be a widened integer."""
    t = type(obj)
    if t is dict or t is list:
        if depth >= MAX_DEPTH:
            return -1
        n = 1
        for v in (obj.values() if t is dict else obj):
            tv = type(v)
            if tv is dict or tv is list:
                got = _values(v, depth + 1)
                if got < 0:
                    return -1
                n += got
            else:
                if tv is float and not -_WIDE < v < _WIDE:
                    return -1
                n += 1
        return n
    if t is float and not -_WIDE < obj < _WIDE:
        return -1
    return 1


def _parsed(raw: bytes, max_values: int) -> Any:
    if _loads is None:
        return None
    try:
        data = _loads(raw)
    except ValueError:
        return None
    n = _values(data, 0)
    if n < 0 or n > max_values or n != count_values(raw):
        return None
    return data


def read_check(raw: bytes, max_values: int) -> CheckBody | None:
    """The fields of the check body ``raw``, or None: let the full path read it (see the module docstring)."""
    d = _parsed(raw, max_values)
    if type(d) is not dict or "tool_call" not in d or not d.keys() <= _TOP:
        return None
    run_id = d.get("run_id", "default")
    tc = d["tool_call"]
    metadata = d.get("metadata", {})
    if type(run_id) is not str or _RUN_ID.fullmatch(run_id) is None or type(tc) is not dict \
            or type(metadata) is not dict or not tc.keys() <= _CALL:
        return None
    name = tc.get("name")
    arguments = tc.get("arguments", {})
    call_id = tc.get("call_id", "")
    alias = tc.get("id")
    if type(name) is not str or not 1 <= len(name) <= 256 or type(arguments) is not dict \
            or type(call_id) is not str or len(call_id) > 256:
        return None
    if alias is not None:
        if type(alias) is not str or len(alias) > 256 or (call_id and call_id != alias):
            return None
        call_id = alias
    return run_id, name, arguments, call_id, metadata
