"""The columnar engine on typed traces learns the row engine's DTMC from the JSON-text originals
(issue 32): the same generated rows as ``test_columnar_learn`` (runs cut across files and batches,
markers, rows without a run id, adversarial texts: duplicate keys, escapes, a dict for a list, nulls,
invalid JSON, infeasible states), written as JSON-text Parquet, converted by ``write_typed_parquet``
(states that fit go typed, the rest stay text, in the same files), and learned three ways."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.predictive.columnar import compile_columnar
from agentguard.predictive.columnar_typed import encode, typed_columns
from agentguard.predictive.trace_stream import write_typed_parquet
from agentguard.spec.predicates import Abstraction, load_spec

from .test_columnar_learn import ODD_ERR, ROW, SPEC, _learn, _obj, _write, assert_same

# states that fit a typed column (no null member, one type a member) beside the adversarial ones
TYPED_OK = st.builds(
    lambda opened, on, fork_in, food_in, d: {"objects": [
        _obj("Microwave", isOpen=opened, isToggled=on, distance=d),
        _obj("Fork", parentReceptacles=["Microwave"] if fork_in else ["CounterTop"]),
        _obj("Potato", parentReceptacles=["Microwave", "Plate"] if food_in else [])]},
    st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.sampled_from([0.5, 1.25, -0.0, 0.0]))
ROW_T = st.one_of(ROW, st.tuples(st.sampled_from(["r1", "r2", "r3", None]), TYPED_OK, st.booleans()))

# a spec outside the vectorised subset (``it``, len): the typed column is read whole
OTHER = Abstraction.from_dict({"predicates": {"many": "len(objects) > 2",
                                              "micro": "exists(objects, get(it, 'objectType', 0) == 'Microwave')",
                                              "on": "exists(objects, objectType == 'Microwave' and isToggled)"}})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(rows=st.lists(ROW_T, min_size=1, max_size=30), cuts=st.lists(st.integers(0, 40), max_size=3),
       group=st.integers(1, 8), batch=st.sampled_from([1, 3, 1 << 16]),
       bad=st.one_of(st.none(), st.tuples(st.integers(0, 30), ODD_ERR)), other=st.booleans())
def test_typed_columnar_learns_the_row_engines_model(rows: list, cuts: list[int], group: int, batch: int,
                                                     bad: tuple | None, other: bool) -> None:
    ab = OTHER if other else load_spec(SPEC)
    if bad is not None:
        rows = [*rows[: bad[0]], (rows[0][0], bad[1], False), *rows[bad[0]:]]
    with tempfile.TemporaryDirectory() as tmp:
        text, typed = Path(tmp) / "text", Path(tmp) / "typed"
        text.mkdir()
        _write(text, rows, cuts, group)
        write_typed_parquet(text, typed, row_group=group)  # typed rows in 40 of 40 examples when checked
        ref = _learn("rows", text, ab, batch)
        assert_same(ref, _learn("columnar", typed, ab, batch))
        assert_same(ref, _learn("rows", typed, ab, batch))


def test_example_traces_go_typed_and_never_fall_back() -> None:
    from agentguard.predictive.learn import DTMCLearner

    ab = load_spec(SPEC)
    lines = [json.loads(x) for x in (SPEC.parent / "microwave_traces.jsonl").read_text().splitlines() if x.strip()]
    rows = [(d.get("run_id", str(i)), s["state"], False) for i, d in enumerate(lines) for s in d["steps"]]
    with tempfile.TemporaryDirectory() as tmp:
        text, typed = Path(tmp) / "text", Path(tmp) / "typed"
        text.mkdir()
        _write(text, rows, [len(rows) // 3], 500)
        stats = write_typed_parquet(text, typed)
        assert stats["text"] == 0
        a = DTMCLearner(ab, alpha=1).add_file(str(text))
        b = DTMCLearner(ab, alpha=1).add_file(str(typed), engine="columnar")
        assert_same(a, b)
        assert b.last_stats["fallback_rows"] == 0 and b.last_stats["rows"] == len(rows)
        import pyarrow.parquet as pq

        cols = typed_columns(compile_columnar(ab), pq.ParquetFile(next(typed.glob("*.parquet"))).schema)
        assert cols and all(c.startswith("state_typed.objects.list.element.") for c in cols)
        assert not any(c.endswith(("distance", "objectId")) for c in cols)  # never read


VALS = st.recursive(st.one_of(st.none(), st.booleans(), st.sampled_from([0.0, -0.0, 1.0, 1.5]), st.text(max_size=2)),
                    lambda inner: st.lists(inner, max_size=3), max_leaves=6)


@settings(max_examples=100, deadline=None)
@given(items=st.lists(st.fixed_dictionaries({"a": st.one_of(st.none(), st.booleans()),
                                             "b": st.one_of(st.none(), st.lists(st.one_of(st.none(), st.text(max_size=2)),
                                                                                 max_size=3)),
                                             "c": st.one_of(st.none(), st.sampled_from([0.0, -0.0, 2.5]))}),
                      max_size=12))
def test_encode_groups_exactly_the_equal_values(items: list) -> None:
    rows = [None if i % 5 == 4 else {"objects": items[i: i + 3]} for i in range(len(items))]
    arr = pa.array(rows, pa.struct([("objects", pa.list_(pa.struct([("a", pa.bool_()), ("b", pa.list_(pa.string())),
                                                                    ("c", pa.float64())])))]))
    codes, k = encode(arr)
    keys = [json.dumps(v) for v in arr.to_pylist()]  # -0.0 and 0.0 print apart
    first: dict[str, int] = {}
    want = np.array([first.setdefault(key, len(first)) for key in keys], np.int64)
    assert np.array_equal(codes, want) and k == len(first)
