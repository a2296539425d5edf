"""Python's value semantics over columns of JSON-text leaves (the evaluator of :mod:`.columnar`).

Each value of a batch is a kind per row (error, null, bool, int, float, str, list, dict, or
*uncertain*: left to the row path), a float for bools and numbers, and for str/list/dict the compact
JSON text DuckDB wrote, held dictionary-encoded (each distinct text once, a code per row), so string
comparisons, membership and substring tests run over the distinct texts only.

The operations follow the compiled closures of :mod:`agentguard.spec.expr` node for node: ``==``
never fails (``True == 1``, ``"1" != 1``), order comparisons across kinds are a TypeError (an
error: ``False`` inside a quantifier, the row path's error at the top), ``and``/``or`` short-circuit
(an error after a decisive operand never happens), ``c in x`` is list membership, a substring test
or ``False`` for ``None``.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import require

__all__ = ["Unsupported"]

ERR, NUL, BOO, INT, FLT, STR, LST, DCT, UNC = range(9)  # value kinds per row
_FLAT_LIST = r'^\[[^\[\]{}\\]*\]$'


class Unsupported(Exception):
    """Raised by the compiler for syntax outside the vectorised subset."""


@dataclass
class _V:
    """One value per row: kind, numeric value (bool/int/float) and, for str/list/dict, the JSON text
    as ``txt[code]`` (``txt``: the distinct texts, a pyarrow string array; ``code == len(txt)``: none)."""

    kind: np.ndarray
    num: np.ndarray
    txt: Any = None
    code: np.ndarray | None = None
    length: np.ndarray | None = None  # byte length of the JSON text

    def take(self, idx: np.ndarray) -> _V:
        if self.txt is None:
            return _V(self.kind[idx], self.num[idx])
        return _V(self.kind[idx], self.num[idx], self.txt, self.code[idx], self.length[idx])  # type: ignore[index]

    def texts(self, fn: Any) -> np.ndarray:
        """``fn`` (pyarrow string array -> bool array) on the distinct texts, spread to the rows."""
        if self.txt is None:
            return np.zeros(self.kind.size, bool)
        res = np.zeros(len(self.txt) + 1, bool)
        if len(self.txt):
            res[:-1] = _np(fn(self.txt))
        return res[self.code]


def _bool(mask: np.ndarray, err: np.ndarray | None = None, unc: np.ndarray | None = None) -> _V:
    kind = np.full(mask.size, BOO, np.int8)
    if err is not None:
        kind[err] = ERR
    if unc is not None:
        kind[unc] = UNC
    return _V(kind, mask.astype(np.float64))


def _np(a: Any) -> np.ndarray:
    """A pyarrow boolean array as a numpy bool array, null -> False (bitmaps unpacked, no copy in Arrow)."""
    if hasattr(a, "combine_chunks"):
        a = a.combine_chunks()
    n, off = len(a), a.offset
    validity, values = a.buffers()[:2]
    out = np.unpackbits(np.frombuffer(values, np.uint8), bitorder="little")[off:off + n].astype(bool)
    if a.null_count:
        out &= np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[off:off + n].astype(bool)
    return out


def _layout(arr: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(valid, first byte, byte length, second byte) of each string of a pyarrow string array."""
    if hasattr(arr, "combine_chunks"):
        arr = arr.combine_chunks()
    n, off = len(arr), arr.offset
    validity, offsets, data = arr.buffers()[:3]
    o = np.frombuffer(offsets, np.int32)[off:off + n + 1]
    length = np.diff(o)
    valid = np.ones(n, bool) if not arr.null_count else \
        np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[off:off + n].astype(bool)
    d = np.frombuffer(data, np.uint8) if data is not None else np.zeros(1, np.uint8)
    first = np.zeros(n, np.uint8)
    second = np.zeros(n, np.uint8)
    has = valid & (length > 1)
    first[has] = d[o[:-1][has]]
    second[has] = d[o[:-1][has] + 1]
    one = valid & (length == 1)
    first[one] = d[o[:-1][one]]
    return valid, first, length, second


