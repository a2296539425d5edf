"""Typed state columns round-trip the parsed JSON exactly, key order included (issue 32)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.predictive.trace_stream import write_typed_parquet
from agentguard.predictive.typed_state import STATE_TYPED, fits, infer_state_type, typed_values

KEYS = st.sampled_from(["a", "b", "objectType", "isOpen", "x y", "é"])
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
                   st.text(max_size=4))
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(KEYS, inner, max_size=4)), max_leaves=12)
STATE = st.dictionaries(KEYS, VALUE, max_size=5)


def _canon(v: object) -> str:
    return json.dumps(v)  # key order, 1 vs 1.0 vs true, -0.0: all kept apart


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states=st.lists(STATE, min_size=1, max_size=8))
def test_a_state_that_fits_comes_back_byte_for_byte(states: list) -> None:
    states = [orjson.loads(json.dumps(s)) for s in states]  # what the row learner reads
    typ = infer_state_type(states)
    if typ is None:
        return
    kept = [s for s in states if fits(s, typ)]
    arr = pa.array(kept, typ)
    assert [_canon(v) for v in typed_values(arr)] == [_canon(s) for s in kept]
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({STATE_TYPED: arr}), buf)
    back = pq.read_table(pa.BufferReader(buf.getvalue())).column(STATE_TYPED)
    assert [_canon(v) for v in typed_values(back)] == [_canon(s) for s in kept]


def test_what_does_not_fit_stays_text() -> None:
    typ = infer_state_type([{"a": 1, "b": [1.5]}, {"a": 2, "c": "x"}])
    assert [f.name for f in typ] == ["a", "b", "c"]
    assert fits({"a": 1, "c": "y"}, typ) and fits({"b": [None, 2.0]}, typ)
    assert not fits({"a": None}, typ)  # a null member would read back as absent
    assert not fits({"a": 1.0}, typ) and not fits({"a": True}, typ)  # types exact
    assert not fits({"c": "y", "a": 1}, typ)  # key order kept
    assert not fits({"a": 2**63}, typ) and not fits({"d": 1}, typ) and not fits([1], typ)
    typ = infer_state_type([{"a": 1}, {"a": "x"}, {"a": "y", "b": None}])  # the most frequent type
    assert str(typ) == "struct<a: string>" and not fits({"a": 1}, typ)


def test_converter_keeps_unfit_rows_as_text_and_resolves_duplicates_as_orjson(tmp_path: Path) -> None:
    texts = ['{"a":1,"b":"x"}', '{"a":1,"a":2}', '{"a":null}', '{bad', None, '{"c":1.5}', '[1]', '{"a":3,"b":"y"}']
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(pa.table({"run_id": ["r"] * len(texts), "step": list(range(len(texts))),
                             "state": pa.array(texts, pa.string())}), src / "000.parquet")
    stats = write_typed_parquet(src, tmp_path / "dst")
    assert stats == {"rows": 8, "typed": 4, "text": 4}
    t = pq.read_table(tmp_path / "dst" / "000.parquet")
    assert t.column("state").to_pylist() == [None, None, '{"a":null}', "{bad", None, None, "[1]", None]
    assert typed_values(t.column(STATE_TYPED)) == [{"a": 1, "b": "x"}, {"a": 2}, None, None, None, {"c": 1.5}, None,
                                                   {"a": 3, "b": "y"}]
    assert json.loads('{"a":1,"a":2}') == orjson.loads('{"a":1,"a":2}') == {"a": 2}
