"""Abstract states of a typed state column (:mod:`.typed_state`), evaluated once per distinct state.

Agent states repeat heavily once only the fields the predicates read are kept: on the microwave
benchmark every 600-byte state is distinct (a per-step ``distance`` float), but its projection to
``objects[].objectType, parentReceptacles, isOpen, isToggled`` takes a few dozen values per
65,536-row batch. So a batch is abstracted in three vectorised steps and one small Python one:

1. Parquet reads only the leaves of ``state_typed`` the predicates name (:func:`typed_columns`;
   from the compiler's analysis in :mod:`.columnar`: the top-level names and, for each quantified
   list, the item fields its condition reads);
2. :func:`encode` gives every row the code of its projected value, exactly (no hashing that may
   collide): primitives by Arrow's dictionary encoding (floats by their bits), structs and lists by
   mixed-radix combination of their children's codes, renumbered densely in order of first
   appearance;
3. one representative row per code is rebuilt as the Python object :func:`~.typed_state.typed_values`
   gives and abstracted by the row path's own ``Abstraction.abstractor()`` (so the semantics are the
   row learner's by construction, not re-implemented), and the codes are mapped back with numpy.

Why the projection is exact: the compiler accepts a spec only when its predicates read the state
by names alone (no ``it``, no attribute or subscript of the state, quantifiers only over a top-level
list), and a name inside a quantifier reads the item's field or else the top-level one; both are
kept, whole. A spec outside that subset reads the whole ``state_typed`` column (still once per
distinct state, just less repetition). A group whose representative raises is marked uncertain, so
its rows go through the row path one by one and raise the row path's error at the row path's row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.errors import InputError, require
from .columnar import ColumnarPlan
from .typed_state import STATE_TYPED, typed_values

__all__ = ["encode", "typed_codes", "typed_columns"]

_RADIX_MAX = 1 << 62
_PAD_LIMIT = 50_000_000  # list elements x rows beyond which lists are keyed in Python


def _wanted(plan: ColumnarPlan) -> tuple[set[str], dict[str, set[str]]] | None:
    if not plan.vectorised:
        return None
    return set(plan.top_names) | set(plan.collections), {c: set(v) for c, v in plan.collections.items()}


def typed_columns(plan: ColumnarPlan, parquet_schema: Any) -> list[str]:
    """The dotted Parquet leaf paths of ``state_typed`` to read for ``plan`` (none: no typed column)."""
    leaves = [tuple(parquet_schema.column(i).path.split(".")) for i in range(len(parquet_schema))]
    leaves = [p for p in leaves if p[0] == STATE_TYPED]
    if not leaves:
        return []
    want = _wanted(plan)
    if want is None:
        return [".".join(p) for p in leaves]
    top, colls = want
    out = []
    for c in {p[1] for p in leaves if len(p) > 1} & top:
        mine = [p for p in leaves if p[1] == c]
        items = [p for p in mine if c in colls and len(p) > 4 and p[4] in colls[c]]
        out += items or mine
    return [".".join(p) for p in (out or leaves[:1])]


def _project(arr: Any, plan: ColumnarPlan) -> Any:
    """The fields the predicates read (whole), items of quantified lists cut to the fields read."""
    pa = require("pyarrow", "server")
    want = _wanted(plan)
    if want is None:
        return arr
    top, colls = want
    kids = arr.flatten()
    names, arrays = [], []
    for f, child in zip(arr.type, kids):
        if f.name not in top:
            continue
        t = f.type
        if f.name in colls and pa.types.is_list(t) and pa.types.is_struct(t.value_type):
            keep = [i for i, g in enumerate(t.value_type) if g.name in colls[f.name]]
            if keep:
                items = child.values
                sub = items.flatten()
                proj = pa.StructArray.from_arrays([sub[i] for i in keep], [t.value_type.field(i).name for i in keep],
                                                  mask=items.is_null())
                child = pa.ListArray.from_arrays(child.offsets, proj, mask=child.is_null())
        names.append(f.name)
        arrays.append(child)
    if not names:
        return None
    return pa.StructArray.from_arrays(arrays, names, mask=arr.is_null())


def _bits(buf: Any, off: int, n: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(buf, np.uint8), bitorder="little")[off:off + n].astype(bool)


def _valid(arr: Any) -> np.ndarray:
    """The validity of an Arrow array as numpy bools (the bitmap unpacked; no per-row conversion)."""
    n = len(arr)
    if arr.null_count == 0:
        return np.ones(n, bool)
    if arr.null_count == n or arr.buffers()[0] is None:
        return ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), bool)
    return _bits(arr.buffers()[0], arr.offset, n)


def _dense(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense codes of int64 keys in order of first appearance (Arrow's hash table: exact)."""
    pa = require("pyarrow", "server")
    pc = require("pyarrow.compute", "server")
    enc = pc.dictionary_encode(pa.array(x, pa.int64()))
    return np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.int64), len(enc.dictionary)