def _decode(arr: Any) -> _V:
    """JSON-text leaves as DuckDB writes them (compact; null = the field is missing) -> kinds and values.

    The kind follows from the first byte of valid JSON. No escape can occur but the null sentinel
    ``"\\u0000"``: the lexical guard sends every state with a backslash to the row path, and DuckDB
    escapes only what needed one. Each distinct text is decoded once."""
    pc = require("pyarrow.compute", "server")
    pa = require("pyarrow", "server")
    if hasattr(arr, "combine_chunks"):
        arr = arr.combine_chunks()
    enc = pc.dictionary_encode(arr)
    txt = enc.dictionary
    d = len(txt)
    code = np.asarray(pc.fill_null(enc.indices, d).to_numpy(zero_copy_only=False), np.int64)
    valid, first, length, second = _layout(txt)
    kind = np.full(d + 1, ERR, np.int8)
    num = np.zeros(d + 1, np.float64)
    number = ((first >= ord("0")) & (first <= ord("9"))) | (first == ord("-"))
    for ch, k in (('"', STR), ("[", LST), ("{", DCT), ("n", NUL), ("t", BOO), ("f", BOO)):
        kind[:-1][first == ord(ch)] = k
    num[:-1][first == ord("t")] = 1.0
    kind[:-1][(first == ord('"')) & (second == ord("\\"))] = NUL  # the null sentinel (see ColumnarPlan.sql)
    if number.any():
        kind[:-1][number] = INT
        kind[:-1][number & _np(pc.match_substring_regex(txt, "[.eE]"))] = FLT
        num[:-1][number] = pc.cast(pc.if_else(pa.array(number), txt, "0"), "float64").to_numpy(zero_copy_only=False)[number]
    lengths = np.append(length, 0)
    return _V(kind[code], num[code], txt, code, lengths[code])


def _merge(mask: np.ndarray, a: _V, b: _V) -> _V:
    """``a`` where ``mask`` else ``b``."""
    kind, num = np.where(mask, a.kind, b.kind).astype(np.int8), np.where(mask, a.num, b.num)
    if a.txt is None and b.txt is None:
        return _V(kind, num)
    pa = require("pyarrow", "server")
    empty = pa.array([], pa.string())
    ta, tb = (a.txt if a.txt is not None else empty), (b.txt if b.txt is not None else empty)
    da, db = len(ta), len(tb)
    ca = a.code if a.code is not None else np.full(kind.size, da)
    cb = b.code if b.code is not None else np.full(kind.size, db)
    ca = np.where(ca == da, da + db, ca)
    cb = np.where(cb == db, da + db, cb + da)
    la = a.length if a.length is not None else np.zeros(kind.size, np.int64)
    lb = b.length if b.length is not None else np.zeros(kind.size, np.int64)
    return _V(kind, num, pa.concat_arrays([ta, tb]), np.where(mask, ca, cb), np.where(mask, la, lb))


