"""server/jsonutil.py ``canonical``: the orjson encoding it takes for plain values (floats as fragments) is byte for byte the
standard library's reference encoding, over generated values (keys of any code point, integers near and beyond 64
bits, nesting), and the values it leaves to the reference are encoded by it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from agentguard.server.jsonutil import _NOT_PLAIN, RequestJSONError, _canonical_json, _plain, canonical

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
PLAIN = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), TEXT,
              st.sampled_from([2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1])),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(TEXT, c, max_size=4), max_leaves=20)
ANY = st.recursive(st.one_of(PLAIN, st.floats(allow_nan=False, allow_infinity=False)),
                   lambda c: st.lists(c, max_size=3) | st.dictionaries(TEXT, c, max_size=3) | st.tuples(c),
                   max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(v=PLAIN)
def test_plain_values_encode_as_the_reference(v: Any) -> None:
    assert canonical(v) == _canonical_json(v) == json.dumps(v, sort_keys=True, separators=(",", ":"),
                                                             ensure_ascii=False).encode()


@settings(max_examples=100, deadline=None)
@given(v=ANY)
def test_any_value_encodes_as_the_reference(v: Any) -> None:
    assert canonical(v) == _canonical_json(v)


def test_what_orjson_would_write_otherwise_is_left_to_the_reference() -> None:
    assert _plain({"x": 1.0}, 0) is not _NOT_PLAIN and canonical({"x": 1e16, "y": [1e-7]}) == b'{"x":1e+16,"y":[1e-07]}'
    assert all(_plain(v, 0) is _NOT_PLAIN for v in ({1: "a"}, (1,), {"s": {1}}, [float("nan")], {"x": float("inf")}))
    assert canonical({"x": True, "n": None}) == b'{"n":null,"x":true}'
    with pytest.raises(RequestJSONError):
        canonical({"s": "\ud800"})
    with pytest.raises(RequestJSONError):
        canonical([float("inf")])
    deep: Any = []
    for _ in range(80):
        deep = [deep]
    assert _plain(deep, 0) is _NOT_PLAIN and canonical(deep) == _canonical_json(deep)
