"""Typed state columns for Parquet traces: states stored as Arrow structs, not JSON text (issue 32).

Why: measured on the 600-byte microwave states of ``benchmarks/learn_engines.py`` (one 65,536-row
batch, one thread, load 1.5), reading the JSON-text ``state`` column from Parquet costs 0.3 s per
10^5 rows (zstd over 60 MB of text) and DuckDB's ``json_transform`` of the used fields 0.37 s per
batch, the lexical exactness guard 0.2 s and the duplicate-key count 0.42 s: the JSON text alone
caps any learner near 3e5 steps/s per core. A typed column is read by Parquet's column projection
(only the leaves the predicates name), needs no parse, and has no duplicate key or lexical question.

Format (``state_typed``, beside the text column ``state``): a struct column whose type is inferred
from a sample of the states (:func:`infer_state_type`). A state is stored typed only when it
round-trips exactly (:func:`fits`): a JSON object; every value's JSON type matches the inferred
one (``bool``, ``int`` within int64, ``float``, ``str``, list, object); **no ``null`` as an object
member** (Arrow cannot tell a null member from a missing one, so a null member means *absent* in
the typed column; list elements may be ``null``); members in an order compatible with the inferred
field order (so the rebuilt object has the same key order). Every other state stays as JSON text in
``state`` (and ``state_typed`` is null): readers treat those rows as before. :func:`typed_values`
rebuilds the Python objects ``orjson.loads`` gives for the original text, key order included
(property-tested byte for byte); duplicate keys were resolved at write time by the same
``orjson.loads`` the row learner uses (the last one wins).

:func:`~.trace_stream.write_typed_parquet` converts JSON-text Parquet traces (the service's schema)
to this form; ``agentguard.server.traces.write_parquet(..., typed=True)`` writes it directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core.errors import require

__all__ = ["STATE_TYPED", "fits", "infer_state_type", "type_table", "typed_values"]

STATE_TYPED = "state_typed"
_INT64 = 2**63


class _Shape:
    """What the sample holds at one place: how often each JSON kind, list elements, object members
    (and the keys seen after each one, for the field order)."""

    def __init__(self) -> None:
        self.kinds: dict[str, int] = {}
        self.elem: _Shape | None = None
        self.members: dict[str, _Shape] = {}
        self.after: dict[str, set[str]] = {}
        self.seen: list[str] = []

    def kind(self) -> str:
        """The most frequent kind (the first seen on a tie): states holding another stay text."""
        return max(self.kinds, key=lambda k: self.kinds[k]) if self.kinds else "null"


def _kind(v: Any) -> str:
    t = type(v)
    k = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}.get(t, "bad")
    return "bad" if k == "int" and not -_INT64 <= v < _INT64 else k


def _merge(shape: _Shape | None, v: Any) -> _Shape:
    shape = shape or _Shape()
    k = _kind(v)
    shape.kinds[k] = shape.kinds.get(k, 0) + 1
    if k == "list":
        for x in v:
            if x is not None:
                shape.elem = _merge(shape.elem, x)
    elif k == "dict":
        keys = [key for key, x in v.items() if x is not None]
        for i, key in enumerate(keys):
            if key not in shape.members:
                shape.seen.append(key)
                shape.after[key] = set()
            shape.members[key] = _merge(shape.members.get(key), v[key])
            shape.after[key].update(keys[i + 1:])
    return shape


def _order(shape: _Shape) -> list[str] | None:
    """A field order in which every sampled object's keys appear in order (Kahn, first seen first)."""
    indeg = {k: 0 for k in shape.seen}
    for k in shape.seen:
        for j in shape.after[k]:
            indeg[j] += 1
    out: list[str] = []
    ready = [k for k in shape.seen if indeg[k] == 0]
    while ready:
        k = ready.pop(0)
        out.append(k)
        for j in sorted(shape.after[k], key=shape.seen.index):
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
        ready.sort(key=shape.seen.index)
    return out if len(out) == len(shape.seen) else None


