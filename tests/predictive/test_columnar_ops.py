"""Python's value semantics over JSON-text leaves, operation by operation, against Python itself."""

from __future__ import annotations

import ast
import json

import numpy as np
import pyarrow as pa
import pytest

from agentguard.predictive.columnar_ops import (BOO, ERR, NUL, UNC, Unsupported, _combine, _const_in, _decode,
                                                 _eq_const, _order_const, _truth)

VALUES = [True, False, 0, 1, -0.0, 0.5, 2, "", "on", "é", [], ["on"], ["o,n"], {}, {"a": 1}, None]


def _leaves(values: list) -> pa.Array:
    """What DuckDB writes: compact JSON, the null sentinel for null, SQL NULL for a missing field."""
    return pa.array([None if v is ... else ('"\\u0000"' if v is None else json.dumps(v, separators=(",", ":"),
                                                                                  ensure_ascii=False))
                     for v in values], pa.string())


def _python(fn, *args):
    try:
        return fn(*args)
    except TypeError:
        return TypeError


@pytest.mark.parametrize("c", [1, True, 0.5, "on", None, 0])
def test_equality_and_order_follow_python(c) -> None:
    v = _decode(_leaves(VALUES))
    eq = _eq_const(v, c)
    assert [bool(x) for x in eq.num] == [x == c for x in VALUES]
    if c is None:
        with pytest.raises(Unsupported):
            _order_const(v, ast.Lt, c)
        return
    lt = _order_const(v, ast.Lt, c)
    want = [_python(lambda a: a < c, x) for x in VALUES]
    for x, k, num, w in zip(VALUES, lt.kind, lt.num, want):
        # a null ordered against a constant is an absence (ERR: the row path's missing field); any other
        # TypeError is uncertain, so the row path decides it (and fails closed: it propagates)
        assert (k == (ERR if x is None else UNC)) if w is TypeError else (k == BOO and bool(num) == w)


def test_truthiness_membership_and_missing_fields() -> None:
    vals = [*VALUES, ...]
    v = _decode(_leaves(vals))
    t, err, unc = _truth(v)
    assert list(t[:-1]) == [bool(x) for x in VALUES] and err[-1] and not unc.any()
    assert v.kind[VALUES.index(None)] == NUL
    got = _const_in("on", v)
    for x, k, num in zip(vals, got.kind, got.num):
        if x is ...:
            assert k == ERR
        elif isinstance(x, dict):
            assert k == UNC  # key membership is left to the row path
        else:
            w = _python(lambda a: "on" in a if a is not None else False, x)
            assert (k == UNC) if w is TypeError else bool(num) == w, x  # a TypeError: the row path decides


def test_and_or_short_circuit_like_python() -> None:
    """`a and b`: b's error never surfaces when a is falsy; `a or b`: when a is truthy."""
    a = _decode(_leaves([False, True, True, 0, 1]))
    b = _decode(_leaves([..., ..., 5, ..., "x"]))
    r = _combine([a, b], is_and=True)
    assert list(r.kind) == [BOO, ERR, BOO, BOO, BOO] and list(r.num[[0, 2, 3, 4]]) == [0, 1, 0, 1]
    r = _combine([a, b], is_and=False)
    assert list(r.kind) == [ERR, BOO, BOO, ERR, BOO] and np.all(r.num[[1, 2, 4]] == 1)
