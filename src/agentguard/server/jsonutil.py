"""JSON for the service: orjson when installed (fast path), the standard library otherwise.

``dumps`` returns bytes; ``sort_keys=True`` gives the canonical form used for input digests.
Only JSON is ever parsed from clients: nothing a client sends is evaluated or unpickled.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["HAVE_ORJSON", "dumps", "loads"]

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