def _arrow(shape: _Shape | None) -> Any:
    pa = require("pyarrow", "server")
    if shape is None:
        return pa.null()
    kind = shape.kind()
    simple = {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64(), "str": pa.string()}
    if kind in simple:
        return simple[kind]
    if kind == "list":
        elem = _arrow(shape.elem)
        return None if elem is None else pa.list_(elem)
    if kind == "dict":
        order = _order(shape)
        if order is None:
            return None
        fields = [(k, _arrow(shape.members[k])) for k in order]
        kept = [pa.field(k, t) for k, t in fields if t is not None]
        return pa.struct(kept) if kept else None  # Parquet stores no empty struct
    return None


def infer_state_type(states: Iterable[Any]) -> Any:
    """The Arrow struct type of ``states`` (parsed JSON objects), or None when there is none: the
    union of their members, each with its most frequent JSON type in the sample (states holding
    another type there stay text); members whose keys come in no common order are left out."""
    shape: _Shape | None = None
    for s in states:
        if isinstance(s, dict):
            shape = _merge(shape, s)
    if shape is None:
        return None
    return _arrow(shape)


def fits(value: Any, typ: Any) -> bool:
    """Whether ``value`` (a parsed JSON value) is stored exactly by an Arrow column of type ``typ``
    (see the module docstring)."""
    pa = require("pyarrow", "server")
    t = type(value)
    if pa.types.is_struct(typ):
        if t is not dict:
            return False
        pos = -1
        for key, v in value.items():
            i = typ.get_field_index(key) if isinstance(key, str) else -1
            if i <= pos or v is None or not fits(v, typ.field(i).type):
                return False
            pos = i
        return True
    if pa.types.is_list(typ):
        return t is list and all(x is None or fits(x, typ.value_type) for x in value)
    if pa.types.is_boolean(typ):
        return t is bool
    if pa.types.is_int64(typ):
        return t is int and -_INT64 <= value < _INT64
    if pa.types.is_float64(typ):
        return t is float
    if pa.types.is_string(typ):
        return t is str
    return False  # pa.null(): only lists of nulls, handled above


def _strip(v: Any) -> Any:
    if type(v) is dict:
        return {k: _strip(x) for k, x in v.items() if x is not None}
    if type(v) is list:
        return [None if x is None else _strip(x) for x in v]
    return v


def typed_values(arr: Any) -> list[Any]:
    """The Python objects of a typed state column (null struct members dropped: they were absent);
    a null row gives None."""
    return [None if v is None else _strip(v) for v in arr.to_pylist()]


def type_table(table: Any, typ: Any = None, sample: int = 10_000) -> tuple[Any, int]:
    """``table`` (with a JSON-text ``state`` column) with ``state_typed`` added and ``state`` kept
    only where the state does not fit; ``typ``: the struct type (default: inferred from the first
    ``sample`` states). Returns the table and the number of typed rows (0: the table as it was)."""
    pa = require("pyarrow", "server")
    loads = _loads()
    texts = table.column("state").to_pylist()
    parsed: list[Any] = []
    for text in texts:
        try:
            parsed.append(loads(text) if text is not None else None)
        except ValueError:
            parsed.append(_BAD)
    if typ is None:
        typ = infer_state_type(v for v in parsed[:sample] if v is not _BAD)
    if typ is None:
        return table, 0
    typed = [v if v is not None and v is not _BAD and fits(v, typ) else None for v in parsed]
    keep = [None if v is not None else t for v, t in zip(typed, texts)]
    table = table.set_column(table.schema.get_field_index("state"), "state", pa.array(keep, pa.string()))
    return table.append_column(STATE_TYPED, pa.array(typed, typ)), sum(v is not None for v in typed)


_BAD = object()


def _loads() -> Any:
    """The row learner's JSON reader (``trace_stream._loads``: orjson, else json)."""
    try:
        import orjson

        return orjson.loads
    except ImportError:  # pragma: no cover - orjson is in the server extra
        import json

        return json.loads