def _truth(v: _V) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(truthy, error, uncertain) of Python's ``bool(value)``: a str/list/dict is empty when its
    compact JSON text is two bytes long (``""``, ``[]``, ``{}``)."""
    t = np.zeros(v.kind.size, bool)
    num = (v.kind == BOO) | (v.kind == INT) | (v.kind == FLT)
    t[num] = v.num[num] != 0
    txt = (v.kind == STR) | (v.kind == LST) | (v.kind == DCT)
    if txt.any():
        t[txt] = v.length[txt] > 2  # type: ignore[index]
    return t, v.kind == ERR, v.kind == UNC


def _str_values(txt: Any) -> Any:
    """The values of JSON string texts (no escapes: see :func:`_decode`); other texts give junk that
    the callers mask by kind."""
    pc = require("pyarrow.compute", "server")
    return pc.utf8_slice_codeunits(txt, 1, -1)


def _eq_const(v: _V, c: Any) -> _V:
    """Python ``value == c`` for a constant ``c`` (no error is possible)."""
    pc = require("pyarrow.compute", "server")
    k = v.kind
    if c is None:
        r = k == NUL
    elif isinstance(c, str):
        quoted = json.dumps(c, ensure_ascii=False)
        r = (k == STR) & v.texts(lambda t: pc.equal(t, quoted))
    elif isinstance(c, (bool, int, float)):
        if isinstance(c, int) and abs(c) > 2**53:
            raise Unsupported(f"integer constant {c} beyond 2^53")
        r = ((k == BOO) | (k == INT) | (k == FLT)) & (v.num == float(c))
    else:
        raise Unsupported(f"constant {c!r}")
    return _bool(r, k == ERR, k == UNC)


def _order_const(v: _V, op: Any, c: Any) -> _V:
    """Python ``value <op> c`` for < <= > >= and a constant: TypeError (an error) across kinds."""
    pc = require("pyarrow.compute", "server")
    k = v.kind
    fn = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater, ast.GtE: np.greater_equal}[op]
    if isinstance(c, (bool, int, float)) and not (isinstance(c, int) and abs(c) > 2**53):
        ok = (k == BOO) | (k == INT) | (k == FLT)
        r = ok & fn(v.num, float(c))
    elif isinstance(c, str):
        ok = k == STR
        r = np.zeros(k.size, bool)
        if ok.any():
            name = {ast.Lt: "less", ast.LtE: "less_equal", ast.Gt: "greater", ast.GtE: "greater_equal"}[op]
            r = ok & v.texts(lambda t: getattr(pc, name)(_str_values(t), c))
    else:
        raise Unsupported(f"order comparison with {c!r}")
    # a missing field (ERR) or a null ordered against a constant is an absence (the row path's MissingField: an
    # item that does not satisfy a quantifier's condition); any other kind is a TypeError, which the row path
    # propagates even inside a quantifier: uncertain here, so the row path decides (and refuses) it
    absent = (k == ERR) | (k == NUL)
    return _bool(r, absent, (k == UNC) | (~ok & ~absent))


def _const_in(c: Any, v: _V) -> _V:
    """Python ``c in value`` (the container is the field): list membership, substring, None -> False."""
    pc = require("pyarrow.compute", "server")
    k = v.kind
    r = np.zeros(k.size, bool)
    unc = (k == UNC) | (k == DCT) | (k == BOO) | (k == INT) | (k == FLT)  # `c in 5`: a TypeError the row path raises
    err = k == ERR
    if isinstance(c, str):
        if (k == STR).any():
            r |= (k == STR) & v.texts(lambda t: pc.match_substring(_str_values(t), c))
        # a flat list's compact text holds "c" as an element exactly when [ or , precedes it and , or ]
        # follows, provided c has none of the characters that delimit elements or need escapes
        elem = '"' + _re2_literal(c) + '"' if c.isprintable() and not set(c) & set(',[]"\\') else None
    elif c is None:
        unc |= k == STR  # `None in "text"` is a TypeError: the row path raises it
        elem = None  # a null token is not told from text inside a string lexically
    else:
        raise Unsupported(f"membership of {c!r}")
    lst = k == LST
    if lst.any():
        flat = v.texts(lambda t: pc.match_substring_regex(t, _FLAT_LIST))
        unc |= lst & ~flat
        if elem is None:
            unc |= lst
        else:
            pattern = r"[\[,]" + elem + r"[,\]]"
            r |= lst & flat & v.texts(lambda t: pc.match_substring_regex(t, pattern))
    return _bool(r, err, unc)


def _re2_literal(c: str) -> str:
    return "".join(ch if ch.isalnum() or ord(ch) > 127 else f"\\x{{{ord(ch):02x}}}" for ch in c)


def _combine(parts: list[_V], is_and: bool) -> _V:
    """Python's short-circuit ``and``/``or`` as the compiled closures run it (the result is a bool)."""
    n = parts[0].kind.size
    done = np.zeros(n, bool)
    out = np.full(n, is_and)
    err = np.zeros(n, bool)
    unc = np.zeros(n, bool)
    for i, p in enumerate(parts):
        t, e, u = _truth(p)
        live = ~done
        err |= live & e
        unc |= live & u
        done |= e | u
        stop = live & ~e & ~u & (~t if is_and else t)
        out[stop] = not is_and
        done |= stop
        if i == len(parts) - 1:
            out[live & ~e & ~u & ~stop] = t[live & ~e & ~u & ~stop]
    return _bool(out, err, unc)


def _any_eq(v: _V, vals: list[Any]) -> _V:
    if v.kind.size:
        unhashable = (v.kind == LST) | (v.kind == DCT)
        if unhashable.any():  # a list/dict in a list: Python compares element-wise; not vectorised
            v = _V(np.where(unhashable, UNC, v.kind).astype(np.int8), v.num, v.txt, v.code, v.length)
    r = np.zeros(v.kind.size, bool)
    for c in vals:
        r |= _eq_const(v, c).num != 0
    return _bool(r, v.kind == ERR, v.kind == UNC)