def _combine(cur: np.ndarray, k: int, child: np.ndarray, kc: int) -> tuple[np.ndarray, int]:
    if k * kc >= _RADIX_MAX:
        cur, k = _dense(cur)
    return cur * kc + child, k * kc


def _children(arr: Any) -> list[Any]:
    if arr.offset == 0:  # a parent's null rows are overwritten by the caller: no validity merge needed
        return [arr.field(i) for i in range(arr.type.num_fields)]
    return arr.flatten()


def encode(arr: Any, dense: bool = True) -> tuple[np.ndarray, int]:
    """``(codes, k)``: equal codes exactly for rows of ``arr`` with the same value (nulls share one
    code; floats compare by their bits, so 0.0 and -0.0 differ), in ``0..k-1``; ``dense``: every
    code used, in order of first appearance (else mixed-radix codes, renumbered only before they
    would overflow int64)."""
    pa = require("pyarrow", "server")
    pc = require("pyarrow.compute", "server")
    if hasattr(arr, "combine_chunks"):
        arr = arr.combine_chunks()
    n, t = len(arr), arr.type
    if pa.types.is_null(t) or n == 0:
        return np.zeros(n, np.int64), 1 if n else 0
    valid = _valid(arr)
    k = 0
    if pa.types.is_struct(t):
        cur, k = valid.astype(np.int64), 2
        for child in _children(arr):
            c, kc = encode(child, False)
            cur, k = _combine(cur, k, c, kc)
    elif pa.types.is_list(t):
        offs = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), np.int64)
        lengths = np.where(valid, np.diff(offs), 0)
        top = int(lengths.max()) if n else 0
        if top * n > _PAD_LIMIT:
            return _encode_py(arr)
        c, kc = encode(arr.values, False)
        cur, k = lengths.copy(), top + 1
        last = max(len(c) - 1, 0)
        for j in range(top):  # element j's code + 1, or 0 past a list's end
            e = np.where(lengths > j, c[np.minimum(offs[:-1] + j, last)] + 1, 0) if len(c) else np.zeros(n, np.int64)
            cur, k = _combine(cur, k, e, kc + 1)
    elif pa.types.is_boolean(t):
        cur, k = _bits(arr.buffers()[1], arr.offset, n).view(np.int8).astype(np.int64), 2
    elif pa.types.is_dictionary(t):  # Parquet's dictionary, deduplicated again (it need not be unique)
        d, k = encode(arr.dictionary)
        idx = np.asarray(pc.fill_null(arr.indices, 0).to_numpy(zero_copy_only=False), np.int64)
        cur = d[idx] if d.size else np.zeros(n, np.int64)
    elif pa.types.is_floating(t):
        cur = np.asarray(pc.fill_null(arr, 0.0).to_numpy(zero_copy_only=False), np.float64).view(np.int64).copy()
        dense = True
    else:
        enc = pc.dictionary_encode(arr)
        cur, k = np.asarray(pc.fill_null(enc.indices, 0).to_numpy(zero_copy_only=False), np.int64), len(enc.dictionary)
    if not valid.all():
        cur = np.where(valid, cur + 1, 0)
        k += 1
    if dense or k <= 0:
        return _dense(cur)
    return cur, k


def _encode_py(arr: Any) -> tuple[np.ndarray, int]:
    """Exact keys through Python (long lists only): the JSON of each value, floats by repr."""
    import json

    seen: dict[str, int] = {}
    out = np.empty(len(arr), np.int64)
    for i, v in enumerate(arr.to_pylist()):
        key = json.dumps(v, sort_keys=False, default=str, allow_nan=True)
        out[i] = seen.setdefault(key, len(seen))
    return out, len(seen)


def typed_codes(plan: ColumnarPlan, row: Any, typed: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(codes, uncertain, typed_rows)`` of a ``state_typed`` column: bit codes from the row path's
    ``row`` abstractor on one representative per distinct projected state; ``uncertain`` marks rows
    whose representative raised (the caller runs the row path on them) and rows stored as text."""
    if hasattr(typed, "combine_chunks"):
        typed = typed.combine_chunks()
    n = len(typed)
    valid = _valid(typed)
    proj = _project(typed, plan)
    if proj is None:
        groups, k = valid.astype(np.int64), 2
        first = np.array([int(np.argmin(valid)) if (~valid).any() else 0, int(np.argmax(valid))])
        reps: list[Any] = [None, {}]
    else:
        groups, k = encode(proj)
        m = np.maximum.accumulate(groups)
        first = np.flatnonzero(np.r_[True, m[1:] > m[:-1]]) if n else np.zeros(0, np.int64)
        reps = typed_values(proj.take(first))
    lut = np.zeros(k, np.int64)
    bad = np.zeros(k, bool)
    for g, (state, i) in enumerate(zip(reps, first.tolist())):
        if not valid[i]:
            bad[g] = True
            continue
        try:
            lut[g] = int(row(state), 2)
        except InputError:
            bad[g] = True
    return lut[groups], bad[groups] | ~valid, valid
